package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/respond"
)

// testServer serves routes the way the origin does: Router behind
// Listener, over loopback.
type testServer struct {
	addr   string
	router *Router
	ln     *Listener
	srv    *http.Server
}

func startServer(t *testing.T, rate *BodyRate, headerTimeout time.Duration, routes ...Route) *testServer {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, raw, rate, headerTimeout, routes...)
}

// startServerOn is startServer on the listener raw.
func startServerOn(t *testing.T, raw net.Listener, rate *BodyRate, headerTimeout time.Duration, routes ...Route) *testServer {
	t.Helper()
	s := &testServer{addr: raw.Addr().String(), ln: NewListener(raw, 8<<10)}
	s.router = New(Config{Body: rate}, routes)
	s.srv = &http.Server{Handler: s.router, ReadHeaderTimeout: headerTimeout, MaxHeaderBytes: 8 << 10}
	s.ln.ServerHooks(s.srv)
	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(s.ln) }()
	t.Cleanup(func() {
		s.srv.Close()
		s.ln.CloseAll()
		<-served
	})
	return s
}

// decodeRoute answers a POSTed JSON, form or multipart body with its fields.
var decodeRoute = Route{Method: "POST", Pattern: "/decode", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
	o, err := field.DecodeAny(w, r, 1<<20)
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	respond.JSON(w, r, 200, map[string]any{"keys": o.Keys()})
}}

// rawAnswer is an HTTP answer read off a raw connection.
type rawAnswer struct {
	status int
	header http.Header
	body   apierr.Body
	raw    []byte
	close  bool // the answer said Connection: close
	closed bool // the server closed the connection after it
}

