package edge

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract"
)

// TestOGHitAtRequestTime: served by the edge's server with no clock
// configured, a hit reads its time from the request (fasthttp's): the
// entry is fresh and its max-age at most the origin's, as when it read
// the clock.
func TestOGHitAtRequestTime(t *testing.T) {
	o := newOGOrigin(t, contract.OGFit)
	e := newTestEdge(t, o.URL)
	base := startEdge(t, e)
	path := contract.OGPrefix + ogDomain + "/p/hot"
	ogGet(t, base, "GET", path, uaTwitter) // the fill
	e.stores.settle()
	r := ogGet(t, base, "GET", path, uaTwitter)
	if r.Status != http.StatusOK || o.count.Load() != 1 {
		t.Fatalf("status %d after %d requests to the origin: not a hit", r.Status, o.count.Load())
	}
	cc := r.Header.Get("Cache-Control")
	rest, ok := strings.CutPrefix(cc, "public, max-age=")
	left, swr, _ := strings.Cut(rest, ", ")
	n, err := strconv.Atoi(left)
	if !ok || err != nil || n <= 0 || n > ogMaxAgeS || swr != "stale-while-revalidate="+strconv.Itoa(ogSWRS) {
		t.Fatalf("Cache-Control %q: want a fresh hit's, max-age at most %d", cc, ogMaxAgeS)
	}
}

// BenchmarkHotServe is hot-image's and og-hot's request, as pictor-bench
// sends it, served whole by the edge's fasthttp server from memory:
// request parsing, dispatch, the hit, the answer's headers and body
// written. Only the socket is left out (memConn), so the pair compares
// what the edge does per request; both bodies are the same size, and the
// OG request carries the crawler's User-Agent. Neither allocates.
func BenchmarkHotServe(b *testing.B) {
	og, ogBody := ogHotEdge(b)
	img := newFakeOrigin(b)
	img.png = noisy(len(ogBody)) // the same bytes to copy on both sides
	imgEdge := newTestEdge(b, img.URL)
	imgTarget := "/v1/image/" + testID + ".png"
	get(imgEdge, imgTarget)
	for _, tc := range []struct {
		name string
		e    *Edge
		req  string
		body []byte
	}{
		{"image", imgEdge, benchRequest(imgTarget, "pictor-bench"), img.png},
		{"og", og, benchRequest(contract.OGPrefix+ogDomain+"/p/hot", uaTwitter), ogBody},
	} {
		b.Run(tc.name, func(b *testing.B) {
			checkServed(b, tc.e, tc.req, tc.body)
			c := &memConn{req: []byte(tc.req), left: b.N}
			b.ReportAllocs()
			b.ResetTimer()
			if err := tc.e.server.ServeConn(c); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if c.left != 0 || c.written < int64(b.N)*int64(len(tc.body)) {
				b.Fatalf("%d requests left unread, %d bytes written for %d answers of %d bytes", c.left, c.written, b.N, len(tc.body))
			}
		})
	}
}

// ogHotEdge returns an edge holding og-hot's image, Twitter's fit of the
// origin's, and its bytes.
func ogHotEdge(t testing.TB) (*Edge, []byte) {
	o := newOGOrigin(t, contract.OGFit)
	e := newTestEdge(t, o.URL)
	r := get(e, contract.OGPrefix+ogDomain+"/p/hot", "User-Agent", uaTwitter)
	if r.Response.StatusCode() != http.StatusOK {
		t.Fatalf("the fill answered %d", r.Response.StatusCode())
	}
	return e, bytes.Clone(r.Response.Body())
}

// benchRequest is a GET of target as pictor-bench's client sends it
// (bench/load's KeepAlive, whose User-Agent is "pictor-bench" unless a
// scenario sets one).
func benchRequest(target, userAgent string) string {
	return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: " + userAgent + "\r\n\r\n"
}

// checkServed serves req once through e's server and checks the answer is
// a 200 with body, from the cache.
func checkServed(t testing.TB, e *Edge, req string, body []byte) {
	t.Helper()
	c := &memConn{req: []byte(req), left: 1, keep: true}
	if err := e.server.ServeConn(c); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(c.out.Bytes())), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
		t.Fatalf("status %d, %d bytes: not the cached body (%d bytes)", resp.StatusCode, len(got), len(body))
	}
}

// memConn is a connection in memory for fasthttp's ServeConn: its reads
// give req left times over, as one stream (pipelined), then io.EOF; its
// writes are counted, and kept if keep is set.
type memConn struct {
	req     []byte
	left    int // requests not yet read whole
	off     int // read of the current one
	keep    bool
	out     bytes.Buffer
	written int64
}

func (c *memConn) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && c.left > 0 {
		k := copy(p[n:], c.req[c.off:])
		n += k
		if c.off += k; c.off == len(c.req) {
			c.off = 0
			c.left--
		}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (c *memConn) Write(p []byte) (int, error) {
	c.written += int64(len(p))
	if c.keep {
		c.out.Write(p)
	}
	return len(p), nil
}

func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

func TestValidDomainID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{ogDomain, true},
		{"AZaz09-_", true},
		{strings.Repeat("a", maxDomainID), true},
		{strings.Repeat("a", maxDomainID+1), false},
		{"", false},
		{"a.b", false},
		{"a/b", false},
		{"a%41", false},
		{"a b", false},
		{"é", false},
		{"a\x00", false},
		{"a=", false},
	} {
		t.Run(tc.id, func(t *testing.T) {
			if got := validDomainID([]byte(tc.id)); got != tc.want {
				t.Fatalf("validDomainID(%q) = %v, want %v", tc.id, got, tc.want)
			}
		})
	}
}

// TestRequestIDs: an answer carries the client's request id, whatever
// the case of its header's name, and the OG fill sends it on to the
// origin; a request without a valid one gets one of the edge's own, a new
// one each time.
func TestRequestIDs(t *testing.T) {
	o := newOGOrigin(t, contract.OGAsIs)
	e := newTestEdge(t, o.URL)
	c, err := net.Dial("tcp", strings.TrimPrefix(startEdge(t, e), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	roundTrip := func(path, idHeader string) (string, int) {
		t.Helper()
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: edge\r\nUser-Agent: "+uaTwitter+"\r\n"+idHeader+"\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get(contract.HeaderRequestID), resp.StatusCode
	}
	path := contract.OGPrefix + ogDomain + "/ids"
	if id, status := roundTrip(path, "x-REQUEST-id: client-id-1\r\n"); id != "client-id-1" || status != http.StatusOK {
		t.Fatalf("the fill answered %d with request id %q, want the client's", status, id)
	}
	if got := o.next(t).requestID; got != "client-id-1" {
		t.Fatalf("the origin got request id %q, want the client's", got)
	}
	prefix := string(e.idPrefix)
	seen := map[string]bool{}
	for _, h := range []string{"", "X-Request-Id: " + strings.Repeat("a", contract.MaxRequestID+1) + "\r\n", "X-Request-Id: \r\n", ""} {
		id, status := roundTrip(path, h)
		if status != http.StatusOK || !strings.HasPrefix(id, prefix) || len(id) == len(prefix) || seen[id] {
			t.Fatalf("header %q: answered %d with request id %q, want a new one of the edge's (%s…)", h, status, id, prefix)
		}
		seen[id] = true
	}
}
