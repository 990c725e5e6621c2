// Package forward relays a fasthttp request to the origin over HTTP and
// streams the answer back: bodies flow through in both directions without
// being buffered, end-to-end headers are kept and X-Forwarded-* are added.
// A request body the client does not deliver whole, or delivers below the
// minimum rate, is answered 400 or 408 and its connection closed.
package forward
