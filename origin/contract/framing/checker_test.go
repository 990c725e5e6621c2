package framing_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/framing"
)

// verdict is what a Checker made of a stream.
type verdict struct {
	passed   int   // bytes before the first refused one
	err      error // why it was refused
	requests int64 // requests whose framing ended
	offset   int64 // bytes of the request under way (or refused) passed
	begun    bool  // whether that request began
}

// checkIn feeds stream to a new Checker in pieces of the sizes sizes gives
// (cycling; each 1 to 256), and returns its verdict.
func checkIn(t testing.TB, stream []byte, sizes []byte) verdict {
	t.Helper()
	var c framing.Checker
	var v verdict
	for i, rest := 0, stream; len(rest) > 0; i++ {
		size := len(rest)
		if len(sizes) > 0 {
			size = min(size, int(sizes[i%len(sizes)])+1)
		}
		n, err := c.Check(rest[:size])
		if n < 0 || n > size || (err == nil) != (n == size) {
			t.Fatalf("Check of %d bytes took %d, %v", size, n, err)
		}
		v.passed += n
		if err != nil {
			v.err = err
			if n2, err2 := c.Check(rest[n:]); n2 != 0 || err2 != err {
				t.Fatalf("after %v, Check took %d, %v", err, n2, err2)
			}
			break
		}
		rest = rest[size:]
	}
	v.requests, v.offset, v.begun = c.Requests(), c.Offset(), c.Begun()
	return v
}

// ends feeds stream byte by byte and returns where each request ended.
func ends(stream []byte) []int {
	var c framing.Checker
	var out []int
	for i := range stream {
		if _, err := c.Check(stream[i : i+1]); err != nil {
			break
		}
		if int(c.Requests()) > len(out) {
			out = append(out, i+1)
		}
	}
	return out
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// serverEnds reads stream as a server does, one request after another, with
// read (head and whole body), and returns where each request ended, up to
// the first it could not read.
func serverEnds(stream []byte, read func(*bufio.Reader) error) []int {
	cr := &countingReader{r: bytes.NewReader(stream)}
	br := bufio.NewReaderSize(cr, 64<<10)
	var out []int
	for read(br) == nil {
		out = append(out, cr.n-br.Buffered())
	}
	return out
}

func netHTTPRead(br *bufio.Reader) error {
	req, err := http.ReadRequest(br)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err
}

func fasthttpRead(br *bufio.Reader) error {
	var req fasthttp.Request
	return req.ReadLimitBody(br, 1<<20) // it allocates a chunk's size at once
}

// wantServersAgree checks that what the checker passed of stream, read by
// net/http (the origin's parser) and by fasthttp (the edge's), holds no
// request the checker did not see end, and that each request they read ends
// where the checker's did: they may refuse sooner, never read more or
// elsewhere.
func wantServersAgree(t *testing.T, stream []byte) {
	t.Helper()
	v := checkIn(t, stream, nil)
	want := ends(stream[:v.passed])
	for _, s := range []struct {
		name string
		read func(*bufio.Reader) error
	}{{"net/http", netHTTPRead}, {"fasthttp", fasthttpRead}} {
		got := serverEnds(stream[:v.passed], s.read)
		if len(got) > len(want) {
			t.Fatalf("%s read %d requests (ends %v) of the %d bytes passed, the checker %d (ends %v):\n%q",
				s.name, len(got), got, v.passed, len(want), want, stream)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s ends request %d at %d, the checker at %d:\n%q", s.name, i+1, got[i], want[i], stream)
			}
		}
	}
}

