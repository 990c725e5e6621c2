package origins_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/edge/origins"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// wait bounds every wait for something that must happen; the tests count
// rounds of checks, never time.
const wait = 30 * time.Second

// origin is an origin on loopback that can be stopped (its listener and
// connections closed, as when its process ends) and started again on the
// same address.
type origin struct {
	t        *testing.T
	addr     string
	handler  http.Handler
	healthz  atomic.Int64
	requests atomic.Int64

	mu  sync.Mutex
	srv *httptest.Server
}

func newOrigin(t *testing.T) *origin {
	t.Helper()
	o := &origin{t: t}
	o.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == origins.DefaultHealthPath {
			o.healthz.Add(1)
			w.Write([]byte(`{"status":"ok"}`))
			return
		}
		o.requests.Add(1)
		w.Write([]byte("ok"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.addr = ln.Addr().String()
	o.serve(ln)
	t.Cleanup(o.stop)
	return o
}

func (o *origin) url() string { return "http://" + o.addr }

func (o *origin) serve(ln net.Listener) {
	srv := httptest.NewUnstartedServer(o.handler)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	o.mu.Lock()
	o.srv = srv
	o.mu.Unlock()
}

// stop closes the listener and every connection.
func (o *origin) stop() {
	o.mu.Lock()
	srv := o.srv
	o.srv = nil
	o.mu.Unlock()
	if srv != nil {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// start listens again on the same address.
func (o *origin) start() {
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		o.t.Fatalf("listen again on %s: %v", o.addr, err)
	}
	o.serve(ln)
}

func newPool(t *testing.T, tune func(*origins.Config), urls ...string) (*origins.Pool, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := origins.DefaultConfig()
	cfg.URLs = urls
	cfg.Registerer = reg
	// A dead origin refuses at once; a live one has all the time it needs
	// on a loaded machine.
	cfg.Timeout = wait
	if tune != nil {
		tune(&cfg)
	}
	p, err := origins.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, reg
}

func waitState(t *testing.T, p *origins.Pool, o *origins.Origin, up bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := p.Wait(ctx, o, up); err != nil {
		t.Fatal(err)
	}
}

func ups(p *origins.Pool) []bool {
	var s []bool
	for _, o := range p.Origins() {
		s = append(s, o.Up())
	}
	return s
}

func gauge(t *testing.T, reg *prometheus.Registry, name, origin string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if origin != "" && labels["origin"] != origin {
				continue
			}
			if m.Gauge != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s{origin=%q}", name, origin)
	return 0
}

func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func TestCheckURLs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		urls  []string
		want  error
		names []string // in the message
	}{
		{"one", []string{"http://127.0.0.1:8081"}, nil, nil},
		{"several", []string{"http://10.0.0.1:8081", "https://origin.example.com/base/", "http://10.0.0.2:8081"}, nil, nil},
		{"none", nil, origins.ErrNoOrigin, nil},
		{"not a URL", []string{"http://ok:1", "localhost:8081"}, origins.ErrBadURL, []string{`"localhost:8081"`}},
		{"each bad one named", []string{"ftp://x", "http://ok:1", "http://", ""}, origins.ErrBadURL, []string{`"ftp://x"`, `"http://"`, `""`}},
		{"same spelling twice", []string{"http://a:1", "http://a:1"}, origins.ErrDuplicate, []string{`"http://a:1"`}},
		{"same origin spelled twice", []string{"http://A:80/", "http://a"}, origins.ErrDuplicate, []string{`"http://A:80/"`, `"http://a"`}},
		{"another base path is another origin", []string{"http://a/x", "http://a/y"}, nil, nil},
		{"another port is another origin", []string{"http://a:1", "http://a:2"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := origins.CheckURLs(tc.urls)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("CheckURLs(%q) = %v, want %v", tc.urls, err, tc.want)
			}
			for _, n := range tc.names {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("%v does not name %s", err, n)
				}
			}
			if strings.Contains(fmt.Sprint(err), `"http://ok:1"`) {
				t.Errorf("%v names a valid URL", err)
			}
		})
	}
}

