// Package forward relays a fasthttp request to the origin over HTTP and
// streams the answer back: bodies flow through in both directions without
// being buffered, end-to-end headers are kept and X-Forwarded-* are added.
package forward
