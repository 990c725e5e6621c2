package edge

import (
	"bytes"
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
//
// framingProblem checks again, on what fasthttp parsed, what fasthttp lets
// through and the connection's check refuses first: the two stay one rule
// for a request that reaches the handler without the edge's listener.

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
	n, err := c.Conn.Read(p)
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

// What fasthttp lets through that makes a request's framing ambiguous,
// worded as the connection's check words it. fasthttp itself refuses
// duplicate or malformed Content-Length, a repeated or unknown
// Transfer-Encoding, Transfer-Encoding in HTTP/1.0 and bare CR.
var (
	// fasthttp follows Transfer-Encoding and keeps the connection.
	framingBoth = framing.ErrBothLengths.Error()
	// fasthttp ignores "identity" (gone from HTTP/1.1 since RFC 7230).
	framingNotChunked = framing.ErrNotChunked.Error()
	// fasthttp replaces obs-fold with spaces; a proxy may not have.
	framingFold = framing.ErrFold.Error()
	// fasthttp takes a lone LF for CRLF, but only finds the end of the
	// headers at a CRLFCRLF.
	framingBareLF = framing.ErrLineEnding.Error()
	// fasthttp relays a name with a space or any other byte (RFC 9110
	// §5.1: a name is a token); the origin's client then refuses it.
	framingName = framing.ErrFieldName.Error()
)

var (
	keyContentLength    = []byte("content-length")
	keyTransferEncoding = []byte("transfer-encoding")
)

// framingProblem reports what makes the request's framing ambiguous, or "".
// It reads the header block as received (RawHeaders: fasthttp has already
// unfolded lines and dropped Content-Length when Transfer-Encoding is set).
// It allocates nothing.
func framingProblem(h *fasthttp.RequestHeader) string {
	raw := h.RawHeaders()
	var contentLength, transferEncoding bool
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			break
		}
		line := raw[:i]
		raw = raw[i+1:]
		if len(line) == 0 || line[len(line)-1] != '\r' {
			return framingBareLF
		}
		line = line[:len(line)-1]
		if len(line) == 0 {
			break // the blank line ending the headers
		}
		if c := line[0]; c == ' ' || c == '\t' {
			return framingFold
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			return framingName
		}
		switch c := line[0]; {
		case c|0x20 == 'c':
			contentLength = contentLength || isKey(line, keyContentLength)
		case c|0x20 == 't':
			transferEncoding = transferEncoding || isKey(line, keyTransferEncoding)
		}
	}
	switch {
	case transferEncoding && contentLength:
		return framingBoth
	case transferEncoding && h.ContentLength() != -1:
		return framingNotChunked
	}
	return ""
}

// isKey reports whether line is a field named key (lower case), colon
// next.
func isKey(line, key []byte) bool {
	return len(line) > len(key) && line[len(key)] == ':' && bytes.EqualFold(line[:len(key)], key)
}

// isToken reports whether name is an RFC 9110 token.
func isToken(name []byte) bool {
	for _, c := range name {
		if !('a' <= c|0x20 && c|0x20 <= 'z' || '0' <= c && c <= '9' || bytes.IndexByte(tokenMarks, c) >= 0) {
			return false
		}
	}
	return true
}

var tokenMarks = []byte("!#$%&'*+-.^_`|~")

// hasBody reports whether the request declares a body.
func hasBody(h *fasthttp.RequestHeader) bool {
	n := h.ContentLength()
	return n > 0 || n == -1
}