// TestCheckerRefusesMalformedFraming: each request of the shared table is
// refused for its reason, before the smuggled request begins, whatever the
// sizes of the reads it comes in.
func TestCheckerRefusesMalformedFraming(t *testing.T) {
	for _, tc := range apitest.MalformedFraming(apitest.Smuggled) {
		t.Run(tc.Name, func(t *testing.T) {
			stream := []byte(tc.Request)
			whole := checkIn(t, stream, nil)
			if !errors.Is(whole.err, tc.Reason) {
				t.Fatalf("refused for %v, want %v", whole.err, tc.Reason)
			}
			if limit := len(stream) - len(apitest.Smuggled); whole.passed >= limit || whole.requests != 0 {
				t.Fatalf("passed %d bytes (the smuggled request begins at %d), %d requests", whole.passed, limit, whole.requests)
			}
			for _, sizes := range [][]byte{{0}, {1}, {6, 0, 2}, {254}} {
				if v := checkIn(t, stream, sizes); v != whole {
					t.Fatalf("in reads of %v bytes: %+v, at once: %+v", sizes, v, whole)
				}
			}
			wantServersAgree(t, stream)
		})
	}
}

// TestCheckerPassesWellFramed: the table's well-framed requests pass whole,
// with the request after them, and every server reads them as the checker
// does.
func TestCheckerPassesWellFramed(t *testing.T) {
	for _, tc := range apitest.WellFramed() {
		t.Run(tc.Name, func(t *testing.T) {
			stream := []byte(tc.Request + apitest.FollowUp)
			for _, sizes := range [][]byte{nil, {0}, {2, 5}} {
				if v := checkIn(t, stream, sizes); v.err != nil || v.passed != len(stream) || v.requests != 2 {
					t.Fatalf("in reads of %v bytes: %+v", sizes, v)
				}
			}
			want := ends(stream)
			for _, read := range []func(*bufio.Reader) error{netHTTPRead, fasthttpRead} {
				if got := serverEnds(stream, read); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
					t.Fatalf("a server ends the requests at %v, the checker at %v", got, want)
				}
			}
		})
	}
}