// TestChecks: an origin is down after two failed checks in a row, not
// one, and up again after one that passes; the metrics follow.
func TestChecks(t *testing.T) {
	a, b := newOrigin(t), newOrigin(t)
	p, reg := newPool(t, nil, a.url(), b.url())
	ctx := context.Background()
	oa := p.Origins()[0]

	p.CheckNow(ctx)
	if !slices.Equal(ups(p), []bool{true, true}) || a.healthz.Load() != 1 || b.healthz.Load() != 1 {
		t.Fatalf("after a round: up %v, checks %d and %d", ups(p), a.healthz.Load(), b.healthz.Load())
	}
	a.stop()
	p.CheckNow(ctx)
	if !oa.Up() {
		t.Fatal("down after one failed check")
	}
	p.CheckNow(ctx)
	if oa.Up() || !p.Origins()[1].Up() {
		t.Fatalf("after two failed checks: up %v", ups(p))
	}
	if g := gauge(t, reg, "pictor_edge_origin_up", a.url()); g != 0 {
		t.Fatalf("up gauge of the dead origin = %v", g)
	}
	if n := counter(t, reg, "pictor_edge_origin_checks_total", "origin", a.url(), "result", "failed"); n != 2 {
		t.Fatalf("%v failed checks counted, want 2", n)
	}
	p.CheckNow(ctx) // a third failure changes nothing
	a.start()
	p.CheckNow(ctx)
	if !oa.Up() {
		t.Fatal("still down after a check that passed")
	}
	if g := gauge(t, reg, "pictor_edge_origin_up", a.url()); g != 1 {
		t.Fatalf("up gauge of the origin back = %v", g)
	}
	if p.Rounds() != 5 {
		t.Fatalf("%d rounds counted, want 5", p.Rounds())
	}
}

// TestUnhealthyAnswer: an origin that answers its health check with
// anything but 200 (starting, draining) fails it.
func TestUnhealthyAnswer(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusServiceUnavailable)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) }))
	defer srv.Close()
	b := newOrigin(t)
	p, _ := newPool(t, nil, srv.URL, b.url())
	p.CheckNow(context.Background())
	p.CheckNow(context.Background())
	if !slices.Equal(ups(p), []bool{false, true}) {
		t.Fatalf("up %v after two 503s", ups(p))
	}
	status.Store(http.StatusOK)
	p.CheckNow(context.Background())
	if !slices.Equal(ups(p), []bool{true, true}) {
		t.Fatalf("up %v after a 200", ups(p))
	}
}

// get sends a GET of path to o through the pool's attempt bookkeeping.
func get(p *origins.Pool, o *origins.Origin, path string) (origins.Failure, error) {
	a := p.Begin(o)
	resp, err := http.Get(o.URL() + path)
	if err == nil {
		resp.Body.Close()
	}
	return a.Done(context.Background(), err), err
}

// TestPassive: a request that cannot connect takes its origin out at once,
// without waiting for checks; an answer to one sent after that brings it
// back, one sent before does not.
func TestPassive(t *testing.T) {
	a, b := newOrigin(t), newOrigin(t)
	p, reg := newPool(t, nil, a.url(), b.url())
	oa := p.Origins()[0]
	before := p.Begin(oa) // a request in flight while the origin stops accepting
	a.stop()
	if f, err := get(p, oa, "/v1/x"); f != origins.ConnectFailed {
		t.Fatalf("request to a closed port: %v (%v)", f, err)
	}
	if oa.Up() {
		t.Fatal("up after a refused connection")
	}
	if n := counter(t, reg, "pictor_edge_origin_requests_total", "origin", a.url(), "result", "failed"); n != 1 {
		t.Fatalf("%v failed requests counted", n)
	}
	before.Done(context.Background(), nil)
	if oa.Up() {
		t.Fatal("the answer to a request sent before it went down brought it back")
	}
	a.start()
	if f, err := get(p, oa, "/v1/x"); f != origins.NoFailure {
		t.Fatalf("request to the origin back: %v (%v)", f, err)
	}
	if !oa.Up() {
		t.Fatal("an answer to a request sent after it went down did not bring it back")
	}
}

