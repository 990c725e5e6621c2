package egress

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestUpstreamRoutes runs requests of a session with an upstream (through
// a real tinyproxy, or direct for its bypass hosts) and of a session
// without one, at the same time, and proves from tinyproxy's log and from
// what the targets received which went through the proxy.
func TestUpstreamRoutes(t *testing.T) {
	tp := startTinyproxy(t)
	plain, secure := newTarget(t, false), newTarget(t, true)
	res := &fakeResolver{answers: map[string][][]string{
		"direct.test":     {{"127.0.0.1"}},
		"a.b.bypass.test": {{"127.0.0.1"}},
		"example.com":     {{"127.0.0.1"}},
	}}
	g, logs := newLoggedGateway(t, res, nil)
	proxied := openSession(t, g, Policy{AllowPrivate: true, Upstream: tinyUpstream(tp, proxyPass, "direct.test", "*.bypass.test", "EXAMPLE.com.")})
	direct := openSession(t, g, Policy{AllowPrivate: true})

	// Every request on a connection of its own, so that each CONNECT is
	// one line of tinyproxy's log.
	base := secure.srv.Client().Transport.(*http.Transport).Clone()
	base.DisableKeepAlives = true
	clients := map[*Session]*http.Client{proxied: proxyClient(t, proxied, base), direct: proxyClient(t, direct, base)}
	pp, sp := plain.port(), secure.port()
	tests := []struct {
		name    string
		s       *Session
		url     string
		tg      *target
		wantVia bool
	}{
		{name: "http through the proxy", s: proxied, url: "http://127.0.0.1:" + pp + "/via-http", tg: plain, wantVia: true},
		{name: "https through the proxy", s: proxied, url: "https://127.0.0.1:" + sp + "/via-https", tg: secure, wantVia: true},
		{name: "name resolved by the proxy", s: proxied, url: "http://localhost:" + pp + "/via-name", tg: plain, wantVia: true},
		{name: "bypass name", s: proxied, url: "http://direct.test:" + pp + "/bypass-name", tg: plain},
		{name: "bypass wildcard", s: proxied, url: "http://a.b.bypass.test:" + pp + "/bypass-wildcard", tg: plain},
		{name: "bypass https", s: proxied, url: "https://example.com:" + sp + "/bypass-https", tg: secure},
		{name: "session without upstream http", s: direct, url: "http://127.0.0.1:" + pp + "/plain-http", tg: plain},
		{name: "session without upstream https", s: direct, url: "https://127.0.0.1:" + sp + "/plain-https", tg: secure},
	}
	// All at once: the two sessions share the gateway and run together.
	errs := make([]error, len(tests))
	var wg sync.WaitGroup
	for i, tc := range tests {
		wg.Go(func() {
			resp, err := clients[tc.s].Get(tc.url)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				errs[i] = fmt.Errorf("status %s: %s", resp.Status, body)
			}
		})
	}
	wg.Wait()
	log := tp.log(t)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatalf("GET %s: %v\ntinyproxy log:\n%s", tc.url, errs[i], log)
			}
			path := tc.url[strings.LastIndexByte(tc.url, '/'):]
			hits := tc.tg.hits(path)
			if len(hits) != 1 {
				t.Fatalf("target got %d requests for %s, want 1", len(hits), path)
			}
			h := hits[0]
			if h.ProxyAuth != "" {
				t.Fatalf("target got Proxy-Authorization %q", h.ProxyAuth)
			}
			wantRemote := "127.0.0.1"
			if tc.wantVia {
				wantRemote = proxyOut
			}
			if h.Remote != wantRemote {
				t.Fatalf("target reached from %s, want %s (%s is tinyproxy's)", h.Remote, wantRemote, proxyOut)
			}
			// tinyproxy adds Via to what it relays in the clear; inside a
			// tunnel it cannot.
			if gotVia := strings.Contains(h.Via, proxyVia); gotVia != (tc.wantVia && tc.tg == plain) {
				t.Fatalf("Via %q", h.Via)
			}
			if tc.tg == plain {
				if inLog := strings.Contains(log, path+" HTTP/1.1"); inLog != tc.wantVia {
					t.Fatalf("request %s in tinyproxy's log: %v, want %v\n%s", path, inLog, tc.wantVia, log)
				}
			}
		})
	}
	t.Run("tinyproxy got exactly the proxied requests", func(t *testing.T) {
		// The bypassed ones (direct.test, a.b.bypass.test, example.com)
		// and the other session's never reached it.
		got := tp.requests(t)
		slices.Sort(got)
		want := []string{
			"CONNECT 127.0.0.1:" + sp + " HTTP/1.1",
			"GET http://127.0.0.1:" + pp + "/via-http HTTP/1.1",
			"GET http://localhost:" + pp + "/via-name HTTP/1.1",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("tinyproxy got %q, want %q", got, want)
		}
	})
	t.Run("names behind the proxy are not resolved", func(t *testing.T) {
		want := map[string]bool{"direct.test": true, "a.b.bypass.test": true, "example.com": true}
		for _, name := range res.calls() {
			if !want[name] {
				t.Fatalf("the session looked up %q, which goes through the proxy", name)
			}
		}
	})
	t.Run("metrics", func(t *testing.T) {
		for _, c := range []struct {
			kind string
			want float64
		}{{kindHTTP, 2}, {kindConnect, 1}} {
			var m dto.Metric
			if err := g.metrics.proxied.WithLabelValues(c.kind, proxyResultOK).Write(&m); err != nil {
				t.Fatal(err)
			}
			if got := m.GetCounter().GetValue(); got != c.want {
				t.Fatalf("proxied{%s,ok} = %v, want %v", c.kind, got, c.want)
			}
		}
	})
	if len(proxied.Blocked()) != 0 || len(direct.Blocked()) != 0 {
		t.Fatalf("blocked: %+v %+v", proxied.Blocked(), direct.Blocked())
	}
	checkNoSecrets(t, "gateway log", logs.String(), proxyPass)
}

