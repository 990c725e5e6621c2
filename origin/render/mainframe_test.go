package render

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/egress"
)

// TestClassifyLoad: what a failed main document becomes, from the egress's
// record of its answer or from Chromium's network error. The text is what
// the caller sees: it names the cause and the host asked for, and never an
// address the host resolved to.
func TestClassifyLoad(t *testing.T) {
	answer := func(host string, port uint16, connect bool, err error) *loadError {
		return &loadError{url: "http://x/", answer: &egress.Failure{Host: host, Port: port, Connect: connect, Err: err}}
	}
	chromium := func(u, errorText string) *loadError { return &loadError{url: u, errorText: errorText} }
	opErr := func(op string, err error) error {
		return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, err)}
	}
	tests := []struct {
		name string
		le   *loadError
		want error
		text string
	}{
		{"name that does not resolve", answer("nonexistent.invalid", 80, false,
			fmt.Errorf("%w: nonexistent.invalid: %w", egress.ErrResolve, &net.DNSError{Err: "no such host", Name: "nonexistent.invalid", IsNotFound: true})),
			ErrUnreachable, "could not resolve host nonexistent.invalid"},
		{"connection refused", answer("refused.test", 81, false, fmt.Errorf("%w: %w", egress.ErrDial, opErr("connect", syscall.ECONNREFUSED))),
			ErrUnreachable, "connection refused by refused.test:81"},
		{"tunnel refused", answer("refused.test", 443, true, fmt.Errorf("%w: %w", egress.ErrDial, opErr("connect", syscall.ECONNREFUSED))),
			ErrUnreachable, "connection refused by refused.test:443"},
		{"no route", answer("far.test", 80, false, fmt.Errorf("%w: %w", egress.ErrDial, opErr("connect", syscall.EHOSTUNREACH))),
			ErrUnreachable, "no route to far.test:80"},
		{"dial timeout", answer("slow.test", 80, false, fmt.Errorf("%w: %w", egress.ErrDial, context.DeadlineExceeded)),
			ErrTimeout, "timed out connecting to slow.test:80"},
		{"connection reset", answer("reset.test", 80, false, fmt.Errorf("%w: %w", egress.ErrUpstream, opErr("read", syscall.ECONNRESET))),
			ErrUnreachable, "connection reset by reset.test:80"},
		{"closed without an answer", answer("quiet.test", 80, false, fmt.Errorf("%w: %w", egress.ErrUpstream, io.EOF)),
			ErrUnreachable, "quiet.test:80 closed the connection without answering"},
		{"no answer in time", answer("slow.test", 80, false, fmt.Errorf("%w: %w", egress.ErrUpstream, context.DeadlineExceeded)),
			ErrTimeout, "slow.test:80 did not answer in time"},
		{"not HTTP", answer("odd.test", 80, false, fmt.Errorf("%w: malformed HTTP response", egress.ErrUpstream)),
			ErrUnreachable, "odd.test:80 sent no valid answer"},
		{"name resolving to loopback", answer("private.test", 80, false, &egress.AddressError{Host: "private.test", Addr: netip.MustParseAddr("10.1.2.3"), Range: "private"}),
			ErrBlockedURL, "private.test resolves to a private address"},
		{"loopback literal", answer("127.0.0.1", 80, false, &egress.AddressError{Host: "127.0.0.1", Addr: netip.MustParseAddr("127.0.0.1"), Range: "loopback"}),
			ErrBlockedURL, "127.0.0.1 is a loopback address"},
		{"IPv4-mapped literal", answer("[::ffff:7f00:1]", 80, false, &egress.AddressError{Host: "[::ffff:7f00:1]", Addr: netip.MustParseAddr("127.0.0.1"), Range: "loopback"}),
			ErrBlockedURL, "[::ffff:7f00:1] is a loopback address"},
		{"metadata name", answer("metadata.google.internal", 80, false, &egress.AddressError{Host: "metadata.google.internal", Range: "cloud metadata name", Metadata: true}),
			ErrBlockedURL, "metadata.google.internal is a cloud metadata name"},
		{"https to the internal host", answer("pictor.internal", 443, true, fmt.Errorf("%w: internal host", egress.ErrBlockedScheme)),
			ErrBlockedURL, "pictor.internal:443 is not served over https"},
		{"a document the internal host does not hold", answer("pictor.internal", 80, false, fmt.Errorf("%w: status 404", egress.ErrNotServed)),
			ErrBlockedURL, "pictor.internal serves no such document"},
		{"the session closed", answer("public.test", 80, false, egress.ErrClosed), ErrBrowser, "the egress session closed"},
		{"an answer no longer kept", answer("public.test", 80, false, nil), ErrUnreachable, "public.test:80"},
		{"TLS handshake", chromium("https://plain.test/", "net::ERR_SSL_PROTOCOL_ERROR"),
			ErrUnreachable, "the TLS handshake with plain.test failed (net::ERR_SSL_PROTOCOL_ERROR)"},
		{"certificate", chromium("https://self.test:8443/", "net::ERR_CERT_AUTHORITY_INVALID"),
			ErrUnreachable, "the TLS certificate of self.test:8443 is not valid"},
		{"closed tunnel", chromium("https://gone.test/", "net::ERR_CONNECTION_CLOSED"),
			ErrUnreachable, "gone.test closed the connection without answering"},
		{"tunnel the egress did not explain", chromium("https://odd.test/", "net::ERR_TUNNEL_CONNECTION_FAILED"),
			ErrUnreachable, "could not connect to odd.test"},
		{"the proxy itself", chromium("http://public.test/", "net::ERR_PROXY_CONNECTION_FAILED"), ErrBrowser, "egress proxy"},
		{"anything else", chromium("http://public.test/", "net::ERR_TOO_MANY_REDIRECTS"),
			ErrUnreachable, "public.test could not be loaded (net::ERR_TOO_MANY_REDIRECTS)"},
		{"never the URL's path or query", chromium("http://user:pw@public.test/a?token=s3cret", "net::ERR_CONNECTION_RESET"),
			ErrUnreachable, "connection reset by public.test"},
		{"an unparsable target", &loadError{url: "http://x/", answer: &egress.Failure{Target: "http://[bad/?token=s3cret", Err: egress.ErrInvalidHost}},
			ErrBlockedURL, "the URL is not allowed: its host is not valid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := classify(context.Background(), fmt.Errorf("render: %w", tc.le))
			if !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("%q does not say %q", err, tc.text)
			}
			for _, secret := range []string{"10.1.2.3", "s3cret", "pw@", "user"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("%q gives %q away", err, secret)
				}
			}
		})
	}
}

