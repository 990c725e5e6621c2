package forward

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/edge/linger"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// startEdge serves f on a fasthttp server on loopback, like the edge does.
func startEdge(t *testing.T, f *Forwarder) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{
		Handler:            func(ctx *fasthttp.RequestCtx) { f.Forward(context.Background(), ctx, "rid-1", nil) },
		StreamRequestBody:  true,
		MaxRequestBodySize: 1 << 20, // smaller than the uploads below: they must stream
	}
	go srv.Serve(lingerListener{ln})
	t.Cleanup(func() { srv.Shutdown() })
	return "http://" + ln.Addr().String()
}

// lingerListener's connections linger when Forward marks them, as the
// edge's do.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lingerConn{Conn: c}, nil
}

type lingerConn struct {
	net.Conn
	linger bool
}

func (c *lingerConn) Linger() { c.linger = true }

func (c *lingerConn) Close() error {
	if c.linger {
		return linger.Close(c.Conn, func() {})
	}
	return c.Conn.Close()
}

func newForwarder(t *testing.T, origin string) *Forwarder {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Origin = origin
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

type seen struct {
	Method, Path, Query string
	Header              http.Header
	BodySHA             string
	BodyLen             int64
}

func TestForwardKeepsRequest(t *testing.T) {
	got := make(chan seen, 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		got <- seen{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Clone(), hex.EncodeToString(h.Sum(nil)), n}
		w.Header().Set("X-Origin", "yes")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		json.NewEncoder(w).Encode(map[string]string{"ok": "1"})
	}))
	defer origin.Close()
	edge := startEdge(t, newForwarder(t, origin.URL))

	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	req, _ := http.NewRequest("POST", edge+"/v1/image/a%2Fb?x=1&x=2&y=%20", bytes.NewReader(body))
	req.Header.Set("Authorization", "Basic dXNlcjpwYXNz")
	req.Header.Set("X-Custom", "kept")
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("Connection", "keep-alive")
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	respBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	s := <-got

	sum := sha256.Sum256(body)
	tests := []struct{ name, got, want string }{
		{"method", s.Method, "POST"},
		{"path", s.Path, "/v1/image/a%2Fb"},
		{"query", s.Query, "x=1&x=2&y=%20"},
		{"body", s.BodySHA, hex.EncodeToString(sum[:])},
		{"authorization", s.Header.Get("Authorization"), "Basic dXNlcjpwYXNz"},
		{"custom header", s.Header.Get("X-Custom"), "kept"},
		{"content type", s.Header.Get("Content-Type"), "application/octet-stream"},
		{"forwarded for", s.Header.Get("X-Forwarded-For"), "203.0.113.9, 127.0.0.1"},
		{"forwarded proto", s.Header.Get("X-Forwarded-Proto"), "http"},
		{"request id", s.Header.Get("X-Request-Id"), "rid-1"},
		{"status", http.StatusText(resp.StatusCode), "Created"},
		{"response header", resp.Header.Get("X-Origin"), "yes"},
		{"cookies", strings.Join(resp.Header.Values("Set-Cookie"), ";"), "a=1;b=2"},
		{"response type", resp.Header.Get("Content-Type"), "application/json"},
		{"response body", strings.TrimSpace(string(respBody)), `{"ok":"1"}`},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if s.Header.Get("Connection") != "" {
		t.Error("hop-by-hop Connection header was relayed")
	}
}