// TestStaleCheckIgnored: a check that began before a request found the
// origin dead says nothing: it may have been answered before.
func TestStaleCheckIgnored(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	defer srv.Close()
	b := newOrigin(t)
	p, _ := newPool(t, nil, srv.URL, b.url())
	oa := p.Origins()[0]
	done := make(chan struct{})
	go func() { p.CheckNow(context.Background()); close(done) }()
	<-entered
	p.Begin(oa).Done(context.Background(), &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	close(release)
	<-done
	if oa.Up() {
		t.Fatal("a check begun before the failure brought the origin back")
	}
}

// TestOrder: requests take turns over the healthy origins, then try the
// others in order; with none healthy, all of them in order.
func TestOrder(t *testing.T) {
	urls := []string{"http://a", "http://b", "http://c", "http://d"}
	p, _ := newPool(t, nil, urls...)
	all := p.Origins()
	names := func(os []*origins.Origin) string {
		var s []string
		for _, o := range os {
			s = append(s, strings.TrimPrefix(o.URL(), "http://"))
		}
		return strings.Join(s, "")
	}
	var got []string
	for range 5 {
		got = append(got, names(p.Order(nil)))
	}
	if want := []string{"abcd", "bcda", "cdab", "dabc", "abcd"}; !slices.Equal(got, want) {
		t.Fatalf("all healthy: %q, want %q", got, want)
	}
	down := func(o *origins.Origin) {
		p.Begin(o).Done(context.Background(), &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	}
	down(all[1])
	down(all[3])
	got = nil
	for range 3 {
		got = append(got, names(p.Order(nil)))
	}
	if got[0] == got[1] || got[0] != got[2] || !slices.Contains([]string{"acbd", "cabd"}, got[0]) || !slices.Contains([]string{"acbd", "cabd"}, got[1]) {
		t.Fatalf("b and d down: %q, want acbd and cabd in turn", got)
	}
	down(all[0])
	down(all[2])
	if got := names(p.Order(nil)); got != "abcd" {
		t.Fatalf("none healthy: %q, want abcd", got)
	}
	var buf [8]*origins.Origin
	if got := p.Order(buf[:0]); &got[0] != &buf[0] {
		t.Fatal("Order did not use the buffer given")
	}
}

// TestNext: the purge subscriber's choice: the next healthy origin after
// the one it followed, that one again if it is the only one, and each in
// turn when none is healthy.
func TestNext(t *testing.T) {
	p, _ := newPool(t, nil, "http://a", "http://b", "http://c")
	a, b, c := p.Origins()[0], p.Origins()[1], p.Origins()[2]
	down := func(o *origins.Origin) {
		p.Begin(o).Done(context.Background(), &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	}
	for _, tc := range []struct {
		name        string
		after, want *origins.Origin
	}{
		{"first", nil, a},
		{"after a", a, b},
		{"after c", c, a},
	} {
		if got := p.Next(tc.after); got != tc.want {
			t.Errorf("all healthy, %s: %v, want %v", tc.name, got, tc.want)
		}
	}
	down(b)
	if got := p.Next(a); got != c {
		t.Errorf("b down, after a: %v, want c", got)
	}
	down(c)
	if got := p.Next(a); got != a {
		t.Errorf("only a healthy, after a: %v, want a", got)
	}
	if got := p.Next(nil); got != a {
		t.Errorf("only a healthy, first: %v, want a", got)
	}
	down(a)
	if got := []*origins.Origin{p.Next(a), p.Next(b), p.Next(c)}; !slices.Equal(got, []*origins.Origin{b, c, a}) {
		t.Errorf("none healthy: %v, want each in turn", got)
	}
}

// TestDo: which failures go to the next origin, and how often.
func TestDo(t *testing.T) {
	dial := &url.Error{Op: "Get", URL: "http://a", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	reset := &url.Error{Op: "Post", URL: "http://a", Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
	eof := &url.Error{Op: "Get", URL: "http://a", Err: io.EOF}
	other := &url.Error{Op: "Get", URL: "http://a", Err: errors.New("malformed HTTP response")}
	canceled := &url.Error{Op: "Get", URL: "http://a", Err: context.Canceled}
	answer := &http.Response{StatusCode: 500}
	for _, tc := range []struct {
		name      string
		fails     []error // of the first attempts; then an answer
		retry     func(origins.Failure) bool
		attempts  int
		answered  bool
		failovers float64
	}{
		{"answered at once", nil, origins.Unsent, 1, true, 0},
		{"a 500 is an answer", nil, origins.Idempotent, 1, true, 0},
		{"dial failed: any request", []error{dial}, origins.Unsent, 2, true, 1},
		{"dial failed twice", []error{dial, dial}, origins.Unsent, 3, true, 2},
		{"dial failed everywhere", []error{dial, dial, dial}, origins.Unsent, 3, false, 2},
		{"reset: not a POST", []error{reset}, origins.Unsent, 1, false, 0},
		{"reset: a GET", []error{reset}, origins.Idempotent, 2, true, 1},
		{"closed: a GET", []error{eof}, origins.Idempotent, 2, true, 1},
		{"other failure", []error{other}, origins.Idempotent, 1, false, 0},
		{"canceled", []error{canceled}, origins.Idempotent, 1, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, reg := newPool(t, nil, "http://a", "http://b", "http://c")
			var tried []string
			resp, err := p.Do(context.Background(), func(o *origins.Origin) (*http.Response, error) {
				tried = append(tried, o.URL())
				if n := len(tried); n <= len(tc.fails) {
					return nil, tc.fails[n-1]
				}
				return answer, nil
			}, tc.retry)
			if len(tried) != tc.attempts || (resp != nil) != tc.answered || (err == nil) != tc.answered {
				t.Fatalf("tried %q, answer %v, error %v", tried, resp, err)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(tried)))) != len(tried) {
				t.Fatalf("an origin was tried twice: %q", tried)
			}
			if !tc.answered && err != tc.fails[len(tried)-1] {
				t.Fatalf("error %v, want the last attempt's", err)
			}
			if n := counter(t, reg, "pictor_edge_origin_failovers_total"); n != tc.failovers {
				t.Fatalf("%v failovers counted, want %v", n, tc.failovers)
			}
		})
	}
}

// TestClassify: net/http's own errors, from real connections on loopback,
// are told apart as Do needs.
func TestClassify(t *testing.T) {
	// rawOrigin accepts, reads the request head, then does what end says.
	rawOrigin := func(end func(*net.TCPConn)) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				buf := make([]byte, 4096)
				c.Read(buf)
				end(c.(*net.TCPConn))
			}
		}()
		return "http://" + ln.Addr().String()
	}
	resetter := rawOrigin(func(c *net.TCPConn) { c.SetLinger(0); c.Close() })
	closer := rawOrigin(func(c *net.TCPConn) { c.Close() })
	garbler := rawOrigin(func(c *net.TCPConn) { c.Write([]byte("NOT HTTP\r\n\r\n")); c.Close() })
	canceledCtx, cancel := context.WithCancel(context.Background())
	cancel()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		url  string
		want origins.Failure
	}{
		{"connection refused", context.Background(), "http://" + apitest.ClosedAddr(t), origins.ConnectFailed},
		{"connection reset", context.Background(), resetter, origins.ConnectionReset},
		{"connection closed", context.Background(), closer, origins.ConnectionClosed},
		{"malformed answer", context.Background(), garbler, origins.OtherFailure},
		{"canceled", canceledCtx, resetter, origins.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(tc.ctx, http.MethodGet, tc.url+"/x", nil)
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatal("answered")
			}
			if got := origins.Classify(err); got != tc.want {
				t.Fatalf("Classify(%v) = %v, want %v", err, got, tc.want)
			}
		})
	}
}