// TestUpstreamFailures checks the session's own answer to each way an
// upstream proxy can fail: marked, naming the proxy and the reason, kept as
// a Failure with a *ProxyError (found by Tunnel for a CONNECT, as the
// render looks it up), and never holding the credentials.
func TestUpstreamFailures(t *testing.T) {
	tp := startTinyproxy(t)
	plain := newTarget(t, false)
	closed := freePort(t)
	silent := silentProxy(t)
	res := &fakeResolver{}
	g, logs := newLoggedGateway(t, res, func(c *Config) { c.DialTimeout = 500 * time.Millisecond })
	const wrong = "not-the-Pa55word"
	tests := []struct {
		name       string
		policy     Policy
		connect    bool
		target     string // host:port
		wantStatus int
		wantKind   error
		wantIs     error // also matched, besides wantKind
		wantProxy  string
		wantReason string
	}{
		{
			name:   "wrong password on a tunnel",
			policy: Policy{AllowPrivate: true, Upstream: tinyUpstream(tp, wrong)}, connect: true, target: "127.0.0.1:" + plain.port(),
			wantStatus: 502, wantKind: ErrProxyAuth, wantProxy: tp.addr, wantReason: "proxy refused the credentials (401)",
		},
		{
			name:   "no credentials on http",
			policy: Policy{AllowPrivate: true, Upstream: &Upstream{Host: "127.0.0.1", Port: tp.port}}, target: "127.0.0.1:" + plain.port(),
			wantStatus: 502, wantKind: ErrProxyAuth, wantProxy: tp.addr, wantReason: "proxy requires credentials (407)",
		},
		{
			name:   "no credentials on a tunnel",
			policy: Policy{AllowPrivate: true, Upstream: &Upstream{Host: "127.0.0.1", Port: tp.port}}, connect: true, target: "127.0.0.1:" + plain.port(),
			wantStatus: 502, wantKind: ErrProxyAuth, wantProxy: tp.addr, wantReason: "proxy requires credentials (407)",
		},
		{
			name:   "proxy port closed on http",
			policy: Policy{AllowPrivate: true, Upstream: &Upstream{Host: "127.0.0.1", Port: closed, Username: proxyUser, Password: proxyPass}}, target: "127.0.0.1:" + plain.port(),
			wantStatus: 502, wantKind: ErrProxyUnreachable, wantIs: syscall.ECONNREFUSED, wantProxy: "127.0.0.1:" + strconv.Itoa(closed), wantReason: "proxy refused the connection",
		},
		{
			name:   "proxy port closed on a tunnel",
			policy: Policy{AllowPrivate: true, Upstream: &Upstream{Host: "127.0.0.1", Port: closed, Username: proxyUser, Password: proxyPass}}, connect: true, target: "127.0.0.1:" + plain.port(),
			wantStatus: 502, wantKind: ErrProxyUnreachable, wantIs: syscall.ECONNREFUSED, wantProxy: "127.0.0.1:" + strconv.Itoa(closed), wantReason: "proxy refused the connection",
		},
		{
			name:   "proxy on loopback without AllowPrivate",
			policy: Policy{Upstream: tinyUpstream(tp, proxyPass)}, target: "public.example:80",
			wantStatus: 502, wantKind: ErrProxyBlocked, wantIs: ErrBlockedAddress, wantProxy: tp.addr, wantReason: "proxy is at a loopback address, which is not allowed",
		},
		{
			name:   "proxy named localhost without AllowPrivate",
			policy: Policy{Upstream: &Upstream{Host: "localhost", Port: tp.port, Username: proxyUser, Password: proxyPass}}, connect: true, target: "public.example:443",
			wantStatus: 502, wantKind: ErrProxyBlocked, wantIs: ErrBlockedAddress, wantProxy: "localhost:" + strconv.Itoa(tp.port), wantReason: "proxy's host is a loopback name, which is not allowed",
		},
		{
			name:   "proxy cannot open the tunnel",
			policy: Policy{AllowPrivate: true, Upstream: tinyUpstream(tp, proxyPass)}, connect: true, target: "unresolvable.invalid:443",
			wantStatus: 502, wantKind: ErrProxyFailed, wantProxy: tp.addr, wantReason: "proxy could not open the tunnel (500)",
		},
		{
			name:   "proxy never answers the tunnel",
			policy: Policy{AllowPrivate: true, Upstream: &Upstream{Host: "127.0.0.1", Port: silent, Username: proxyUser, Password: wrong}}, connect: true, target: "127.0.0.1:443",
			wantStatus: 504, wantKind: ErrProxyFailed, wantIs: os.ErrDeadlineExceeded, wantProxy: "127.0.0.1:" + strconv.Itoa(silent), wantReason: "proxy did not answer in time",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openSession(t, g, tc.policy)
			requestsBefore := len(tp.requests(t))
			mark := s.Mark()
			var resp rawResponse
			if tc.connect {
				resp = rawRoundTrip(t, s.Addr(), "CONNECT "+tc.target+" HTTP/1.1", "Host: "+tc.target)
			} else {
				resp = rawRoundTrip(t, s.Addr(), "GET http://"+tc.target+"/failure HTTP/1.1", "Host: "+tc.target)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d %q, want %d", resp.StatusCode, resp.body, tc.wantStatus)
			}
			f, ok := s.Answered(resp.Header.Get(AnswerHeader))
			if !ok {
				t.Fatalf("answer not marked: %v %q", resp.Header, resp.body)
			}
			if tc.connect {
				host, port, _ := strings.Cut(tc.target, ":")
				p, _ := strconv.ParseUint(port, 10, 16)
				if ft, ok := s.Tunnel(host, uint16(p), mark); !ok || ft.Err != f.Err {
					t.Fatalf("Tunnel(%s) = %+v, %v; want the answered failure", tc.target, ft, ok)
				}
			}
			var pe *ProxyError
			if !errors.Is(f.Err, tc.wantKind) || !errors.As(f.Err, &pe) || tc.wantIs != nil && !errors.Is(f.Err, tc.wantIs) {
				t.Fatalf("failure %v, want a *ProxyError matching %v and %v", f.Err, tc.wantKind, tc.wantIs)
			}
			for _, other := range []error{ErrProxyBlocked, ErrProxyUnreachable, ErrProxyAuth, ErrProxyFailed} {
				if other != tc.wantKind && errors.Is(f.Err, other) {
					t.Fatalf("failure %v also matches %v", f.Err, other)
				}
			}
			if pe.Proxy != tc.wantProxy || pe.Reason != tc.wantReason {
				t.Fatalf("ProxyError{Proxy %q, Reason %q}, want %q, %q", pe.Proxy, pe.Reason, tc.wantProxy, tc.wantReason)
			}
			// ProxyFailure finds the proxy's own failures after the mark,
			// not its failures to reach a site.
			if got, ok := s.ProxyFailure(mark); ok != (tc.wantKind != ErrProxyFailed) || ok && got != pe {
				t.Fatalf("ProxyFailure(mark) = %v, %v", got, ok)
			}
			if got, ok := s.ProxyFailure(s.Mark()); ok {
				t.Fatalf("ProxyFailure after the failure = %v", got)
			}
			if f.Authority() != tc.target {
				t.Fatalf("failure for %q, want the target %q", f.Authority(), tc.target)
			}
			if want := tc.wantProxy + ": " + tc.wantReason; !strings.Contains(resp.body, want) {
				t.Fatalf("answer %q does not say %q", resp.body, want)
			}
			checkNoSecrets(t, "answer", fmt.Sprint(resp.Header)+resp.body, proxyPass, wrong)
			checkNoSecrets(t, "failure", f.Err.Error(), proxyPass, wrong)
			if errors.Is(f.Err, ErrProxyBlocked) {
				if r := tp.requests(t); len(r) != requestsBefore {
					t.Fatalf("a refused proxy got requests: %q", r[requestsBefore:])
				}
			}
		})
	}
	if calls := res.calls(); len(calls) != 0 {
		t.Fatalf("targets behind the proxy were looked up: %v", calls)
	}
	checkNoSecrets(t, "gateway log", logs.String(), proxyPass, wrong)
	if !strings.Contains(logs.String(), "egress upstream proxy failed") {
		t.Fatalf("proxy failures not logged:\n%s", logs.String())
	}
}