// failureNet is a small internet for an engine whose renders may not reach
// private addresses: names resolve to public addresses that the dial hook
// sends to loopback servers, each failing its own way.
type failureNet struct {
	site  *httptest.Server // public.test
	plain string           // plain.test:443, a plain HTTP server
	reset string           // reset.test:80, resets every connection
	gone  string           // refused.test, nothing listens

	mu    sync.Mutex
	pages map[string]func(w http.ResponseWriter, r *http.Request)
}

func newFailureNet(t *testing.T) *failureNet {
	t.Helper()
	n := &failureNet{pages: map[string]func(http.ResponseWriter, *http.Request){}}
	n.site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		h := n.pages[r.URL.Path]
		n.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(n.site.Close)
	n.plain = n.site.Listener.Addr().String()
	n.gone = apitest.ClosedAddr(t)
	rl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := rl.Accept()
			if err != nil {
				return
			}
			_ = c.(*net.TCPConn).SetLinger(0)
			_ = c.Close()
		}
	})
	t.Cleanup(func() {
		rl.Close()
		wg.Wait()
	})
	n.reset = rl.Addr().String()
	return n
}

// page serves html at path with status.
func (n *failureNet) page(path string, status int, html string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pages[path] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		io.WriteString(w, "<!DOCTYPE html><body style=\"margin:0\">"+html)
	}
}

func (n *failureNet) redirect(path, to string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pages[path] = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) }
}

func (n *failureNet) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	addrs := map[string]string{
		"public.test": "93.184.216.60", "plain.test": "93.184.216.61", "reset.test": "93.184.216.62",
		"refused.test": "93.184.216.63", "private.test": "127.0.0.1",
	}
	a, ok := addrs[strings.TrimSuffix(host, ".")]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []net.IPAddr{{IP: net.ParseIP(a)}}, nil
}

