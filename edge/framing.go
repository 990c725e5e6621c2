package edge

import (
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/framing"
)

// The edge checks the framing of every request on the raw bytes of its
// connection, with the origin's rules (framing.Checker), before fasthttp
// reads them: fasthttp takes a chunk size followed by spaces, and relays a
// header name that is not a token (the origin's client then refuses to
// send it). fasthttp gets the bytes before the first refused one, then a
// read error instead of the rest, which is dropped: in a request's head,
// fasthttp answers through requestError, which names the problem
// (malformed); in a body, the forwarder's read fails and it answers 400
// naming it (forward.Forward). The connection closes either way; nothing
// after the refused byte is read as a request.

// frameCheck is the framing check of one connection.
type frameCheck struct {
	// checker sees every byte read; only Read uses it, and fasthttp
	// reads a connection from one goroutine at a time (the forwarder's
	// reads of a body are serialized by its upload).
	checker framing.Checker
	refused atomic.Pointer[frameRefusal]
}

// frameRefusal is the error a read gets instead of the refused bytes.
type frameRefusal struct {
	reason error
	// pad placeholder bytes come first: fasthttp takes a read error before
	// a request's first byte (or after nothing but CRLFs) for the client
	// leaving, and closes without an answer.
	pad int
}

func (r *frameRefusal) Error() string { return "malformed HTTP request: " + r.reason.Error() }
func (r *frameRefusal) Unwrap() error { return r.reason }

// placeholder stands for a refused request's first byte: fasthttp cannot
// read a request of it, and reads the refusal next.
const placeholder = 'X'

// Read gives fasthttp the bytes of well-framed requests and, once a byte
// is refused, the refusal instead of it and everything after it.
func (c *conn) Read(p []byte) (int, error) {
	if r := c.frame.refused.Load(); r != nil {
		return r.read(p)
	}
	n, err := c.read(p)
	if n > 0 {
		if k, reason := c.frame.checker.Check(p[:n]); reason != nil {
			r := &frameRefusal{reason: reason}
			if !c.frame.checker.Begun() {
				r.pad = 1
			}
			c.frame.refused.Store(r)
			if k == 0 {
				return r.read(p)
			}
			return k, nil // the refusal comes with the next read
		}
	}
	return n, err
}

func (r *frameRefusal) read(p []byte) (int, error) {
	if r.pad > 0 && len(p) > 0 {
		r.pad--
		p[0] = placeholder
		return 1, nil
	}
	return 0, r
}

// MoreFollows(true) holds the next Write back (an answer's headers, which
// fasthttp flushes before a body cache.Body sends): it leaves with the
// Write after it in one writev, or ahead of a sendfile (ReadFrom) with
// MSG_MORE, so that the kernel fills segments with the body.
// MoreFollows(false) writes what is still held, if anything. Only what
// sends such a body calls it, around the flush of the headers.
func (c *conn) MoreFollows(more bool) error {
	c.hold = more
	if more || c.held == nil {
		return nil
	}
	held := c.held
	c.held = nil
	_, err := c.write(held, nil)
	return err
}

// Write writes p: after held bytes in one writev, held itself when
// MoreFollows asked for it.
func (c *conn) Write(p []byte) (int, error) {
	switch {
	case c.hold:
		c.hold, c.held = false, p
		return len(p), nil
	case c.held != nil:
		held := c.held
		c.held = nil
		n, err := c.write(held, p)
		return max(n-len(held), 0), err
	}
	return c.write(p, nil)
}

// read reads from the socket (sock_linux.go) or the connection.
func (c *conn) read(p []byte) (int, error) {
	if c.sock != nil {
		return c.sock.read(p)
	}
	return c.Conn.Read(p)
}

// write writes a then b to the socket in one call, or to the connection
// in two (a connection that is not a Linux TCP socket: tests, other
// systems).
func (c *conn) write(a, b []byte) (int, error) {
	if c.sock != nil {
		return c.sock.write(a, b)
	}
	n, err := c.Conn.Write(a)
	if err != nil || len(b) == 0 {
		return n, err
	}
	m, err := c.Conn.Write(b)
	return n + m, err
}

// sendHeld writes the held bytes with MSG_MORE, ahead of a sendfile.
func (c *conn) sendHeld() error {
	held := c.held
	c.hold, c.held = false, nil
	switch {
	case held == nil:
		return nil
	case c.sock != nil:
		return c.sock.writeMore(held)
	}
	_, err := c.Conn.Write(held)
	return err
}

// FramingError returns why the connection's framing check refused a byte,
// or nil (the forwarder names it when a body read fails).
func (c *conn) FramingError() error {
	if r := c.frame.refused.Load(); r != nil {
		return r.reason
	}
	return nil
}

// malformed is the answer to a request fasthttp could not read: it names
// the framing problem the connection refused, when that is why.
func malformed(ctx *fasthttp.RequestCtx) *apierr.Error {
	if c, ok := ctx.Conn().(*conn); ok {
		if reason := c.FramingError(); reason != nil {
			return apierr.BadRequest("Malformed HTTP request: %v", reason)
		}
	}
	return apierr.BadRequest("Malformed HTTP request")
}

// hasBody reports whether the request declares a body.
func hasBody(h *fasthttp.RequestHeader) bool {
	n := h.ContentLength()
	return n > 0 || n == -1
}