// TestChecker covers what the table does not: where a refusal falls, and
// the states a stream may stop in.
func TestChecker(t *testing.T) {
	const get = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
	tests := []struct {
		name     string
		stream   string
		passed   int // -1: all
		err      error
		requests int64
	}{
		{"empty", "", -1, nil, 0},
		{"pipelined", get + get + get, -1, nil, 3},
		{"empty lines before a request", "\r\n\r\n" + get, -1, nil, 1},
		{"half a request", get[:20], -1, nil, 0},
		{"HTTP/1.0", "GET / HTTP/1.0\r\n\r\n", -1, nil, 1},
		{"a body split from its head", "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nab", -1, nil, 0},
		{"a body then a request", "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc" + get, -1, nil, 2},
		{"Content-Length at the 63-bit limit", "POST / HTTP/1.1\r\nContent-Length: 9223372036854775807\r\n\r\nabc", -1, nil, 0},
		{"chunk size at the 63-bit limit", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n7fffffffffffffff\r\nabc", -1, nil, 0},
		{"a name that begins like Content-Length", "POST / HTTP/1.1\r\nContent-Lengths: x\r\nContent: y\r\n\r\n", -1, nil, 1},
		{"a name that begins like Transfer-Encoding", "POST / HTTP/1.1\r\nTransfer-Encodings: x\r\nTransfer-Encoding-X: y\r\n\r\n", -1, nil, 1},
		{"chunked with spaces around", "POST / HTTP/1.1\r\nTransfer-Encoding:  chunked \t\r\n\r\n0\r\n\r\n", -1, nil, 1},
		{"a refusal at the blank line's LF", "POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 65, framing.ErrBothLengths, 0},
		{"a refusal in the second request", get + "GET / HTTP/1.1\r\nX A: 1\r\n\r\n", len(get) + 17, framing.ErrFieldName, 1},
		{"a bare LF before a request", get + "\n" + get, len(get), framing.ErrLineEnding, 1},
		{"a CR then something else", "\rGET", 1, framing.ErrBareCR, 0},
		{"a request line without a version", "GET /\r\n\r\n", 5, framing.ErrRequestLine, 0},
		{"HTTP/2.0", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 11, framing.ErrVersion, 0},
		{"a DEL in the target", "GET /\x7f HTTP/1.1\r\n\r\n", 5, framing.ErrRequestLine, 0},
		{"Content-Length empty", "POST / HTTP/1.1\r\nContent-Length: \r\n\r\n", 33, framing.ErrContentLength, 0},
		{"Content-Length with inner space", "POST / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", 35, framing.ErrContentLength, 0},
		{"chunked twice in one field", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 43, framing.ErrNotChunked, 0},
		{"chunk size missing", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", 47, framing.ErrChunkSize, 0},
		{"a CR inside a chunk line", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\rx", 49, framing.ErrChunkLine, 0},
		{"Transfer-Encoding in a trailer", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\ntransfer-encoding: chunked\r\n\r\n", 67, framing.ErrTrailerField, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stream := []byte(tc.stream)
			want := verdict{passed: tc.passed, err: tc.err, requests: tc.requests}
			if tc.passed < 0 {
				want.passed = len(stream)
			}
			for _, sizes := range [][]byte{nil, {0}, {3, 1}} {
				v := checkIn(t, stream, sizes)
				if v.passed != want.passed || v.err != want.err || v.requests != want.requests {
					t.Fatalf("in reads of %v bytes: %+v, want %+v", sizes, v, want)
				}
			}
			wantServersAgree(t, stream)
		})
	}
}

// TestCheckerOffset: where the request under way began, and whether it
// did, as the servers' connections need them for a refusal at a request's
// first bytes.
func TestCheckerOffset(t *testing.T) {
	const get = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
	tests := []struct {
		name   string
		stream string
		offset int64
		begun  bool
	}{
		{"nothing", "", 0, false},
		{"a request under way", "GET / HT", 8, true},
		{"a request ended", get, 0, false},
		{"a body ended", "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiGE", 2, true},
		{"a chunked body ended", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n\r\n", 2, false},
		{"refused at a request's first byte", get + " GET", 0, false},
		{"refused after empty lines", get + "\r\n\r\n\n", 4, false},
		{"refused in a request line", get + "GET  /", 4, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, sizes := range [][]byte{nil, {0}, {4, 1}} {
				if v := checkIn(t, []byte(tc.stream), sizes); v.offset != tc.offset || v.begun != tc.begun {
					t.Fatalf("in reads of %v bytes: offset %d, begun %v; want %d, %v", sizes, v.offset, v.begun, tc.offset, tc.begun)
				}
			}
		})
	}
}

// FuzzChecker: the checker never panics; its verdict (bytes passed, the
// error, the requests ended) is the same whatever the sizes of the reads;
// once it refuses it takes nothing more; and neither server's parser reads
// from what it passed a request it did not see end, nor ends one elsewhere.
func FuzzChecker(f *testing.F) {
	for _, tc := range apitest.MalformedFraming(apitest.Smuggled) {
		f.Add([]byte(tc.Request), []byte{3, 0, 17})
	}
	for _, tc := range apitest.WellFramed() {
		f.Add([]byte(tc.Request+apitest.FollowUp), []byte{0})
	}
	f.Add([]byte("\r\nGET / HTTP/1.0\r\n\r\nPOST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"), []byte{1, 200})
	f.Fuzz(func(t *testing.T, stream, sizes []byte) {
		whole := checkIn(t, stream, nil)
		if v := checkIn(t, stream, sizes); v != whole {
			t.Fatalf("in reads of %v bytes: %+v, at once: %+v", sizes, v, whole)
		}
		wantServersAgree(t, stream)
	})
}

// BenchmarkChecker is the checker's cost on a typical API request's head
// (and a small body), per request.
func BenchmarkChecker(b *testing.B) {
	req := []byte("POST /v1/image HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: pictor-client/1.0 (linux; go1.26)\r\n" +
		"Authorization: Basic YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo6MDEyMzQ1Njc4OWFiY2RlZg==\r\n" +
		"Accept: application/json\r\nAccept-Encoding: gzip, deflate, br\r\nContent-Type: application/json\r\n" +
		"X-Request-Id: 0123456789abcdef\r\nContent-Length: 30\r\n\r\n{\"html\":\"<p>Hello, world</p>\"}")
	var c framing.Checker
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Check(req); err != nil {
			b.Fatal(err)
		}
	}
}