func (n *failureNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	to, ok := map[string]string{
		"93.184.216.60:80": n.site.Listener.Addr().String(), "93.184.216.61:443": n.plain,
		"93.184.216.62:80": n.reset, "93.184.216.63:80": n.gone, "93.184.216.63:443": n.gone,
	}[addr]
	if !ok {
		return nil, fmt.Errorf("test dial: no route to %s", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, to)
}

// TestMainDocumentVerdicts renders on a real Chromium: a main document
// that does not load, at first, after a redirect or after the page sends
// itself away, fails with the package's error and no output; one that
// loads is captured, whatever its status and however its subframes fare.
func TestMainDocumentVerdicts(t *testing.T) {
	n := newFailureNet(t)
	e := newEngine(t, func(c *Config) {
		gcfg := egress.DefaultConfig()
		gcfg.Resolver, gcfg.Dial = n, n.dial
		gw, err := egress.New(gcfg)
		if err != nil {
			t.Fatal(err)
		}
		c.Gateway, c.AllowPrivate = gw, false
	})
	n.redirect("/to/unresolvable", "http://nonexistent.invalid/")
	n.redirect("/to/refused-https", "https://refused.test/")
	n.redirect("/to/private", "http://private.test/")
	n.page("/self/inline", 200, `<p>leaving</p><script>location.href = "https://refused.test/"</script>`)
	n.page("/self/after-load", 200, `<p>leaving</p><script>addEventListener("load", () => { location.href = "http://reset.test/"; })</script>`)
	n.page("/own-404", 404, `<div style="width:100px;height:100px;background:rgb(0,0,255)"></div>`)
	n.page("/own-502", 502, `<div style="width:100px;height:100px;background:rgb(0,0,255)"></div>`)
	n.page("/broken-parts", 200, `<div style="width:100px;height:100px;background:rgb(0,0,255)"></div>`+
		`<iframe src="http://nonexistent.invalid/"></iframe><iframe src="https://refused.test/"></iframe>`+
		`<iframe src="http://private.test/"></iframe><img src="http://reset.test/i.png"><img src="https://plain.test/i.png">`)

	tests := []struct {
		name string
		req  Request
		want error // nil: captured, blue at the top left
		text string
	}{
		{"unresolvable", Request{URL: "http://nonexistent.invalid/"}, ErrUnreachable, "could not resolve host nonexistent.invalid"},
		{"unresolvable over https", Request{URL: "https://nonexistent.invalid/"}, ErrUnreachable, "could not resolve host nonexistent.invalid"},
		{"connection refused", Request{URL: "http://refused.test/"}, ErrUnreachable, "connection refused by refused.test:80"},
		{"connection reset", Request{URL: "http://reset.test/"}, ErrUnreachable, "connection reset by reset.test:80"},
		{"TLS handshake", Request{URL: "https://plain.test/"}, ErrUnreachable, "TLS handshake with plain.test failed"},
		{"refused address", Request{URL: "http://private.test/"}, ErrBlockedURL, "private.test resolves to a loopback address"},
		{"refused address over https", Request{URL: "https://private.test/"}, ErrBlockedURL, "private.test resolves to a loopback address"},
		{"refused address as a PDF", Request{URL: "http://private.test/", PDF: &PDFOptions{}}, ErrBlockedURL, "private.test resolves to a loopback address"},
		{"redirect to an unresolvable host", Request{URL: "http://public.test/to/unresolvable"}, ErrUnreachable, "could not resolve host nonexistent.invalid"},
		{"redirect to a refused tunnel", Request{URL: "http://public.test/to/refused-https"}, ErrUnreachable, "connection refused by refused.test:443"},
		{"redirect to a refused address", Request{URL: "http://public.test/to/private"}, ErrBlockedURL, "private.test resolves to a loopback address"},
		{"redirect to an unresolvable host, headers intercepted", Request{URL: "http://public.test/to/unresolvable",
			Headers: map[string]string{"X-Test": "1"}, IdentifyAsService: true}, ErrUnreachable, "could not resolve host nonexistent.invalid"},
		{"redirect to a refused tunnel, headers intercepted", Request{URL: "http://public.test/to/refused-https",
			Headers: map[string]string{"X-Test": "1"}, HeadersOnSubrequests: true}, ErrUnreachable, "connection refused by refused.test:443"},
		{"page sending itself away at once", Request{URL: "http://public.test/self/inline"}, ErrUnreachable, "connection refused by refused.test:443"},
		{"page sending itself away once loaded", Request{URL: "http://public.test/self/after-load"}, ErrUnreachable, "connection reset by reset.test:80"},
		{"html sending itself to a document Pictor does not hold", Request{HTML: `<p>x</p><script>location.href = "/doc/none"</script>`},
			ErrBlockedURL, "pictor.internal serves no such document"},
		{"html sending itself away once loaded", Request{HTML: `<p>x</p><script>addEventListener("load", () => { location.href = "/doc/none"; })</script>`},
			ErrBlockedURL, "pictor.internal serves no such document"},
		{"the site's own 404", Request{URL: "http://public.test/own-404"}, nil, ""},
		{"the site's own 502", Request{URL: "http://public.test/own-502"}, nil, ""},
		{"failing subframes and images", Request{URL: "http://public.test/broken-parts"}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			r.OrgID, r.MaxWait, r.MaxWidth, r.MaxHeight = "o1", 5*time.Second, 16384, 16384
			res, err := e.Render(context.Background(), &r)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if c := rgba(decodePNG(t, res.Data), 50, 50); c != (color.NRGBA{0, 0, 255, 255}) {
					t.Fatalf("pixel (50,50) = %v, want the page's blue box", c)
				}
				return
			}
			if !errors.Is(err, tc.want) || res != nil {
				t.Fatalf("result %v, error %v; want no result and %v", res != nil, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("%q does not say %q", err, tc.text)
			}
			// The egress proxies and the test's servers are all on
			// 127.0.0.1: no message may name one.
			if strings.Contains(err.Error(), "127.0.0.1") {
				t.Fatalf("%q names a loopback address", err)
			}
		})
	}
}