// silentProxy accepts connections and never answers; it returns its port.
func silentProxy(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// TestUpstreamSiteAnswersRelayed: what the site answers through the proxy,
// a 401 of its own included, is the site's, never the session's.
func TestUpstreamSiteAnswersRelayed(t *testing.T) {
	tp := startTinyproxy(t)
	plain := newTarget(t, false)
	g, _ := newLoggedGateway(t, nil, nil)
	s := openSession(t, g, Policy{AllowPrivate: true, Upstream: tinyUpstream(tp, proxyPass)})
	target := "127.0.0.1:" + plain.port()
	resp := rawRoundTrip(t, s.Addr(), "GET http://"+target+"/unauthorized HTTP/1.1", "Host: "+target, "Proxy-Authorization: Basic cGFnZTpwYWdl")
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get(AnswerHeader) != "" {
		t.Fatalf("site's 401: %d, marker %q", resp.StatusCode, resp.Header.Get(AnswerHeader))
	}
	h := plain.hits("/unauthorized")
	if len(h) != 1 || h[0].Remote != proxyOut || h[0].ProxyAuth != "" {
		t.Fatalf("target hits %+v, want one through tinyproxy without Proxy-Authorization", h)
	}
}

// TestUpstreamTargetRules: through a proxy the session resolves no
// target, but refuses what it can judge without a lookup. The proxy stands
// at a public address (the dial seam connects it to tinyproxy), so that
// only the targets are judged.
func TestUpstreamTargetRules(t *testing.T) {
	tp := startTinyproxy(t)
	res := &fakeResolver{answers: map[string][][]string{"proxy.example": {{"93.184.215.14"}}}}
	hook := &redirectDial{to: tp.addr}
	g, logs := newLoggedGateway(t, res, func(c *Config) { c.Dial = hook.dial })
	up := &Upstream{Host: "proxy.example", Port: 3128, Username: proxyUser, Password: proxyPass}
	internal := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "internal") })
	strict := openSession(t, g, Policy{Upstream: up, InternalHost: "pictor.internal", Internal: internal})
	open := openSession(t, g, Policy{Upstream: up, AllowPrivate: true})
	tests := []struct {
		name     string
		s        *Session
		host     string
		wantErr  error // nil: relayed to the proxy
		wantBody string
	}{
		{name: "private literal", s: strict, host: "10.0.0.1", wantErr: ErrBlockedAddress},
		{name: "loopback spelling", s: strict, host: "0x7f.1", wantErr: ErrBlockedAddress},
		{name: "loopback v6", s: strict, host: "[::1]", wantErr: ErrBlockedAddress},
		{name: "localhost name", s: strict, host: "localhost", wantErr: ErrBlockedAddress},
		{name: "metadata literal", s: strict, host: "169.254.169.254", wantErr: ErrCloudMetadata},
		{name: "metadata name", s: strict, host: "metadata.google.internal", wantErr: ErrCloudMetadata},
		{name: "metadata literal with AllowPrivate", s: open, host: "169.254.169.254", wantErr: ErrCloudMetadata},
		{name: "metadata name with AllowPrivate", s: open, host: "Metadata.Google.Internal.", wantErr: ErrCloudMetadata},
		{name: "public name", s: strict, host: "public.invalid"},
		{name: "loopback literal with AllowPrivate", s: open, host: "127.0.0.1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, connect := range []bool{false, true} {
				before, requestsBefore := len(tc.s.Blocked()), tp.requests(t)
				var resp rawResponse
				if connect {
					resp = rawRoundTrip(t, tc.s.Addr(), "CONNECT "+tc.host+":443 HTTP/1.1", "Host: "+tc.host+":443")
				} else {
					resp = rawRoundTrip(t, tc.s.Addr(), "GET http://"+tc.host+"/rules HTTP/1.1", "Host: "+tc.host)
				}
				blocked := tc.s.Blocked()[before:]
				requests := tp.requests(t)[len(requestsBefore):]
				if tc.wantErr != nil {
					if resp.StatusCode != http.StatusForbidden || len(blocked) != 1 || !errors.Is(blocked[0].Reason, tc.wantErr) {
						t.Fatalf("connect %v: %d %q, blocked %+v; want 403 for %v", connect, resp.StatusCode, resp.body, blocked, tc.wantErr)
					}
					if len(requests) != 0 {
						t.Fatalf("connect %v: a refused target reached tinyproxy: %q", connect, requests)
					}
					continue
				}
				// tinyproxy gets it (and may fail to reach it).
				if len(blocked) != 0 || len(requests) != 1 {
					t.Fatalf("connect %v: %d %q, blocked %+v; tinyproxy got %q", connect, resp.StatusCode, resp.body, blocked, requests)
				}
			}
		})
	}
	t.Run("internal host stays in-process", func(t *testing.T) {
		requestsBefore := len(tp.requests(t))
		resp := rawRoundTrip(t, strict.Addr(), "GET http://pictor.internal/doc HTTP/1.1", "Host: pictor.internal")
		if resp.StatusCode != 200 || resp.body != "internal" || len(tp.requests(t)) != requestsBefore {
			t.Fatalf("internal host: %d %q", resp.StatusCode, resp.body)
		}
	})
	for _, name := range res.calls() {
		if name != "proxy.example" {
			t.Fatalf("looked up %q; only the proxy's name is resolved", name)
		}
	}
	for _, addr := range hook.addrs() {
		if addr != "93.184.215.14:3128" {
			t.Fatalf("dialed %s; only the proxy's checked address is", addr)
		}
	}
	checkNoSecrets(t, "gateway log", logs.String(), proxyPass)
}

