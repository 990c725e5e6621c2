package apitest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/framing"
)

// The raw-socket table of request framing, run against both tiers (the
// edge's TestMalformedFraming, the origin's TestHostileOriginFraming) and
// against the checker they share (origin/contract/framing).

// SmuggledSecret is the credential of the request hidden after a malformed
// one; it must reach neither a handler nor the logs.
const SmuggledSecret = "c211Z2dsZWQ6aHVudGVyMg"

// SmuggledPath is the path of the smuggled request: a server that routes
// it has read it.
const SmuggledPath = "/v1/smuggled"

// Smuggled is the request hidden after a malformed one.
const Smuggled = "GET " + SmuggledPath + " HTTP/1.1\r\nHost: e\r\nAuthorization: Basic " + SmuggledSecret + "\r\n\r\n"

// FollowUp is a request sent after a well-framed one on the same
// connection: it must be answered too.
const FollowUp = "GET /v1/follow-up HTTP/1.1\r\nHost: e\r\n\r\n"

// FramingCase is one request of the table, as raw bytes.
type FramingCase struct {
	Name    string
	Request string
	// Reason is why a malformed request is refused: the server's 400
	// names it when the checker, not the server's own parser, refused it.
	Reason error
	// Body is the length of a well-framed request's body.
	Body int
}

