package edge

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// startEdge starts e on a loopback port and returns its base URL.
func startEdge(t testing.TB, e *Edge) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Listener = ln
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return "http://" + ln.Addr().String()
}

// noisy returns n bytes that do not compress, as a cached image's.
func noisy(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1})
	r.Read(b)
	return b
}

// TestBodiesOverConnections: cached bodies sent over real connections
// arrive whole and in order, one request at a time and pipelined (several
// responses in one write buffer), for HEAD (no body) and 304s, and larger
// than the socket's buffers.
func TestBodiesOverConnections(t *testing.T) {
	o := newFakeOrigin(t)
	o.png = noisy(3 << 20)
	e := newTestEdge(t, o.URL)
	base := startEdge(t, e)
	uri := "/v1/image/" + testID + ".png"

	client := &http.Client{Timeout: 30 * time.Second}
	for i := range 5 {
		r, err := client.Get(base + uri)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil || r.StatusCode != 200 || !bytes.Equal(body, o.png) {
			t.Fatalf("GET %d: %d, %d bytes (%v), want %d", i, r.StatusCode, len(body), err, len(o.png))
		}
	}

	c, err := net.Dial("tcp", base[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	get := "GET " + uri + " HTTP/1.1\r\nHost: edge\r\n\r\n"
	pipelined := get +
		"HEAD " + uri + " HTTP/1.1\r\nHost: edge\r\n\r\n" +
		"GET " + uri + " HTTP/1.1\r\nHost: edge\r\nIf-None-Match: \"0123456789abcdef\"\r\n\r\n" +
		get + "GET /v1/image/" + testID + ".png?width=x HTTP/1.1\r\nHost: edge\r\n\r\n" + get
	if _, err := io.WriteString(c, pipelined); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i, want := range []struct {
		method string
		status int
		body   []byte
	}{{"GET", 200, o.png}, {"HEAD", 200, nil}, {"GET", 304, nil}, {"GET", 200, o.png}, {"GET", 400, nil}, {"GET", 200, o.png}} {
		r, err := http.ReadResponse(br, &http.Request{Method: want.method})
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		body, err := io.ReadAll(r.Body)
		if err != nil || r.StatusCode != want.status {
			t.Fatalf("response %d: %d (%v), want %d", i, r.StatusCode, err, want.status)
		}
		if want.body != nil && !bytes.Equal(body, want.body) {
			t.Fatalf("response %d: %d bytes differ from the %d cached", i, len(body), len(want.body))
		}
		if want.method == "HEAD" && (len(body) != 0 || r.ContentLength != int64(len(o.png))) {
			t.Fatalf("HEAD: %d body bytes, Content-Length %d", len(body), r.ContentLength)
		}
	}
	if n := o.gets.Load(); n != 1 {
		t.Fatalf("%d origin fetches, want 1", n)
	}
}

// TestUnreadableRequests: requests fasthttp cannot read, or not in time,
// are answered with the standard error body and the fitting status, never
// plain text.
func TestUnreadableRequests(t *testing.T) {
	o := newFakeOrigin(t)
	e := newTestEdge(t, o.URL)
	e.server.ReadTimeout = time.Second
	base := startEdge(t, e)
	for _, tt := range []struct {
		name, req string
		status    int
	}{
		{"query past the header limit", "GET /v1/image/" + testID + "?a=" + strings.Repeat("x", 20<<10) + " HTTP/1.1\r\nHost: e\r\n\r\n", 431},
		{"header past the limit", "GET / HTTP/1.1\r\nHost: e\r\nX-Big: " + strings.Repeat("x", 20<<10) + "\r\n\r\n", 431},
		{"malformed request line", "GET\r\n\r\n", 400},
		{"malformed header", "GET / HTTP/1.1\r\nHost e\r\n\r\n", 400},
		{"bad Content-Length", "POST /v1/image HTTP/1.1\r\nHost: e\r\nContent-Length: -5\r\n\r\n", 400},
		{"headers that never end", "GET / HTTP/1.1\r\nHost: e\r\n", 408},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.WriteString(c, tt.req); err != nil {
				t.Fatal(err)
			}
			r, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Fatal(err)
			}
			apitest.WantError(t, &apitest.Response{Status: r.StatusCode, Header: r.Header, Body: body}, tt.status)
		})
	}
}