// TestUpstreamTLS reaches tinyproxy over TLS (Scheme "https"): trusted
// through Config.ProxyRootCAs, refused otherwise.
func TestUpstreamTLS(t *testing.T) {
	tp := startTinyproxy(t)
	plain := newTarget(t, false)
	front, roots := tlsFront(t, tp.addr)
	port := front.Addr().(*net.TCPAddr).Port
	up := &Upstream{Host: "127.0.0.1", Port: port, Scheme: "https", Username: proxyUser, Password: proxyPass}
	trusting, _ := newLoggedGateway(t, nil, func(c *Config) { c.ProxyRootCAs = roots })
	untrusting, logs := newLoggedGateway(t, nil, nil)
	target := "127.0.0.1:" + plain.port()

	s := openSession(t, trusting, Policy{AllowPrivate: true, Upstream: up})
	resp := rawRoundTrip(t, s.Addr(), "GET http://"+target+"/over-tls HTTP/1.1", "Host: "+target)
	if resp.StatusCode != 200 {
		t.Fatalf("through the TLS proxy: %d %q", resp.StatusCode, resp.body)
	}
	if h := plain.hits("/over-tls"); len(h) != 1 || h[0].Remote != proxyOut || !strings.Contains(h[0].Via, proxyVia) {
		t.Fatalf("target hits %+v, want one through tinyproxy", h)
	}

	s = openSession(t, untrusting, Policy{AllowPrivate: true, Upstream: up})
	resp = rawRoundTrip(t, s.Addr(), "CONNECT "+target+" HTTP/1.1", "Host: "+target)
	f, ok := s.Answered(resp.Header.Get(AnswerHeader))
	var pe *ProxyError
	if resp.StatusCode != 502 || !ok || !errors.As(f.Err, &pe) || pe.Kind != ErrProxyUnreachable || pe.Reason != "TLS handshake with the proxy failed" {
		t.Fatalf("untrusted TLS proxy: %d %q, failure %v", resp.StatusCode, resp.body, f.Err)
	}
	checkNoSecrets(t, "gateway log", logs.String(), proxyPass)
}

