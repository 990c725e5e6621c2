// Package forward relays a fasthttp request to an origin over HTTP and
// streams the answer back: bodies flow through in both directions without
// being buffered, end-to-end headers are kept and X-Forwarded-* are added.
// A request an origin could not take goes to the next one (package origins)
// while none of its body was sent. A request body the client does not
// deliver whole, or delivers below the minimum rate, is answered 400 or 408
// and its connection closed.
package forward