// readAnswer reads one answer from c within d and whether the connection
// was closed after it.
func readAnswer(t *testing.T, c net.Conn, d time.Duration) rawAnswer {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("answer body: %v", err)
	}
	a := rawAnswer{status: resp.StatusCode, header: resp.Header, raw: raw, close: resp.Close}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("%d answer is not JSON: %q", resp.StatusCode, raw)
	}
	_, err = br.ReadByte()
	a.closed = errors.Is(err, io.EOF) || isReset(err)
	if !a.closed {
		t.Logf("after the answer: %v", err)
	}
	return a
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// wantStandard checks a standard error answer that closed its connection.
func wantStandard(t *testing.T, a rawAnswer, status int, fragment string) {
	t.Helper()
	if a.status != status || a.body.StatusCode != status || a.body.Error == "" || !strings.Contains(a.body.Message, fragment) {
		t.Fatalf("answer %d %q, want %d with the standard body mentioning %q", a.status, a.raw, status, fragment)
	}
	if a.header.Get("Content-Type") != "application/json" || !a.close || !a.closed {
		t.Fatalf("answer %d: Content-Type %q, Connection: close %v, closed %v", status, a.header.Get("Content-Type"), a.close, a.closed)
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestNetHTTPAnswersUseStandardBody: what net/http answers before any
// handler runs carries the standard body, and the connection closes.
func TestNetHTTPAnswersUseStandardBody(t *testing.T) {
	s := startServer(t, nil, 500*time.Millisecond, decodeRoute)
	tests := []struct {
		name     string
		request  string
		status   int
		fragment string
	}{
		{"headers too large", "GET /decode HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n", 431, "8 KiB"},
		{"malformed request line", "GARBAGE\r\n\r\n", 400, "Malformed HTTP request"},
		{"missing Host", "GET /decode HTTP/1.1\r\n\r\n", 400, "missing required Host header"},
		// net/http answers 501; the framing check refuses it first, as the edge does.
		{"unknown transfer coding", "POST /decode HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400, "a Transfer-Encoding other than chunked"},
		{"unknown expectation", "POST /decode HTTP/1.1\r\nHost: x\r\nExpect: the-unexpected\r\nContent-Length: 2\r\n\r\n{}", 417, "Expect"},
		{"headers that stop arriving", "GET /decode HTTP/1.1\r\nHost: x\r\nX-Half", 408, "not received in time"},
		{"request line that stops arriving", "GET /deco", 408, "not received in time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s.addr)
			if _, err := io.WriteString(c, tc.request); err != nil {
				t.Fatal(err)
			}
			wantStandard(t, readAnswer(t, c, 10*time.Second), tc.status, tc.fragment)
		})
	}
	// A keep-alive connection's second request is watched as its first:
	// after a handler's answer, net/http's own is rewritten again.
	c := dial(t, s.addr)
	io.WriteString(c, "POST /decode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"a\":1}\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	io.WriteString(c, "NOT HTTP\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"statusCode":400`) {
		t.Fatalf("second request: %d %q", resp.StatusCode, body)
	}
}

// trickle writes p to c one byte every interval until done is closed.
func trickle(c net.Conn, p []byte, interval time.Duration, done <-chan struct{}) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for _, b := range p {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		if _, err := c.Write([]byte{b}); err != nil {
			return
		}
	}
}

// TestSlowBodyIs408: a body slower than the minimum rate gets 408 with the
// standard body and a closed connection, through every decoder; one that
// keeps the rate is read whole, and a full-duplex stream is exempt.
func TestSlowBodyIs408(t *testing.T) {
	rate := &BodyRate{Grace: time.Second, MinRate: 200}
	duplex := Route{Method: "POST", Pattern: "/duplex", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			apierr.Write(w, r, err)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			apierr.Write(w, r, err)
			return
		}
		respond.JSON(w, r, 200, map[string]int{"bytes": len(b)})
	}}
	s := startServer(t, rate, 10*time.Second, decodeRoute, duplex)
	head := func(path, ct string, n int) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", path, ct, n)
	}
	mp := "--b\r\nContent-Disposition: form-data; name=\"html\"\r\n\r\n" + strings.Repeat("x", 400) + "\r\n--b--\r\n"
	tests := []struct {
		name, ct, body string
	}{
		{"json", "application/json", `{"html":"` + strings.Repeat("x", 400) + `"}`},
		{"urlencoded", "application/x-www-form-urlencoded", "html=" + strings.Repeat("x", 400)},
		{"multipart", "multipart/form-data; boundary=b", mp},
	}
	for _, tc := range tests {
		t.Run(tc.name+" too slow", func(t *testing.T) {
			c := dial(t, s.addr)
			io.WriteString(c, head("/decode", tc.ct, len(tc.body))+tc.body[:20])
			done := make(chan struct{})
			defer close(done)
			// 20 bytes a second, a tenth of the minimum.
			go trickle(c, []byte(tc.body[20:]), 50*time.Millisecond, done)
			wantStandard(t, readAnswer(t, c, 20*time.Second), 408, "not received in time")
		})
		t.Run(tc.name+" at the rate", func(t *testing.T) {
			c := dial(t, s.addr)
			io.WriteString(c, head("/decode", tc.ct, len(tc.body)))
			done := make(chan struct{})
			defer close(done)
			// About 2,000 bytes a second: ten times the minimum, so that
			// a busy machine's late ticks cannot bring it below.
			go func() {
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for rest := tc.body; rest != ""; rest = rest[min(20, len(rest)):] {
					select {
					case <-done:
						return
					case <-tick.C:
					}
					io.WriteString(c, rest[:min(20, len(rest))])
				}
			}()
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("answer %v %v", resp, err)
			}
		})
	}
	t.Run("full duplex", func(t *testing.T) {
		c := dial(t, s.addr)
		body := strings.Repeat("0123456789", 3)
		io.WriteString(c, head("/duplex", "application/octet-stream", len(body))+body[:2])
		done := make(chan struct{})
		defer close(done)
		// 10 B/s for 2.8 s: far past the grace, at a twentieth of the rate.
		go trickle(c, []byte(body[2:]), 100*time.Millisecond, done)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("answer %v %v", resp, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if strings.TrimSpace(string(b)) != `{"bytes":30}` {
			t.Fatalf("duplex body %s", b)
		}
	})
}

func TestBodyRateDeadline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := BodyRate{Grace: 10 * time.Second, MinRate: 4096}
	tests := []struct {
		n    int64
		want time.Duration
	}{
		{0, 10 * time.Second},
		{4096, 11 * time.Second},
		{6144, 11500 * time.Millisecond},
		{7 << 20, 10*time.Second + 1792*time.Second},
		{1 << 62, 10*time.Second + (1<<32)*time.Second}, // saturated, not wrapped around
	}
	for _, tc := range tests {
		if got := r.Deadline(start, tc.n).Sub(start); got != tc.want {
			t.Errorf("Deadline(%d) = %v after the start, want %v", tc.n, got, tc.want)
		}
	}
	for _, bad := range []BodyRate{{}, {Grace: time.Second}, {MinRate: 1}, {Grace: time.Second, MinRate: -1}} {
		if bad.Validate() == nil {
			t.Errorf("%+v is valid", bad)
		}
	}
}

// TestWaitForHandlers: Wait returns when the last request ends, or with
// the count still running when its context ends first.
func TestWaitForHandlers(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := startServer(t, nil, time.Second, Route{Method: "GET", Pattern: "/hold", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}})
	go http.Get("http://" + s.addr + "/hold")
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	n, err := s.router.Wait(ctx)
	cancel()
	if n != 1 || err == nil {
		t.Fatalf("Wait with a request running: %d, %v", n, err)
	}
	close(release)
	if n, err := s.router.Wait(context.Background()); n != 0 || err != nil {
		t.Fatalf("Wait after the request: %d, %v", n, err)
	}
}

// FuzzParseOwnAnswer: the recognizer never panics and only takes whole
// HTTP/1.x error answers.
func FuzzParseOwnAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large",
		"HTTP/1.1 400 Bad Request: missing required Host header\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request: missing required Host header",
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 400 Bad",
		"HTTP/1.1 4000\r\n\r\n",
		"\x89PNG\r\n\x1a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		proto, code, detail, ok := ParseOwnAnswer(p)
		if !ok {
			return
		}
		if code < 400 || code > 599 || (proto != "HTTP/1.1" && proto != "HTTP/1.0") || !strings.HasPrefix(string(p), proto+" ") {
			t.Fatalf("%q: %s %d", p, proto, code)
		}
		for _, c := range []byte(detail) {
			if c < 0x20 || c >= 0x7f {
				t.Fatalf("detail %q is not printable", detail)
			}
		}
	})
}