// tlsFront terminates TLS (httptest's certificate for 127.0.0.1) in front
// of backend, and returns the listener and the pool that trusts it.
func tlsFront(t *testing.T, backend string) (net.Listener, *x509.CertPool) {
	t.Helper()
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	roots := ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	cert := ts.TLS.Certificates
	ts.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: cert})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				b, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				splice(c, b)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln, roots
}

// TestSetUpstream switches a live session between direct and a proxy: each
// switch ends what the previous route opened, and the next requests take
// the new route.
func TestSetUpstream(t *testing.T) {
	tp := startTinyproxy(t)
	plain := newTarget(t, false)
	echo := echoServer(t)
	g, logs := newLoggedGateway(t, nil, nil)
	s := openSession(t, g, Policy{AllowPrivate: true})
	target := "127.0.0.1:" + plain.port()
	get := func(path string) hit {
		t.Helper()
		resp := rawRoundTrip(t, s.Addr(), "GET http://"+target+path+" HTTP/1.1", "Host: "+target)
		h := plain.hits(path)
		if resp.StatusCode != 200 || len(h) != 1 {
			t.Fatalf("GET %s: %d %q, hits %+v", path, resp.StatusCode, resp.body, h)
		}
		return h[0]
	}
	if h := get("/before"); h.Remote != "127.0.0.1" {
		t.Fatalf("direct request reached from %s", h.Remote)
	}
	tunnel, br := connect(t, s.Addr(), echo)

	if err := s.SetUpstream(&Upstream{Host: "127.0.0.1", Port: tp.port, Bypass: []string{"*"}}); !errors.Is(err, ErrInvalidUpstream) {
		t.Fatalf("SetUpstream(bad bypass) = %v, want ErrInvalidUpstream", err)
	}
	fmt.Fprint(tunnel, "still\n")
	if line, err := br.ReadString('\n'); err != nil || line != "still\n" {
		t.Fatalf("a refused SetUpstream ended the tunnel: %q, %v", line, err)
	}

	if err := s.SetUpstream(tinyUpstream(tp, proxyPass)); err != nil {
		t.Fatal(err)
	}
	// The tunnel opened directly is gone: Chromium cannot carry the next
	// render's requests over it.
	if n, err := br.ReadByte(); err == nil {
		t.Fatalf("direct tunnel still open after SetUpstream: read %q", n)
	}
	if h := get("/through"); h.Remote != proxyOut {
		t.Fatalf("request after SetUpstream reached from %s, want tinyproxy's %s", h.Remote, proxyOut)
	}
	tunnel, br = connect(t, s.Addr(), echo)
	fmt.Fprint(tunnel, "via\n")
	if line, err := br.ReadString('\n'); err != nil || line != "via\n" {
		t.Fatalf("tunnel through tinyproxy: %q, %v", line, err)
	}
	if !strings.Contains(tp.log(t), ": CONNECT "+echo+" HTTP/1.1") {
		t.Fatalf("tunnel not in tinyproxy's log:\n%s", tp.log(t))
	}

	if err := s.SetUpstream(nil); err != nil {
		t.Fatal(err)
	}
	if n, err := br.ReadByte(); err == nil {
		t.Fatalf("proxied tunnel still open after SetUpstream(nil): read %q", n)
	}
	requestsBefore := len(tp.requests(t))
	if h := get("/after"); h.Remote != "127.0.0.1" || len(tp.requests(t)) != requestsBefore {
		t.Fatalf("request after SetUpstream(nil) reached from %s", h.Remote)
	}
	s.Close()
	if err := s.SetUpstream(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetUpstream after Close = %v, want ErrClosed", err)
	}
	checkNoSecrets(t, "gateway log", logs.String(), proxyPass)
}

