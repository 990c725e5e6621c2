package edge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// Tests of the edge against clients that misbehave: malformed framing,
// slow senders, too many connections, and of a shutdown they cannot hold up.

// recordingOrigin reads every request's body whole and answers 200 with
// its length; it remembers the paths it was asked for.
type recordingOrigin struct {
	*httptest.Server
	mu    sync.Mutex
	paths []string
}

func newRecordingOrigin(t testing.TB) *recordingOrigin {
	o := &recordingOrigin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.paths = append(o.paths, r.URL.Path)
		o.mu.Unlock()
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest) // the edge must never relay this one
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"received":%d}`, n)
	}))
	t.Cleanup(o.Close)
	return o
}

// forget clears the paths asked so far.
func (o *recordingOrigin) forget() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.paths = nil
}

func (o *recordingOrigin) asked(path string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range o.paths {
		if p == path {
			return true
		}
	}
	return false
}

// newTunedEdge is newTestEdge with tune applied to the configuration.
func newTunedEdge(t testing.TB, origin string, tune func(*Config)) *Edge {
	t.Helper()
	cfg := DefaultConfig()
	cfg.OriginURL = origin
	cfg.CacheDir = filepath.Join(t.TempDir(), "cache")
	cfg.CacheMem = 16 << 20
	cfg.CacheDisk = 64 << 20
	if tune != nil {
		tune(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.Stop(ctx)
	})
	return e
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	return dialFrom(t, addr, "")
}

// dialFrom connects from a loopback source address (127.0.0.x), or any
// when from is "".
func dialFrom(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 10 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return c
}

// answer is a response read off a raw connection.
type answer struct {
	*apitest.Response
	close bool // Connection: close (net/http takes it out of the header)
}

// readResponse reads one response off br, body included.
func readResponse(t *testing.T, br *bufio.Reader) answer {
	t.Helper()
	r, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatalf("response body: %v", err)
	}
	return answer{Response: &apitest.Response{Status: r.StatusCode, Header: r.Header, Body: body}, close: r.Close}
}

// waitFor polls cond every 10 ms until it holds, failing after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		<-tick.C
	}
}

// smuggled is the request hidden after a malformed one; its credentials
// must reach neither the origin nor the logs.
const smuggled = apitest.Smuggled

// TestMalformedFraming runs the raw-socket framing table both tiers share
// (apitest.MalformedFraming; TestHostileOriginFraming runs it against the
// origin's port) against the edge: a request whose framing is malformed or
// ambiguous is answered 400 with the standard body naming the problem and
// the connection is closed: the request written after it on the same
// connection is never read, let alone relayed. Whoever refuses it (the
// connection's framing check, fasthttp while parsing, the forwarder
// reading the body), the client sees the same. Credentials in the refused
// bytes never reach the logs. The table's well-framed requests are relayed
// whole, and the connection serves the next request.
func TestMalformedFraming(t *testing.T) {
	logs := apitest.CaptureLogs(t)
	o := newRecordingOrigin(t)
	e := newTunedEdge(t, o.URL, nil)
	addr := strings.TrimPrefix(startEdge(t, e), "http://")
	for _, tc := range apitest.MalformedFraming(smuggled) {
		t.Run(tc.Name, func(t *testing.T) {
			o.forget()
			c := dial(t, addr)
			if _, err := io.WriteString(c, tc.Request); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			r := readResponse(t, br)
			apitest.WantMessage(t, apitest.WantError(t, r.Response, http.StatusBadRequest), "Malformed HTTP request: "+tc.Reason.Error())
			if !r.close {
				t.Error("no Connection: close")
			}
			apitest.WantClosed(t, c, br)
			if o.asked(apitest.SmuggledPath) {
				t.Fatal("the smuggled request reached the origin")
			}
		})
	}
	for _, tc := range apitest.MalformedAfterFollowUp(smuggled) {
		t.Run(tc.Name, func(t *testing.T) {
			o.forget()
			c := dial(t, addr)
			io.WriteString(c, tc.Request)
			br := bufio.NewReader(c)
			apitest.WantStatus(t, readResponse(t, br).Response, 200)
			r := readResponse(t, br)
			apitest.WantMessage(t, apitest.WantError(t, r.Response, http.StatusBadRequest), "Malformed HTTP request: "+tc.Reason.Error())
			if !r.close {
				t.Error("no Connection: close")
			}
			apitest.WantClosed(t, c, br)
			if o.asked(apitest.SmuggledPath) {
				t.Fatal("the smuggled request reached the origin")
			}
		})
	}
	for _, tc := range apitest.WellFramed() {
		t.Run("well framed: "+tc.Name, func(t *testing.T) {
			c := dial(t, addr)
			io.WriteString(c, tc.Request+apitest.FollowUp)
			br := bufio.NewReader(c)
			r := readResponse(t, br)
			apitest.WantStatus(t, r.Response, 200)
			if want := fmt.Sprintf(`{"received":%d}`, tc.Body); string(r.Body) != want {
				t.Fatalf("the origin answered %s, want %s", r.Body, want)
			}
			apitest.WantStatus(t, readResponse(t, br).Response, 200)
		})
	}
	// The edge still serves.
	apitest.WantStatus(t, apitest.Do(t, "http://"+addr, apitest.Request{Method: "GET", Path: "/v1/api-keys"}), 200)
	if strings.Contains(logs.String(), apitest.SmuggledSecret) {
		t.Fatalf("credentials of a refused request in the logs:\n%s", logs.String())
	}
}

// TestUnreadBodyClosesConnection: a request answered without reading its
// body (from the cache, /healthz) closes the connection, since the rest of
// the body would be read as the next request. fasthttp reads at most 8 KiB
// of a body ahead, and nothing of a chunked one.
func TestUnreadBodyClosesConnection(t *testing.T) {
	o := newFakeOrigin(t)
	e := newTestEdge(t, o.URL)
	addr := strings.TrimPrefix(startEdge(t, e), "http://")
	image := "/v1/image/" + testID + ".png"
	if r := get(e, image); r.Response.StatusCode() != 200 {
		t.Fatalf("fill: %d", r.Response.StatusCode())
	}
	fetches := o.gets.Load()
	padding := strings.Repeat("x", 8<<10)
	for _, tt := range []struct {
		name, req string
		status    int
	}{
		{"cached image with a long body", fmt.Sprintf("GET %s HTTP/1.1\r\nHost: e\r\nContent-Length: %d\r\n\r\n%s%s",
			image, len(padding)+len(smuggled), padding, smuggled), 200},
		{"cached image with a chunked body", "GET " + image + " HTTP/1.1\r\nHost: e\r\nTransfer-Encoding: chunked\r\n\r\n" + smuggled, 200},
		{"health check with a chunked body", "GET /healthz HTTP/1.1\r\nHost: e\r\nTransfer-Encoding: chunked\r\n\r\n" + smuggled, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			if _, err := io.WriteString(c, tt.req); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			r := readResponse(t, br)
			apitest.WantStatus(t, r.Response, tt.status)
			if !r.close {
				t.Error("no Connection: close")
			}
			apitest.WantClosed(t, c, br)
		})
	}
	if n := o.gets.Load(); n != fetches {
		t.Fatalf("the origin was asked %d more times: the smuggled request was relayed", n-fetches)
	}
}

// TestImageWithoutFormat: an image path whose extension is empty or holds
// another dot names no format: 404 with the standard body, from the edge
// itself (the origin is not asked, nothing is cached). "<id>." was served
// as PNG, since no extension means PNG.
func TestImageWithoutFormat(t *testing.T) {
	o := newFakeOrigin(t)
	e := newTestEdge(t, o.URL)
	base := startEdge(t, e)
	for _, path := range []string{testID + ".", testID + "..png", testID + ".PNG.", testID + ".png."} {
		t.Run(path, func(t *testing.T) {
			before := o.gets.Load()
			for _, method := range []string{"GET", "HEAD"} {
				r := apitest.Do(t, base, apitest.Request{Method: method, Path: "/v1/image/" + path})
				if method == "HEAD" {
					apitest.WantStatus(t, r, 404)
					continue
				}
				m := apitest.WantError(t, r, 404)
				apitest.WantMessage(t, m, "Image not found")
			}
			if n := o.gets.Load() - before; n != 0 {
				t.Fatalf("the origin was asked %d times", n)
			}
		})
	}
	// The image itself is still served, with or without its extension.
	for _, path := range []string{testID, testID + ".png"} {
		apitest.WantStatus(t, apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/v1/image/" + path}), 200)
	}
}

// TestSlowClients: a client sending its headers or its body too slowly is
// answered 408 with the standard body and closed; a body at a fine rate
// and an idle keep-alive connection are not cut.
func TestSlowClients(t *testing.T) {
	o := newRecordingOrigin(t)
	const (
		headerTimeout = 500 * time.Millisecond
		grace         = 300 * time.Millisecond
		rate          = 64 << 10
	)
	e := newTunedEdge(t, o.URL, func(c *Config) {
		c.HeaderTimeout, c.BodyGrace, c.BodyMinRate = headerTimeout, grace, rate
	})
	addr := strings.TrimPrefix(startEdge(t, e), "http://")

	// send writes head, then chunk every interval until the body is sent or
	// the edge answers; it returns the answer.
	send := func(t *testing.T, head string, chunk []byte, total int, interval time.Duration) (answer, net.Conn, *bufio.Reader) {
		t.Helper()
		c := dial(t, addr)
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		answered := make(chan struct{})
		go func() {
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for sent := 0; sent < total; sent += len(chunk) {
				select {
				case <-answered:
					return
				case <-tick.C:
				}
				if _, err := c.Write(chunk[:min(len(chunk), total-sent)]); err != nil {
					return // closed by the edge
				}
			}
		}()
		br := bufio.NewReader(c)
		r := readResponse(t, br)
		close(answered)
		return r, c, br
	}

	t.Run("headers too slow", func(t *testing.T) {
		r, c, br := send(t, "GET /v1/api-keys HTTP/1.1\r\nHost: e\r\nX-Slow: ", []byte("a"), 1<<20, 50*time.Millisecond)
		apitest.WantError(t, r.Response, http.StatusRequestTimeout)
		apitest.WantClosed(t, c, br)
	})
	t.Run("body stalls", func(t *testing.T) {
		head := "POST /v1/stall HTTP/1.1\r\nHost: e\r\nContent-Length: 1048576\r\n\r\n" + strings.Repeat("x", 16<<10)
		r, c, br := send(t, head, nil, 0, time.Hour)
		apitest.WantError(t, r.Response, http.StatusRequestTimeout)
		apitest.WantClosed(t, c, br)
	})
	t.Run("body below the minimum rate", func(t *testing.T) {
		// 16 KiB/s against 64 KiB/s, after 16 KiB at once (past what
		// fasthttp reads before the handler: the forwarder reads the rest).
		r, c, br := send(t, "POST /v1/trickle HTTP/1.1\r\nHost: e\r\nContent-Length: 1048576\r\n\r\n"+strings.Repeat("x", 16<<10),
			make([]byte, 1<<10), 1<<20, 62*time.Millisecond)
		apitest.WantError(t, r.Response, http.StatusRequestTimeout)
		apitest.WantClosed(t, c, br)
	})
	t.Run("chunked body below the minimum rate", func(t *testing.T) {
		chunk := []byte("400\r\n" + strings.Repeat("y", 1<<10) + "\r\n")
		r, c, br := send(t, "POST /v1/trickle-chunked HTTP/1.1\r\nHost: e\r\nTransfer-Encoding: chunked\r\n\r\n",
			chunk, 1<<20, 62*time.Millisecond)
		apitest.WantError(t, r.Response, http.StatusRequestTimeout)
		apitest.WantClosed(t, c, br)
	})
	t.Run("body at a fine rate", func(t *testing.T) {
		// 320 KiB/s against 64 KiB/s, for about a second: past the grace.
		const size = 320 << 10
		r, _, _ := send(t, fmt.Sprintf("POST /v1/fine HTTP/1.1\r\nHost: e\r\nContent-Length: %d\r\n\r\n", size),
			make([]byte, 16<<10), size, 50*time.Millisecond)
		apitest.WantStatus(t, r.Response, 200)
		if want := fmt.Sprintf(`{"received":%d}`, size); string(r.Body) != want {
			t.Fatalf("the origin answered %s, want %s", r.Body, want)
		}
	})
	t.Run("idle keep-alive connection", func(t *testing.T) {
		c := dial(t, addr)
		br := bufio.NewReader(c)
		for i := range 2 {
			if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: e\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			apitest.WantStatus(t, readResponse(t, br).Response, 200)
			if i == 0 {
				<-time.After(3 * headerTimeout) // idle past the header timeout, not past IdleTimeout
			}
		}
	})
	for _, path := range []string{"/v1/stall", "/v1/trickle", "/v1/trickle-chunked"} {
		if !o.asked(path) {
			t.Errorf("%s never reached the origin: the case did not test the forwarder's limit", path)
		}
	}
}

// TestConnectionLimits: past --max-conns-per-ip a client's next connection
// is answered 429 at once, past --max-conns anyone's is answered 503, both
// with the standard body and Retry-After, and closed; /healthz says
// "overloaded" while at the limit and "ok" once a connection closes.
func TestConnectionLimits(t *testing.T) {
	o := newFakeOrigin(t)
	e := newTunedEdge(t, o.URL, func(c *Config) { c.MaxConns, c.MaxConnsPerIP = 4, 2 })
	addr := strings.TrimPrefix(startEdge(t, e), "http://")
	ln := e.listener()
	healthz := "GET /healthz HTTP/1.1\r\nHost: e\r\n\r\n"

	// A keep-alive client checking health, from 127.0.0.1.
	checker := dial(t, addr)
	checks := bufio.NewReader(checker)
	health := func(t *testing.T) *apitest.Response {
		t.Helper()
		if _, err := io.WriteString(checker, healthz); err != nil {
			t.Fatal(err)
		}
		return readResponse(t, checks).Response
	}
	apitest.WantStatus(t, health(t), 200)

	// refused checks that a new connection from from is answered at once.
	refused := func(t *testing.T, from string, status int) {
		t.Helper()
		c := dialFrom(t, addr, from)
		io.WriteString(c, healthz)
		br := bufio.NewReader(c)
		r := readResponse(t, br)
		apitest.WantError(t, r.Response, status)
		if r.Header.Get("Retry-After") == "" || !r.close {
			t.Errorf("refusal: close %v, headers %v", r.close, r.Header)
		}
		apitest.WantClosed(t, c, br)
	}
	// hold opens a connection that sends half a request.
	hold := func(t *testing.T, from string) net.Conn {
		t.Helper()
		c := dialFrom(t, addr, from)
		io.WriteString(c, "GET /healthz HTTP/1.1\r\n")
		return c
	}

	held := []net.Conn{hold(t, "127.0.0.1")}
	waitFor(t, 10*time.Second, "two connections from 127.0.0.1 admitted", func() bool { return ln.open() == 2 })
	refused(t, "127.0.0.1", http.StatusTooManyRequests)
	apitest.WantStatus(t, health(t), 200) // one address at its limit is not the edge

	held = append(held, hold(t, "127.0.0.2"), hold(t, "127.0.0.3"))
	waitFor(t, 10*time.Second, "four connections admitted", func() bool { return ln.open() == 4 })
	refused(t, "127.0.0.4", http.StatusServiceUnavailable)
	r := health(t)
	apitest.WantStatus(t, r, http.StatusServiceUnavailable)
	if got := strings.TrimSpace(string(r.Body)); got != `{"status":"overloaded"}` {
		t.Fatalf("healthz at the limit: %s", got)
	}

	held[1].Close()
	waitFor(t, 10*time.Second, "a closed connection counted out", func() bool { return ln.open() == 3 })
	apitest.WantStatus(t, health(t), 200)
	// Another address gets in (and brings the edge to its limit again).
	c := dialFrom(t, addr, "127.0.0.4")
	io.WriteString(c, "GET /v1/image/"+testID+".png HTTP/1.1\r\nHost: e\r\n\r\n")
	apitest.WantStatus(t, readResponse(t, bufio.NewReader(c)).Response, 200)
	if m := metric(t, e, `pictor_edge_connections_refused_total{reason="per_ip"}`); m != "1" {
		t.Errorf("per_ip refusals counted %q, want 1", m)
	}
	if m := metric(t, e, `pictor_edge_connections_refused_total{reason="limit"}`); m != "1" {
		t.Errorf("limit refusals counted %q, want 1", m)
	}
}

// metric reads one sample off the edge's /metrics.
func metric(t *testing.T, e *Edge, name string) string {
	t.Helper()
	for line := range strings.SplitSeq(string(get(e, "/metrics").Response.Body()), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// failingListener fails its first accepts as a process out of file
// descriptors does.
type failingListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptErrorsAreRetried: accept failing with EMFILE does not end the
// edge's serving (fasthttp's Serve returns on any accept error but a
// timeout): it retries, and answers once accept works again.
func TestAcceptErrorsAreRetried(t *testing.T) {
	o := newFakeOrigin(t)
	e := newTestEdge(t, o.URL)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &failingListener{Listener: inner}
	ln.fails.Store(8)
	e.cfg.Listener = ln
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := dial(t, inner.Addr().String())
	io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: e\r\n\r\n")
	apitest.WantStatus(t, readResponse(t, bufio.NewReader(c)).Response, 200)
	if ln.fails.Load() >= 0 {
		t.Fatal("accept never failed: the test proves nothing")
	}
}

// TestStopIsBounded: Stop returns once its deadline passes, although a
// client holds a connection with half its headers sent, a request waits on
// an origin that never answers and an image fill waits on it too. It
// cancels the origin requests, closes the connections, names what it cut
// off at warn, and returns no error (a forced end is how a drain ends).
func TestStopIsBounded(t *testing.T) {
	logs := apitest.CaptureLogs(t)
	arrived := make(chan string, 2)
	canceled := make(chan string, 2)
	release := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		select {
		case <-r.Context().Done():
			canceled <- r.URL.Path
		case <-release:
		}
	}))
	defer origin.Close()
	defer close(release) // first: Close waits for the handlers
	e := newTunedEdge(t, origin.URL, func(c *Config) { c.HeaderTimeout = time.Hour })
	addr := strings.TrimPrefix(startEdge(t, e), "http://")

	partial := dial(t, addr)
	io.WriteString(partial, "POST /v1/image HTTP/1.1\r\nHost: e\r\nContent-")
	relayed := dial(t, addr)
	io.WriteString(relayed, "GET /v1/hang HTTP/1.1\r\nHost: e\r\nX-Request-Id: hung-relay\r\n\r\n")
	fill := dial(t, addr)
	io.WriteString(fill, "GET /v1/image/"+testID+".png HTTP/1.1\r\nHost: e\r\nX-Request-Id: hung-fill\r\n\r\n")
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(30 * time.Second):
			t.Fatal("the requests never reached the origin")
		}
	}
	waitFor(t, 10*time.Second, "three connections admitted", func() bool { return e.listener().open() == 3 })

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	stopped := make(chan error, 1)
	began := time.Now()
	go func() { stopped <- e.Stop(ctx) }()
	select {
	case err := <-stopped:
		t.Logf("Stop returned after %v", time.Since(began))
		if err != nil {
			t.Fatalf("Stop: %v", err)
		}
	case <-time.After(time.Second + forceWait + 20*time.Second):
		t.Fatal("Stop did not return")
	}
	for _, c := range []net.Conn{partial, relayed, fill} {
		apitest.WantClosed(t, c, bufio.NewReader(c))
	}
	got := map[string]bool{}
	for range 2 {
		select {
		case p := <-canceled:
			got[p] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("origin requests canceled: %v, want both", got)
		}
	}
	out := logs.String()
	for _, want := range []string{`"msg":"edge drain timed out`, `"connections":3`, `"request_id":"hung-relay","method":"GET","path":"/v1/hang"`,
		`"request_id":"hung-fill","method":"GET","path":"/v1/image/` + testID + `.png"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
}

// TestConfigValidate: every limit refuses a value outside its range and
// names its flag.
func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		tune func(*Config)
		flag string
	}{
		{"no connections", func(c *Config) { c.MaxConns = 0 }, "--max-conns"},
		{"negative per-address limit", func(c *Config) { c.MaxConnsPerIP = -1 }, "--max-conns-per-ip"},
		{"per-address limit above the limit", func(c *Config) { c.MaxConns, c.MaxConnsPerIP = 10, 11 }, "--max-conns-per-ip"},
		{"no header timeout", func(c *Config) { c.HeaderTimeout = 0 }, "--header-timeout"},
		{"negative body grace", func(c *Config) { c.BodyGrace = -time.Second }, "--body-grace"},
		{"no minimum body rate", func(c *Config) { c.BodyMinRate = 0 }, "--body-min-rate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.tune(&cfg)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.flag) {
				t.Fatalf("Validate: %v, want an error naming %s", err, tt.flag)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.MaxConnsPerIP = 0 // no per-address limit
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults without a per-address limit: %v", err)
	}
}

// TestStopRightAfterStart: Stop at once after Start returns, however late
// the scheduler runs the goroutine that serves, stops the edge. Serving
// that began after the drain looked for listeners served forever, and
// Stop waited for it: a `pictor serve` stopped right after it started
// hung until serveUntilDone gave up (one processor makes that order
// likely).
func TestStopRightAfterStart(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	origin := httptest.NewServer(http.NotFoundHandler())
	defer origin.Close()
	for i := range 20 {
		e := newTunedEdge(t, origin.URL, nil)
		startEdge(t, e)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		stopped := make(chan error, 1)
		go func() { stopped <- e.Stop(ctx) }()
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("stop %d: %v", i, err)
			}
		case <-time.After(5*time.Second + forceWait + 10*time.Second):
			t.Fatalf("stop %d right after start did not return", i)
		}
		cancel()
	}
}
