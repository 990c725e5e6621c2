package egress

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// testTimeout bounds every wait of a test on the network.
const testTimeout = 10 * time.Second

// testConfig is DefaultConfig with logs discarded.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	return cfg
}

// newGateway returns a gateway with its own registry; res may be nil.
func newGateway(t *testing.T, res Resolver) (*Gateway, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := testConfig()
	if res != nil { // nil: the system's resolver, DefaultConfig's
		cfg.Resolver = res
	}
	cfg.Registerer = reg
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, reg
}

// openSession opens a session for p. The tests connect to it from this
// process with clients of their own, not through Session.Dial: a policy
// that names no Peer rule serves any peer (AnyPeer). The tests of the
// rules themselves (peer_test.go) open their sessions with g.Open.
func openSession(t *testing.T, g *Gateway, p Policy) *Session {
	t.Helper()
	if p.Peer.kind == peerDialed {
		p.Peer = AnyPeer()
	}
	s, err := g.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// proxyClient is an http.Client whose every request goes through s and
// that never follows redirects.
func proxyClient(t *testing.T, s *Session, base *http.Transport) *http.Client {
	t.Helper()
	var tr *http.Transport
	if base != nil {
		tr = base.Clone()
	} else {
		tr = &http.Transport{}
	}
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: s.Addr()})
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		Timeout:       testTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// rawResponse is a response read off a raw connection, with its body.
type rawResponse struct {
	*http.Response
	body string
}

// rawRoundTrip writes head (CRLF line ends added) to the proxy on a new
// connection and reads one response.
func rawRoundTrip(t *testing.T, addr string, head ...string) rawResponse {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(testTimeout))
	if _, err := io.WriteString(conn, strings.Join(head, "\r\n")+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	method := strings.SplitN(head[0], " ", 2)[0]
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("read response to %q: %v", head[0], err)
	}
	defer resp.Body.Close()
	if method == http.MethodConnect && resp.StatusCode == http.StatusOK {
		return rawResponse{Response: resp}
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body of %q: %v", head[0], err)
	}
	return rawResponse{Response: resp, body: string(b)}
}

// connect opens a CONNECT tunnel through the proxy and returns the
// connection past the 200, or fails the test. The Host header is target
// unless hostHeader gives one.
func connect(t *testing.T, proxyAddr, target string, hostHeader ...string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", proxyAddr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(testTimeout))
	host := target
	if len(hostHeader) > 0 {
		host = hostHeader[0]
	}
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, host)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %s", target, resp.Status)
	}
	return conn, br
}

// seen is what the echo upstream received.
type seen struct {
	Method     string
	Host       string
	RequestURI string
	Header     http.Header
	Body       string
}

// newUpstream starts a real server that answers with what it received, as
// JSON, and counts its requests.
func newUpstream(t *testing.T) (*httptest.Server, *counter) {
	t.Helper()
	var hits counter
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.add()
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(seen{Method: r.Method, Host: r.Host, RequestURI: r.RequestURI, Header: r.Header, Body: string(b)})
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func decodeSeen(t *testing.T, body string) seen {
	t.Helper()
	var s seen
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("upstream answer %q: %v", body, err)
	}
	return s
}

// port returns the port of a test server URL.
func port(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// echoServer is a real TCP server that echoes every connection.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// redirectDial is a dial hook that records each address and connects to
// to instead: it stands for the public internet the tests cannot reach.
type redirectDial struct {
	to string

	mu     sync.Mutex
	dialed []string
}

func (d *redirectDial) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, addr)
	d.mu.Unlock()
	if d.to == "" {
		return nil, errors.New("test dial hook: no dial expected")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, d.to)
}

func (d *redirectDial) addrs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

// counterValue reads one sample of pictor_egress_requests_total.
func counterValue(t *testing.T, reg *prometheus.Registry, kind, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "pictor_egress_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