func TestUpstreamValidate(t *testing.T) {
	ok := Upstream{Host: "proxy.example.com", Port: 3128, Username: "u", Password: "Validate-Pa55"}
	tests := []struct {
		name    string
		mutate  func(*Upstream)
		wantErr bool
	}{
		{name: "name", mutate: func(*Upstream) {}},
		{name: "https", mutate: func(u *Upstream) { u.Scheme = "https" }},
		{name: "empty scheme is http", mutate: func(u *Upstream) { u.Scheme = "" }},
		{name: "ipv4", mutate: func(u *Upstream) { u.Host = "203.0.113.9" }},
		{name: "ipv6 bare", mutate: func(u *Upstream) { u.Host = "2001:db8::9" }},
		{name: "ipv6 brackets", mutate: func(u *Upstream) { u.Host = "[2001:db8::9]" }},
		{name: "idn", mutate: func(u *Upstream) { u.Host = "прокси.example" }},
		{name: "no credentials", mutate: func(u *Upstream) { u.Username, u.Password = "", "" }},
		{name: "empty password", mutate: func(u *Upstream) { u.Password = "" }},
		{name: "utf-8 password", mutate: func(u *Upstream) { u.Password = "pässwörd:with:colons" }},
		{name: "bypass entries", mutate: func(u *Upstream) {
			u.Bypass = []string{"intranet.example.com", "*.corp.example", "10.1.2.3", "2001:db8::1", "[2001:db8::2]", "Host.Example.", "bücher.example"}
		}},
		{name: "empty host", mutate: func(u *Upstream) { u.Host = "" }, wantErr: true},
		{name: "host with port", mutate: func(u *Upstream) { u.Host = "proxy.example.com:3128" }, wantErr: true},
		{name: "host url", mutate: func(u *Upstream) { u.Host = "http://proxy.example.com" }, wantErr: true},
		{name: "metadata host", mutate: func(u *Upstream) { u.Host = "169.254.169.254" }, wantErr: true},
		{name: "metadata name", mutate: func(u *Upstream) { u.Host = "metadata.google.internal" }, wantErr: true},
		{name: "zoned host", mutate: func(u *Upstream) { u.Host = "fe80::1%eth0" }, wantErr: true},
		{name: "port zero", mutate: func(u *Upstream) { u.Port = 0 }, wantErr: true},
		{name: "port too big", mutate: func(u *Upstream) { u.Port = 65536 }, wantErr: true},
		{name: "scheme socks", mutate: func(u *Upstream) { u.Scheme = "socks5" }, wantErr: true},
		{name: "username colon", mutate: func(u *Upstream) { u.Username = "a:b" }, wantErr: true},
		{name: "username newline", mutate: func(u *Upstream) { u.Username = "a\r\nb" }, wantErr: true},
		{name: "password newline", mutate: func(u *Upstream) { u.Password = "Validate\nPa55" }, wantErr: true},
		{name: "password without username", mutate: func(u *Upstream) { u.Username = "" }, wantErr: true},
		{name: "bypass star", mutate: func(u *Upstream) { u.Bypass = []string{"*"} }, wantErr: true},
		{name: "bypass dot suffix", mutate: func(u *Upstream) { u.Bypass = []string{".example.com"} }, wantErr: true},
		{name: "bypass inner star", mutate: func(u *Upstream) { u.Bypass = []string{"a.*.example.com"} }, wantErr: true},
		{name: "bypass star prefix", mutate: func(u *Upstream) { u.Bypass = []string{"*example.com"} }, wantErr: true},
		{name: "bypass port", mutate: func(u *Upstream) { u.Bypass = []string{"example.com:80"} }, wantErr: true},
		{name: "bypass v6 port", mutate: func(u *Upstream) { u.Bypass = []string{"[2001:db8::1]:80"} }, wantErr: true},
		{name: "bypass cidr", mutate: func(u *Upstream) { u.Bypass = []string{"10.0.0.0/8"} }, wantErr: true},
		{name: "bypass wildcard address", mutate: func(u *Upstream) { u.Bypass = []string{"*.10.0.0.1"} }, wantErr: true},
		{name: "bypass url", mutate: func(u *Upstream) { u.Bypass = []string{"http://example.com"} }, wantErr: true},
		{name: "bypass empty", mutate: func(u *Upstream) { u.Bypass = []string{""} }, wantErr: true},
		{name: "bypass too many", mutate: func(u *Upstream) { u.Bypass = make([]string, maxBypass+1) }, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := ok
			tc.mutate(&u)
			err := u.Validate()
			if (err != nil) != tc.wantErr || err != nil && !errors.Is(err, ErrInvalidUpstream) {
				t.Fatalf("Validate(%v) = %v, want error %v", u, err, tc.wantErr)
			}
			if err != nil && u.Password != "" && strings.Contains(err.Error(), u.Password) {
				t.Fatalf("error %q shows the password", err)
			}
			g, _ := newGateway(t, nil)
			s, oerr := g.Open(Policy{Upstream: &u})
			if oerr == nil {
				s.Close()
			}
			if (oerr != nil) != tc.wantErr {
				t.Fatalf("Open = %v, want error %v", oerr, tc.wantErr)
			}
		})
	}
}

