package ogpage

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/egress"
)

// fakeResolver answers the names of a test; other names do not exist.
type fakeResolver map[string][]string

func (r fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	addrs, ok := r[strings.TrimSuffix(host, ".")]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, a := range addrs {
		out = append(out, net.IPAddr{IP: net.IP(netip.MustParseAddr(a).AsSlice())})
	}
	return out, nil
}

// gatewayOptions stand public hosts in for loopback servers: names resolve
// through res, and a dial of a key of public goes to its value instead.
type gatewayOptions struct {
	res    fakeResolver
	public map[string]string // "93.184.215.14:80" → "127.0.0.1:PORT"
}

func newGateway(t *testing.T, o gatewayOptions) *egress.Gateway {
	t.Helper()
	cfg := egress.DefaultConfig()
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Registerer = prometheus.NewRegistry()
	if o.res != nil {
		cfg.Resolver = o.res
	}
	if o.public != nil {
		var d net.Dialer
		cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if to, ok := o.public[addr]; ok {
				addr = to
			}
			return d.DialContext(ctx, network, addr)
		}
	}
	g, err := egress.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// newFetcher returns a fetcher whose egress allows private addresses (so
// that loopback test servers are reachable), then applies mod.
func newFetcher(t *testing.T, g *egress.Gateway, mod func(*Config)) *Fetcher {
	t.Helper()
	if g == nil {
		g = newGateway(t, gatewayOptions{})
	}
	cfg := DefaultConfig()
	cfg.Gateway = g
	cfg.AllowPrivate = true
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Registerer = prometheus.NewRegistry()
	if mod != nil {
		mod(&cfg)
	}
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// echoPage is a page whose head reports, as metas, the request headers
// named and the query.
func echoPage(w http.ResponseWriter, r *http.Request, headers ...string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>echo</title>")
	for _, k := range headers {
		fmt.Fprintf(&b, `<meta name="got-%s" content="%s">`, strings.ToLower(k), html.EscapeString(strings.Join(r.Header.Values(k), ",")))
	}
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, `<meta name="query-%s" content="%s">`, k, html.EscapeString(q.Get(k)))
	}
	b.WriteString("</head><body></body></html>")
	_, _ = w.Write([]byte(b.String()))
}