// MalformedFraming returns the requests whose framing is malformed or
// ambiguous (RFC 9112 §2.2 line endings, §3 the request line, §5 field
// lines and obs-fold, §6 Content-Length and Transfer-Encoding, §7.1
// chunks), each followed by smuggled: every server answers 400 with the
// standard body and closes the connection, reading nothing of smuggled.
// The malformed requests carry SmuggledSecret too. Those with a body post
// to /v1/image; the server's handler there must read the body, so that
// whichever part of the server finds the problem answers it.
func MalformedFraming(smuggled string) []FramingCase {
	const (
		creds   = "Authorization: Basic " + SmuggledSecret + "\r\n"
		post    = "POST /v1/image HTTP/1.1\r\nHost: e\r\n" + creds
		chunked = post + "Transfer-Encoding: chunked\r\n\r\n"
		get     = "GET /v1/api-keys HTTP/1.1\r\nHost: e\r\n" + creds
	)
	cases := []FramingCase{
		// The request line (§3).
		{Name: "HTTP version 1.2", Request: "POST /v1/image HTTP/1.2\r\nHost: e\r\n" + creds + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", Reason: framing.ErrVersion},
		{Name: "two spaces in the request line", Request: "POST  /v1/image HTTP/1.1\r\nHost: e\r\n" + creds + "Content-Length: 5\r\n\r\nhello", Reason: framing.ErrRequestLine},
		// Chunked bodies (§7.1): what follows the bad part is the smuggled request.
		{Name: "chunk size not hex", Request: chunked + "G\r\n", Reason: framing.ErrChunkSize},
		{Name: "chunk size ended by a bare LF", Request: chunked + "5\nhello\r\n0\r\n\r\n", Reason: framing.ErrChunkLine},
		{Name: "chunk size past 63 bits", Request: chunked + "10000000000000000\r\n", Reason: framing.ErrChunkSize},
		{Name: "chunk data not ended by CRLF", Request: chunked + "5\r\nhelloXX", Reason: framing.ErrChunkData},
		{Name: "chunk extension with a bare LF", Request: chunked + "5;x\n\r\nhello\r\n0\r\n\r\n", Reason: framing.ErrChunkLine},
		{Name: "chunk size with a trailing space", Request: chunked + "5 \r\nhello\r\n0\r\n\r\n", Reason: framing.ErrChunkSpace},
		{Name: "chunk size with a trailing tab", Request: chunked + "5\t\r\nhello\r\n0\r\n\r\n", Reason: framing.ErrChunkSpace},
		{Name: "last chunk with a trailing space", Request: chunked + "5\r\nhello\r\n0 \r\n\r\n", Reason: framing.ErrChunkSpace},
		{Name: "whitespace before a chunk extension", Request: chunked + "5 ;a=b\r\nhello\r\n0\r\n\r\n", Reason: framing.ErrChunkSpace},
		{Name: "whitespace after a chunk extension's semicolon", Request: chunked + "5; a=b\r\nhello\r\n0\r\n\r\n", Reason: framing.ErrChunkSpace},
		{Name: "chunk extension without a name", Request: chunked + "5;=b\r\nhello\r\n0\r\n\r\n", Reason: framing.ErrChunkExtension},
		{Name: "chunk extension value not a token", Request: chunked + "5;a=b/c\r\nhello\r\n0\r\n\r\n", Reason: framing.ErrChunkExtension},
		{Name: "chunk extension with an unterminated quote", Request: chunked + "5;a=\"b\r\nhello\r\n0\r\n\r\n", Reason: framing.ErrChunkExtension},
		{Name: "framing field in the trailer", Request: chunked + "0\r\nContent-Length: 5\r\n\r\n", Reason: framing.ErrTrailerField},
		{Name: "folded trailer field", Request: chunked + "0\r\nX-Sum: 1\r\n 2\r\n\r\n", Reason: framing.ErrFold},
		{Name: "trailer field ended by a bare LF", Request: chunked + "0\r\nX-Sum: 1\n\r\n", Reason: framing.ErrLineEnding},
		// Content-Length and Transfer-Encoding (§6).
		{Name: "Content-Length then chunked", Request: post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", Reason: framing.ErrBothLengths},
		{Name: "chunked then Content-Length", Request: post + "Transfer-Encoding: chunked\r\nContent-Length: 44\r\n\r\n0\r\n\r\n", Reason: framing.ErrBothLengths},
		{Name: "Transfer-Encoding identity with Content-Length", Request: post + "Transfer-Encoding: identity\r\nContent-Length: 5\r\n\r\nhello", Reason: framing.ErrNotChunked},
		{Name: "Transfer-Encoding identity alone", Request: post + "Transfer-Encoding: identity\r\n\r\n", Reason: framing.ErrNotChunked},
		{Name: "Transfer-Encoding in HTTP/1.0", Request: "POST /v1/image HTTP/1.0\r\nHost: e\r\n" + creds + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", Reason: framing.ErrChunkedHTTP10},
		{Name: "transfer coding other than chunked", Request: post + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", Reason: framing.ErrNotChunked},
		{Name: "Transfer-Encoding twice", Request: post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", Reason: framing.ErrRepeatedTransferEncoding},
		{Name: "differing Content-Length twice", Request: post + "Content-Length: 5\r\nContent-Length: 0\r\n\r\nhello", Reason: framing.ErrRepeatedContentLength},
		{Name: "identical Content-Length twice", Request: post + "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", Reason: framing.ErrRepeatedContentLength},
		{Name: "Content-Length list", Request: post + "Content-Length: 5, 5\r\n\r\nhello", Reason: framing.ErrContentLength},
		{Name: "Content-Length with a sign", Request: post + "Content-Length: +5\r\n\r\nhello", Reason: framing.ErrContentLength},
		{Name: "Content-Length past 63 bits", Request: post + "Content-Length: 9223372036854775808\r\n\r\nhello", Reason: framing.ErrContentLength},
		// Field names (RFC 9110 §5.1, RFC 9112 §5.1).
		{Name: "space before the colon", Request: post + "Content-Length : 5\r\n\r\nhello", Reason: framing.ErrFieldName},
		{Name: "space in a header name", Request: post + "X A: 1\r\nContent-Length: 5\r\n\r\nhello", Reason: framing.ErrFieldName},
		{Name: "control character in a header name", Request: post + "X\x01A: 1\r\nContent-Length: 5\r\n\r\nhello", Reason: framing.ErrFieldName},
		{Name: "non-ASCII header name", Request: post + "X-\xc3\xa4: 1\r\nContent-Length: 5\r\n\r\nhello", Reason: framing.ErrFieldName},
		{Name: "empty header name", Request: post + ": 1\r\nContent-Length: 5\r\n\r\nhello", Reason: framing.ErrFieldName},
		{Name: "header line without a colon", Request: get + "No-Colon-Here\r\n\r\n", Reason: framing.ErrNoColon},
		{Name: "control character in a header value", Request: post + "X-Note: a\x00b\r\nContent-Length: 5\r\n\r\nhello", Reason: framing.ErrFieldValue},
		// obs-fold (§5.2).
		{Name: "folded header", Request: get + "X-Note: one\r\n two\r\n\r\n", Reason: framing.ErrFold},
		{Name: "folded Transfer-Encoding", Request: post + "Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", Reason: framing.ErrNotChunked},
		{Name: "whitespace before the first header", Request: "POST /v1/image HTTP/1.1\r\n Host: e\r\n" + creds + "Content-Length: 5\r\n\r\nhello", Reason: framing.ErrFold},
		// Line endings (§2.2).
		{Name: "bare LF line endings", Request: "POST /v1/image HTTP/1.1\nHost: e\n" + strings.TrimSuffix(creds, "\r\n") + "\nContent-Length: 5\n\nhello", Reason: framing.ErrLineEnding},
		{Name: "one header ended by a bare LF", Request: post + "X-Note: one\nContent-Length: 5\r\n\r\nhello", Reason: framing.ErrLineEnding},
		{Name: "bare CR in a header", Request: post + "X-Note: one\rContent-Length: 5\r\n\r\nhello", Reason: framing.ErrBareCR},
	}
	for i := range cases {
		cases[i].Request += smuggled
	}
	return cases
}

// MalformedAfterFollowUp returns pairs of requests sent at once on one
// connection: FollowUp, which is served, then a request refused at its
// first byte, then smuggled. Every server answers the first, then 400 with
// the standard body naming Reason, and closes the connection.
func MalformedAfterFollowUp(smuggled string) []FramingCase {
	return []FramingCase{
		{Name: "space before the next request", Request: FollowUp + " GET /v1/api-keys HTTP/1.1\r\nHost: e\r\n\r\n" + smuggled, Reason: framing.ErrRequestLine},
		{Name: "bare LF before the next request", Request: FollowUp + "\nGET /v1/api-keys HTTP/1.1\r\nHost: e\r\n\r\n" + smuggled, Reason: framing.ErrLineEnding},
		{Name: "empty line then a bare LF before the next request", Request: FollowUp + "\r\n\nGET /v1/api-keys HTTP/1.1\r\nHost: e\r\n\r\n" + smuggled, Reason: framing.ErrLineEnding},
		{Name: "header name not a token in the next request", Request: FollowUp + "GET /v1/api-keys HTTP/1.1\r\nHost: e\r\nX A: 1\r\n\r\n" + smuggled, Reason: framing.ErrFieldName},
	}
}

// WellFramed returns requests at the edges of what both tiers accept: each
// posts a body of Body bytes to /v1/image and keeps the connection open.
func WellFramed() []FramingCase {
	const post = "POST /v1/image HTTP/1.1\r\nHost: e\r\n"
	return []FramingCase{
		{Name: "Content-Length", Request: post + "Content-Length: 5\r\n\r\nhello", Body: 5},
		{Name: "Content-Length without whitespace", Request: post + "Content-Length:5\r\n\r\nhello", Body: 5},
		{Name: "Content-Length zero", Request: post + "Content-Length: 0\r\n\r\n", Body: 0},
		{Name: "chunked", Request: post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", Body: 11},
		{Name: "chunked in upper case", Request: post + "transfer-encoding: CHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n", Body: 5},
		{Name: "chunk extensions", Request: post + "Transfer-Encoding: chunked\r\n\r\n5;a=b;c\r\nhello\r\n0;last=\"x y\"\r\n\r\n", Body: 5},
		{Name: "quoted chunk extension with an escape", Request: post + "Transfer-Encoding: chunked\r\n\r\n5;a=\"q\\\"uote\"\r\nhello\r\n0\r\n\r\n", Body: 5},
		{Name: "upper-case hex with leading zeros", Request: post + "Transfer-Encoding: chunked\r\n\r\n000A\r\n0123456789\r\n0\r\n\r\n", Body: 10},
		{Name: "trailer field", Request: post + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\n", Body: 5},
		{Name: "obs-text in a header value", Request: post + "X-Note: caf\xe9\r\nContent-Length: 5\r\n\r\nhello", Body: 5},
		{Name: "header value with tabs", Request: post + "X-Note:\ta\tb\t\r\nContent-Length: 5\r\n\r\nhello", Body: 5},
	}
}

// WantClosed checks that the server closed c with nothing after what br
// read: a read ends at once with EOF (or a reset, when the server closed
// with the client's bytes unread), never with data or a timeout.
func WantClosed(t testing.TB, c net.Conn, br *bufio.Reader) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(br)
	if len(rest) > 0 {
		t.Fatalf("%d bytes after the answer: %q", len(rest), rest)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the connection was left open")
	}
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reading after the answer: %v", err)
	}
}