func TestBypassMatch(t *testing.T) {
	u := Upstream{Host: "proxy.example", Port: 3128, Bypass: []string{
		"intranet.example.com", "*.corp.example", "10.1.2.3", "2001:db8::1", "bücher.example", "Upper.Example.",
	}}
	up, err := parseUpstream(u)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		want bool
	}{
		{host: "intranet.example.com", want: true},
		{host: "INTRANET.example.com.", want: true},
		{host: "www.intranet.example.com"},
		{host: "example.com"},
		{host: "a.corp.example", want: true},
		{host: "a.b.corp.example", want: true},
		{host: "corp.example"},
		{host: "xcorp.example"},
		{host: "corp.example.evil"},
		{host: "10.1.2.3", want: true},
		{host: "0x0a010203", want: true},
		{host: "10.1.515", want: true},
		{host: "[::ffff:10.1.2.3]", want: true},
		{host: "10.1.2.4"},
		{host: "[2001:db8::1]", want: true},
		{host: "[2001:db8:0::1]", want: true},
		{host: "[2001:db8::2]"},
		{host: "xn--bcher-kva.example", want: true},
		{host: "BÜCHER.example", want: true},
		{host: "upper.example", want: true},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			h, err := parseHost(tc.host)
			if err != nil {
				t.Fatal(err)
			}
			if got := up.bypass.match(h); got != tc.want {
				t.Fatalf("bypass %q = %v, want %v", tc.host, got, tc.want)
			}
		})
	}
}

