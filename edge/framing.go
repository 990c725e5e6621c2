package edge

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// What fasthttp lets through that makes a request's framing ambiguous: a
// proxy in front of the edge may have read the same bytes differently, so
// the edge refuses them (400, connection closed) rather than guess. fasthttp
// itself refuses duplicate or malformed Content-Length, a repeated or
// unknown Transfer-Encoding, Transfer-Encoding in HTTP/1.0 and bare CR.
const (
	// RFC 9112 §6.3: a server may reject a message with both, and must
	// close the connection after it. fasthttp follows Transfer-Encoding
	// and keeps the connection.
	framingBoth = "Transfer-Encoding and Content-Length together"
	// RFC 9112 §6.1: chunked is the only transfer coding the edge reads;
	// fasthttp ignores "identity" (gone from HTTP/1.1 since RFC 7230).
	framingNotChunked = "a Transfer-Encoding other than chunked"
	// RFC 9112 §5.2: a server must reject obs-fold or replace it with
	// spaces; fasthttp replaces it, a proxy may not have.
	framingFold = "a header line folded onto the next (obs-fold)"
	// RFC 9112 §2.2: a recipient may take a lone LF for CRLF; fasthttp does,
	// but only finds the end of the headers at a CRLFCRLF.
	framingBareLF = "a header line not ended by CRLF"
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
		switch c := line[0]; {
		case c == ' ' || c == '\t':
			return framingFold
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
// next: fasthttp refuses a space before the colon.
func isKey(line, key []byte) bool {
	return len(line) > len(key) && line[len(key)] == ':' && bytes.EqualFold(line[:len(key)], key)
}

// hasBody reports whether the request declares a body.
func hasBody(h *fasthttp.RequestHeader) bool {
	n := h.ContentLength()
	return n > 0 || n == -1
}