// TestForwardStreamsBothWays proves neither direction is buffered whole: the
// origin answers with a first chunk while the upload is still open, and the
// client reads that chunk before it finishes uploading.
func TestForwardStreamsBothWays(t *testing.T) {
	const chunk = 64 << 10 // past every bufio buffer on the way
	firstUploadChunk := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NewResponseController(w).EnableFullDuplex()
		buf := make([]byte, chunk)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			t.Errorf("first upload chunk: %v", err)
			return
		}
		close(firstUploadChunk)
		w.WriteHeader(200)
		w.Write([]byte("first|"))
		w.(http.Flusher).Flush()
		rest, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "rest=%d", len(rest))
	}))
	defer origin.Close()
	edge := startEdge(t, newForwarder(t, origin.URL))

	conn, err := net.Dial("tcp", strings.TrimPrefix(edge, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	writeChunk := func(n int) {
		fmt.Fprintf(conn, "%x\r\n%s\r\n", n, bytes.Repeat([]byte("x"), n))
	}
	fmt.Fprint(conn, "POST /upload HTTP/1.1\r\nHost: edge\r\nTransfer-Encoding: chunked\r\n\r\n")
	writeChunk(chunk)
	<-firstUploadChunk

	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first|" {
		t.Fatalf("first response chunk = %q, %v", first, err)
	}
	// Only now does the upload finish.
	writeChunk(chunk)
	writeChunk(100)
	fmt.Fprint(conn, "0\r\n\r\n")
	rest, _ := io.ReadAll(resp.Body)
	if want := fmt.Sprintf("rest=%d", chunk+100); string(rest) != want {
		t.Fatalf("rest = %q, want %q", rest, want)
	}
}

func TestForwardOriginDown(t *testing.T) {
	edge := startEdge(t, newForwarder(t, "http://"+apitest.ClosedAddr(t)))
	resp, err := http.Get(edge + "/v1/api-keys")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 502 || body["statusCode"] != float64(502) || body["message"] == "" {
		t.Fatalf("origin down: %d %v", resp.StatusCode, body)
	}
}

func TestForwardHead(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1234")
		w.Header().Set("Content-Type", "image/png")
	}))
	defer origin.Close()
	edge := startEdge(t, newForwarder(t, origin.URL))
	resp, err := http.Head(edge + "/v1/image/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ContentLength != 1234 || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("HEAD: length %d type %q", resp.ContentLength, resp.Header.Get("Content-Type"))
	}
}

func TestNewRejectsBadOrigin(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "localhost:8081", "http://"} {
		cfg := DefaultConfig()
		cfg.Origin = u
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
}

// TestForwardEarlyAnswer: the origin refuses a large upload without reading
// it. The client gets the answer every time (the connection lingers), and
// the edge stays healthy for the next request (run with -race: nothing reads
// the recycled request).
func TestForwardEarlyAnswer(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			w.Write([]byte(`{"statusCode":413}`))
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok"))
	}))
	defer origin.Close()
	edge := startEdge(t, newForwarder(t, origin.URL))
	for range 5 {
		resp, err := http.Post(edge+"/big", "application/octet-stream", bytes.NewReader(make([]byte, 8<<20)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || string(body) != `{"statusCode":413}` {
			t.Fatalf("early answer: %d %q", resp.StatusCode, body)
		}
		resp, err = http.Post(edge+"/small", "text/plain", strings.NewReader("hi"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok" {
			t.Fatalf("next request: %q", body)
		}
	}
}

// TestForwardClientBehindTrustedProxy: a relay from a trusted proxy
// (TrustedProxies) sends X-Forwarded-For ending with the client that proxy
// saw, so the origin's per-client limits count that client; X-Forwarded-For
// lines are read together.
func TestForwardClientBehindTrustedProxy(t *testing.T) {
	got := make(chan string, 1)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- strings.Join(r.Header.Values("X-Forwarded-For"), "|")
	}))
	defer origin.Close()
	for _, tt := range []struct {
		name    string
		trusted []netip.Prefix
		want    string
	}{
		{"untrusted peer", nil, "1.1.1.1, 203.0.113.9, 127.0.0.1"},
		{"trusted peer", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "1.1.1.1, 203.0.113.9"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Origin, cfg.TrustedProxies = origin.URL, tt.trusted
			f, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(f.Close)
			req, _ := http.NewRequest("GET", startEdge(t, f)+"/v1/x", nil)
			req.Header.Add("X-Forwarded-For", "1.1.1.1")
			req.Header.Add("X-Forwarded-For", "203.0.113.9")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if xff := <-got; xff != tt.want {
				t.Fatalf("the origin got X-Forwarded-For %q, want %q", xff, tt.want)
			}
		})
	}
}