// TestUpstreamHidesPassword: no way of printing a policy shows the
// password.
func TestUpstreamHidesPassword(t *testing.T) {
	u := Upstream{Host: "proxy.example", Port: 3128, Username: proxyUser, Password: proxyPass}
	p := Policy{Upstream: &u}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("policy", "upstream", u, "pointer", &u)
	for _, text := range []string{
		fmt.Sprint(u), fmt.Sprintf("%v %+v %#v %s", u, u, u, u), fmt.Sprintf("%v %+v %#v", &u, &u, &u),
		fmt.Sprintf("%+v %#v", p, p), logged.String(),
	} {
		checkNoSecrets(t, "printed upstream", text, proxyPass)
	}
	if got, want := u.String(), "http://"+proxyUser+":***@proxy.example:3128"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

// FuzzBypassEntry: parsing an entry never panics, and an accepted entry
// that is not a wildcard matches the host it names.
func FuzzBypassEntry(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.com", "10.0.0.1", "[::1]", "::1", "bücher.example", "*", "a:1", "xn--"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		b := bypassList{names: map[string]bool{}, suffixes: map[string]bool{}, addrs: map[netip.Addr]bool{}}
		if err := b.add(entry); err != nil || strings.HasPrefix(entry, "*.") {
			return
		}
		h, err := parseHost(entry)
		if err != nil {
			t.Fatalf("accepted %q that parseHost refuses: %v", entry, err)
		}
		if !b.match(h) {
			t.Fatalf("entry %q does not match its own host", entry)
		}
	})
}