// TestCheckerRounds: once started, the pool checks on its own: an origin
// that stops is down within three rounds of checks (the one in flight, then
// two that fail), and up again within two once it is back. Counted in
// rounds, not time, and waited for on the pool's changes.
func TestCheckerRounds(t *testing.T) {
	a, b := newOrigin(t), newOrigin(t)
	p, _ := newPool(t, func(c *origins.Config) { c.Interval = 10 * time.Millisecond }, a.url(), b.url())
	oa := p.Origins()[0]
	p.Start()
	p.Start() // a second Start does nothing
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for p.Rounds() < 1 {
		select {
		case <-ctx.Done():
			t.Fatal("no round of checks")
		case <-time.After(time.Millisecond):
		}
	}
	a.stop()
	from := p.Rounds()
	waitState(t, p, oa, false)
	if n := p.Rounds() - from; n > 3 {
		t.Fatalf("down after %d rounds", n)
	}
	a.start()
	from = p.Rounds()
	waitState(t, p, oa, true)
	if n := p.Rounds() - from; n > 2 {
		t.Fatalf("up after %d rounds", n)
	}
	p.Stop()
	p.Stop()
}

// TestLoneOriginNotChecked: with one origin there is nothing to choose:
// it is not checked, and always tried.
func TestLoneOriginNotChecked(t *testing.T) {
	a := newOrigin(t)
	p, _ := newPool(t, func(c *origins.Config) { c.Interval = time.Millisecond }, a.url())
	p.Start()
	p.Stop()
	if n := a.healthz.Load(); n != 0 {
		t.Fatalf("a lone origin was checked %d times", n)
	}
	p.Begin(p.Origins()[0]).Done(context.Background(), &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	if got := p.Order(nil); len(got) != 1 || got[0].Up() {
		t.Fatalf("order %v", got)
	}
}
