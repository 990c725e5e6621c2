package ogpage

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/egress"
)

const simplePage = `<!doctype html><html><head><title>Hello</title>
<meta property="og:title" content="OG Hello"><meta name="hcti:ms_delay" content="250"></head><body>hi</body></html>`

func servePage(w http.ResponseWriter, contentType, body string) {
	if contentType != "" {
		w.Header().Set("Content-Type", contentType)
	}
	_, _ = w.Write([]byte(body))
}

// TestFetch has a row per way a site answers, each against a loopback
// server reached through the egress (private addresses allowed).
func TestFetch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		cfg     func(*Config)
		req     func(base string) Request // nil: GET base + "/"
		wantErr error
		check   func(t *testing.T, p *Page, err error)
	}{
		{
			name: "page, head and caching info",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("ETag", `"v1"`)
				w.Header().Set("Last-Modified", "Sun, 01 Mar 2026 10:00:00 GMT")
				w.Header().Set("Cache-Control", "public, max-age=172800")
				servePage(w, "text/html; charset=utf-8", simplePage)
			},
			check: func(t *testing.T, p *Page, _ error) {
				if p.Status != 200 || p.NotModified || p.Truncated {
					t.Errorf("Status %d, NotModified %v, Truncated %v", p.Status, p.NotModified, p.Truncated)
				}
				if p.Title != "Hello" || p.OGTitle != "OG Hello" || p.Overrides["ms_delay"] != "250" {
					t.Errorf("head = %+v", p.Head)
				}
				if p.ETag != `"v1"` || p.LastModified != "Sun, 01 Mar 2026 10:00:00 GMT" || p.Lifetime != 48*time.Hour {
					t.Errorf("caching = %+v", p.Caching)
				}
				if p.Fetched.IsZero() || !p.Fresh(p.Fetched, time.Hour).Equal(p.Fetched.Add(48*time.Hour)) {
					t.Errorf("Fresh = %v from %v", p.Fresh(p.Fetched, time.Hour), p.Fetched)
				}
			},
		},
		{
			name: "gzip body is decompressed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
					http.Error(w, "want gzip", http.StatusNotAcceptable)
					return
				}
				var b bytes.Buffer
				zw := gzip.NewWriter(&b)
				_, _ = zw.Write([]byte(simplePage))
				_ = zw.Close()
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("Content-Encoding", "gzip")
				_, _ = w.Write(b.Bytes())
			},
			check: func(t *testing.T, p *Page, _ error) {
				if p.Title != "Hello" {
					t.Errorf("Title = %q", p.Title)
				}
			},
		},
		{
			name: "a gzip bomb is cut at MaxBytes of decompressed body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				var b bytes.Buffer
				zw := gzip.NewWriter(&b)
				_, _ = zw.Write([]byte(`<head><title>Bomb</title>`))
				filler := bytes.Repeat([]byte(`<meta name="a" content="b">`), 1<<10)
				for range 8 << 20 / len(filler) { // 8 MiB once decompressed
					_, _ = zw.Write(filler)
				}
				_ = zw.Close()
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("Content-Encoding", "gzip")
				_, _ = w.Write(b.Bytes())
			},
			check: func(t *testing.T, p *Page, _ error) {
				if p.Title != "Bomb" || !p.Truncated || p.BytesRead != 2<<20 {
					t.Errorf("Title %q, Truncated %v, BytesRead %d", p.Title, p.Truncated, p.BytesRead)
				}
			},
		},
		{
			name: "application/xhtml+xml is HTML",
			handler: func(w http.ResponseWriter, r *http.Request) {
				servePage(w, "Application/XHTML+XML; charset=utf-8", simplePage)
			},
			check: func(t *testing.T, p *Page, _ error) {
				if p.Title != "Hello" {
					t.Errorf("Title = %q", p.Title)
				}
			},
		},
		{
			name: "a page that does not say its type is sniffed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil // no sniffing by net/http
				servePage(w, "", simplePage)
			},
			check: func(t *testing.T, p *Page, _ error) {
				if p.Title != "Hello" {
					t.Errorf("Title = %q", p.Title)
				}
			},
		},
		{
			name:    "JSON is not HTML",
			handler: func(w http.ResponseWriter, r *http.Request) { servePage(w, "application/json", `{"title":"x"}`) },
			wantErr: ErrNotHTML,
		},
		{
			name:    "an image is not HTML",
			handler: func(w http.ResponseWriter, r *http.Request) { servePage(w, "image/png", "\x89PNG\r\n") },
			wantErr: ErrNotHTML,
		},
		{
			name: "a text body without a type is not HTML",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil
				servePage(w, "", "just text")
			},
			wantErr: ErrNotHTML,
		},
		{
			name:    "404 carries its status",
			handler: func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
			wantErr: ErrStatus,
			check:   wantStatus(404),
		},
		{
			name:    "500 carries its status",
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) },
			wantErr: ErrStatus,
			check:   wantStatus(500),
		},
		{
			name: "the site's own 502 with a forged egress header is the site's",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set(egress.AnswerHeader, "00000000000000000000000000000000-0")
				http.Error(w, "bad gateway", http.StatusBadGateway)
			},
			wantErr: ErrStatus,
			check:   wantStatus(502),
		},
		{
			name: "304 to a conditional request: not modified, with the new caching info",
			handler: func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("If-None-Match") != `"v1"` || r.Header.Get("If-Modified-Since") != "Sun, 01 Mar 2026 10:00:00 GMT" {
					http.Error(w, "not conditional", 400)
					return
				}
				w.Header().Set("ETag", `"v1"`)
				w.Header().Set("Cache-Control", "max-age=7200")
				w.WriteHeader(http.StatusNotModified)
			},
			req: func(base string) Request {
				return Request{URL: base + "/", ETag: `"v1"`, LastModified: "Sun, 01 Mar 2026 10:00:00 GMT"}
			},
			check: func(t *testing.T, p *Page, _ error) {
				if !p.NotModified || p.Status != 304 {
					t.Errorf("NotModified %v, Status %d", p.NotModified, p.Status)
				}
				// Last-Modified was not sent again: the request's stands.
				if p.ETag != `"v1"` || p.LastModified != "Sun, 01 Mar 2026 10:00:00 GMT" || p.Lifetime != 2*time.Hour {
					t.Errorf("caching = %+v", p.Caching)
				}
			},
		},
		{
			name:    "304 to an unconditional request is an error status",
			handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) },
			wantErr: ErrStatus,
			check:   wantStatus(304),
		},
		{
			name: "a 200 to a conditional request is the new page",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("ETag", `"v2"`)
				servePage(w, "text/html", simplePage)
			},
			req: func(base string) Request { return Request{URL: base + "/", ETag: `"v1"`} },
			check: func(t *testing.T, p *Page, _ error) {
				if p.NotModified || p.ETag != `"v2"` || p.Title != "Hello" {
					t.Errorf("page = %+v", p)
				}
			},
		},
		{
			name: "User-Agent and custom headers reach the base origin; Accept-Encoding stays the fetcher's",
			handler: func(w http.ResponseWriter, r *http.Request) {
				echoPage(w, r, "User-Agent", "X-Custom", "Authorization", "Accept-Encoding", "Accept")
			},
			req: func(base string) Request {
				return Request{URL: base + "/", UserAgent: "TestBot/2", Headers: map[string]string{
					"x-custom": " one ", "Authorization": "Bearer t", "Accept-Encoding": "br",
				}}
			},
			check: func(t *testing.T, p *Page, _ error) {
				want := map[string]string{
					"got-user-agent": "TestBot/2", "got-x-custom": "one", "got-authorization": "Bearer t",
					"got-accept-encoding": "gzip", "got-accept": accept,
				}
				for k, v := range want {
					if p.Meta[k] != v {
						t.Errorf("%s = %q, want %q", k, p.Meta[k], v)
					}
				}
			},
		},
		{
			name:    "the default User-Agent",
			handler: func(w http.ResponseWriter, r *http.Request) { echoPage(w, r, "User-Agent") },
			check: func(t *testing.T, p *Page, _ error) {
				if got := p.Meta["got-user-agent"]; got != DefaultUserAgent {
					t.Errorf("User-Agent = %q", got)
				}
			},
		},
		{
			name: "a big page: its head is read, and nothing far past it",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write([]byte(simplePage[:strings.Index(simplePage, "<body>")] + "<body>"))
				filler := bytes.Repeat([]byte("<p>filler</p>\n"), 1<<10)
				for range 8 << 20 / len(filler) {
					if _, err := w.Write(filler); err != nil {
						return
					}
				}
			},
			check: func(t *testing.T, p *Page, _ error) {
				if p.Title != "Hello" || p.Truncated {
					t.Errorf("Title %q, Truncated %v", p.Title, p.Truncated)
				}
				if p.BytesRead > 64<<10 {
					t.Errorf("BytesRead = %d: read far past the head", p.BytesRead)
				}
			},
		},
		{
			name: "a huge head is read up to MaxBytes, no further",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write([]byte(`<html><head><title>Huge</title><meta property="og:title" content="early">`))
				filler := bytes.Repeat([]byte(`<meta name="filler" content="0123456789">`), 1<<10)
				for written := 0; written < 5<<19; written += len(filler) { // 2.5 MiB
					if _, err := w.Write(filler); err != nil {
						return
					}
				}
				_, _ = w.Write([]byte(`<meta name="late" content="past the limit"></head><body></body>`))
			},
			check: func(t *testing.T, p *Page, _ error) {
				if !p.Truncated || p.BytesRead != 2<<20 {
					t.Errorf("Truncated %v, BytesRead %d; want true, %d", p.Truncated, p.BytesRead, 2<<20)
				}
				if p.Title != "Huge" || p.OGTitle != "early" || p.Meta["filler"] == "" {
					t.Errorf("head = %q %q %q", p.Title, p.OGTitle, p.Meta["filler"])
				}
				if _, ok := p.Meta["late"]; ok {
					t.Error("a meta past MaxBytes was read")
				}
			},
		},
		{
			name:    "a slow page times out",
			handler: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			cfg:     func(c *Config) { c.Timeout = 300 * time.Millisecond },
			wantErr: ErrTimeout,
			check: func(t *testing.T, _ *Page, err error) {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v, want it to match context.DeadlineExceeded", err)
				}
			},
		},
		{
			name: "a page whose body stalls after its head starts times out",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write([]byte("<html><head><title>slow"))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
			cfg:     func(c *Config) { c.Timeout = 300 * time.Millisecond },
			wantErr: ErrTimeout,
		},
		{
			name:    "a chain of 5 redirects is followed",
			handler: redirectChain,
			req:     func(base string) Request { return Request{URL: base + "/r/5"} },
			check: func(t *testing.T, p *Page, _ error) {
				if !strings.HasSuffix(p.URL, "/r/0") || p.Title != "Hello" {
					t.Errorf("URL %q, Title %q", p.URL, p.Title)
				}
			},
		},
		{
			name:    "a chain of 6 redirects is refused",
			handler: redirectChain,
			req:     func(base string) Request { return Request{URL: base + "/r/6"} },
			wantErr: ErrTooManyRedirects,
		},
		{
			name:    "MaxRedirects 0 refuses the first",
			handler: redirectChain,
			cfg:     func(c *Config) { c.MaxRedirects = 0 },
			req:     func(base string) Request { return Request{URL: base + "/r/1"} },
			wantErr: ErrTooManyRedirects,
		},
		{
			name: "a redirect to another scheme is refused",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "ftp://example.com/x", http.StatusFound)
			},
			wantErr: ErrBlocked,
			check: func(t *testing.T, _ *Page, err error) {
				if !errors.Is(err, egress.ErrBlockedScheme) {
					t.Errorf("err = %v, want it to match egress.ErrBlockedScheme", err)
				}
			},
		},
		{
			name: "a redirect to cloud metadata is refused, private addresses allowed or not",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
			},
			wantErr: ErrBlocked,
			check: func(t *testing.T, _ *Page, err error) {
				var ae *egress.AddressError
				if !errors.Is(err, egress.ErrCloudMetadata) || !errors.As(err, &ae) {
					t.Errorf("err = %v, want an *egress.AddressError for cloud metadata", err)
				}
				if !strings.Contains(err.Error(), "169.254.169.254") {
					t.Errorf("err = %q, want it to name the host", err)
				}
			},
		},
		{
			name: "a 3xx without Location is an error status",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusMultipleChoices)
			},
			wantErr: ErrStatus,
			check:   wantStatus(300),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handler)
			f := newFetcher(t, nil, tc.cfg)
			req := Request{URL: srv.URL + "/"}
			if tc.req != nil {
				req = tc.req(srv.URL)
			}
			p, err := f.Fetch(context.Background(), req)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Fetch: %v", err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("Fetch error = %v, want %v", err, tc.wantErr)
			case tc.wantErr != nil && p != nil:
				t.Errorf("Fetch returned a page with error %v", err)
			}
			if tc.check != nil {
				tc.check(t, p, err)
			}
		})
	}
}

func wantStatus(status int) func(*testing.T, *Page, error) {
	return func(t *testing.T, _ *Page, err error) {
		t.Helper()
		var se *StatusError
		if !errors.As(err, &se) || se.Status != status {
			t.Errorf("err = %v, want a *StatusError with status %d", err, status)
		}
	}
}

// redirectChain answers /r/N with a redirect to /r/N-1, and /r/0 with a
// page.
func redirectChain(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
	if err != nil || n <= 0 {
		servePage(w, "text/html", simplePage)
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusFound)
}

// TestFetchHeadersStayOnTheirOrigins follows a redirect from the base
// origin to another server and looks at what each received.
func TestFetchHeadersStayOnTheirOrigins(t *testing.T) {
	other := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echoPage(w, r, "X-Custom", "Authorization", "User-Agent")
	}))
	base := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The base tells the other server what it received itself.
		http.Redirect(w, r, other.URL+"/?base-got="+r.Header.Get("X-Custom"), http.StatusFound)
	}))
	for _, tc := range []struct {
		name          string
		headerOrigins []string
		wantOther     string
	}{
		{name: "another origin gets no custom header", wantOther: ""},
		{name: "an origin of HeaderOrigins gets them", headerOrigins: []string{strings.ToUpper(other.URL) + "/"}, wantOther: "secret"},
		{name: "an origin differing by port gets none", headerOrigins: []string{base.URL + "1"}, wantOther: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFetcher(t, nil, nil)
			p, err := f.Fetch(context.Background(), Request{
				URL:           base.URL + "/page",
				Headers:       map[string]string{"X-Custom": "secret", "Authorization": "Bearer secret"},
				HeaderOrigins: tc.headerOrigins,
				UserAgent:     "TestBot/2",
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Meta["query-base-got"]; got != "secret" {
				t.Errorf("base origin got X-Custom %q, want %q", got, "secret")
			}
			if got := p.Meta["got-x-custom"]; got != tc.wantOther {
				t.Errorf("other origin got X-Custom %q, want %q", got, tc.wantOther)
			}
			if got := p.Meta["got-authorization"]; got != strings.ReplaceAll(tc.wantOther, "secret", "Bearer secret") {
				t.Errorf("other origin got Authorization %q", got)
			}
			if got := p.Meta["got-user-agent"]; got != "TestBot/2" {
				t.Errorf("other origin got User-Agent %q: every hop gets it", got)
			}
		})
	}
}

// TestFetchBlocked runs with private addresses not allowed: what the
// egress refuses fails with ErrBlocked, as a render of it would.
func TestFetchBlocked(t *testing.T) {
	page := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		servePage(w, "text/html", simplePage)
	}))
	// site.test is a public host standing in for loopback servers; it
	// redirects to the loopback page by address.
	redirector := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, page.URL+"/", http.StatusFound)
	}))
	tlsPage := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		servePage(w, "text/html", simplePage)
	}))
	t.Cleanup(tlsPage.Close)
	g := newGateway(t, gatewayOptions{
		res: fakeResolver{
			"site.test":      {"93.184.215.14"},
			"intranet.test":  {"93.184.215.15", "10.0.0.7"}, // one private answer is enough
			"localhost.test": {"127.0.0.1"},
		},
		public: map[string]string{"93.184.215.14:80": redirector.Listener.Addr().String()},
	})
	for _, tc := range []struct {
		name      string
		url       string
		wantRange string
	}{
		{name: "a loopback base_url", url: page.URL + "/", wantRange: "loopback"},
		{name: "a loopback base_url over https", url: tlsPage.URL + "/", wantRange: "loopback"},
		{name: "localhost by name", url: "http://localhost:" + port(page) + "/", wantRange: "loopback name"},
		{name: "a name resolving to loopback", url: "http://localhost.test:" + port(page) + "/", wantRange: "loopback"},
		{name: "a name with one private answer", url: "http://intranet.test/", wantRange: "private"},
		{name: "a public page redirecting to loopback", url: "http://site.test/", wantRange: "loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFetcher(t, g, func(c *Config) { c.AllowPrivate = false })
			p, err := f.Fetch(context.Background(), Request{URL: tc.url})
			if !errors.Is(err, ErrBlocked) || p != nil {
				t.Fatalf("Fetch = %v, %v; want ErrBlocked", p, err)
			}
			var ae *egress.AddressError
			if !errors.As(err, &ae) || ae.Range != tc.wantRange {
				t.Errorf("err = %v, want an *egress.AddressError for %s", err, tc.wantRange)
			}
			if strings.Contains(err.Error(), "10.0.0.7") || strings.Contains(err.Error(), "127.0.0.1:") {
				t.Errorf("err = %q names an address a host resolved to", err)
			}
		})
	}
}

// TestFetchUnreachable tells the egress's failures from the site's answers.
func TestFetchUnreachable(t *testing.T) {
	closedAddr := apitest.ClosedAddr(t)
	tlsPage := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		servePage(w, "text/html", simplePage)
	}))
	t.Cleanup(tlsPage.Close)
	hangup := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	g := newGateway(t, gatewayOptions{res: fakeResolver{}})
	for _, tc := range []struct {
		name     string
		url      string
		wantText string
	}{
		{name: "a name that does not resolve", url: "http://nowhere.test/", wantText: "could not resolve host nowhere.test"},
		{name: "a name that does not resolve, over https", url: "https://nowhere.test/", wantText: "could not resolve host nowhere.test"},
		{name: "a refused connection", url: "http://" + closedAddr + "/", wantText: "connection refused by " + closedAddr},
		{name: "a certificate not trusted", url: tlsPage.URL + "/", wantText: "TLS handshake"},
		{name: "a connection closed without an answer", url: hangup.URL + "/", wantText: "without answering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFetcher(t, g, nil)
			p, err := f.Fetch(context.Background(), Request{URL: tc.url})
			if !errors.Is(err, ErrUnreachable) || p != nil {
				t.Fatalf("Fetch = %v, %v; want ErrUnreachable", p, err)
			}
			if errors.Is(err, ErrStatus) || errors.Is(err, ErrBlocked) {
				t.Errorf("err = %v also matches another kind", err)
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("err = %q, want it to say %q", err, tc.wantText)
			}
		})
	}
}

// TestFetchHTTPS fetches a page over a CONNECT tunnel of the egress.
func TestFetchHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
			return
		}
		echoPage(w, r, "X-Custom")
	}))
	t.Cleanup(srv.Close)
	f := newFetcher(t, nil, func(c *Config) { c.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs })
	p, err := f.Fetch(context.Background(), Request{URL: srv.URL + "/old", Headers: map[string]string{"X-Custom": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Title != "echo" || p.Meta["got-x-custom"] != "1" || !strings.HasSuffix(p.URL, "/new") {
		t.Errorf("page = %q %q %q", p.Title, p.Meta["got-x-custom"], p.URL)
	}
}

// TestFetchCallerContext ends the caller's context while the site is
// answering: a cancellation is the caller's, not a timeout; the caller's
// deadline is one.
func TestFetchCallerContext(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ctx     func(started <-chan struct{}) (context.Context, context.CancelFunc)
		want    error
		notWant error
	}{
		{
			name: "canceled",
			ctx: func(started <-chan struct{}) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					<-started
					cancel()
				}()
				return ctx, cancel
			},
			want:    context.Canceled,
			notWant: ErrTimeout,
		},
		{
			name: "deadline before the fetch's own",
			ctx: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 200*time.Millisecond)
			},
			want:    ErrTimeout,
			notWant: context.Canceled,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				started <- struct{}{}
				<-r.Context().Done()
			}))
			f := newFetcher(t, nil, nil)
			ctx, cancel := tc.ctx(started)
			defer cancel()
			p, err := f.Fetch(ctx, Request{URL: srv.URL + "/"})
			if !errors.Is(err, tc.want) || errors.Is(err, tc.notWant) || p != nil {
				t.Fatalf("Fetch = %v, %v; want %v", p, err, tc.want)
			}
			if tc.want == ErrTimeout && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want it to match context.DeadlineExceeded", err)
			}
		})
	}
}

func TestFetchInvalidRequest(t *testing.T) {
	f := newFetcher(t, nil, nil)
	for _, tc := range []struct {
		name string
		req  Request
	}{
		{"relative URL", Request{URL: "/path"}},
		{"not http", Request{URL: "file:///etc/passwd"}},
		{"credentials", Request{URL: "http://user:pass@example.com/"}},
		{"unparsable", Request{URL: "http://[::1/"}},
		{"header name", Request{URL: "http://example.com/", Headers: map[string]string{"Bad Name": "x"}}},
		{"header value", Request{URL: "http://example.com/", Headers: map[string]string{"X-A": "a\r\nX-B: b"}}},
		{"framing header", Request{URL: "http://example.com/", Headers: map[string]string{"Host": "other.example"}}},
		{"proxy header", Request{URL: "http://example.com/", Headers: map[string]string{"Proxy-Authorization": "x"}}},
		{"header twice", Request{URL: "http://example.com/", Headers: map[string]string{"X-A": "1", "x-a": "2"}}},
		{"origin with a path", Request{URL: "http://example.com/", HeaderOrigins: []string{"https://cdn.example.com/x"}}},
		{"origin not http", Request{URL: "http://example.com/", HeaderOrigins: []string{"ftp://cdn.example.com"}}},
		{"validator", Request{URL: "http://example.com/", ETag: "\"a\"\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.Fetch(context.Background(), tc.req); !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("err = %v, want ErrInvalidRequest", err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	g := newGateway(t, gatewayOptions{})
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"no gateway", func(c *Config) { c.Gateway = nil }},
		{"zero timeout", func(c *Config) { c.Timeout = 0 }},
		{"tiny MaxBytes", func(c *Config) { c.MaxBytes = 10 }},
		{"negative redirects", func(c *Config) { c.MaxRedirects = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Gateway = g
			tc.mod(&cfg)
			if _, err := New(cfg); err == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
}

func port(s *httptest.Server) string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// TestFetchMetrics counts fetches by outcome.
func TestFetchMetrics(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		servePage(w, "text/html", simplePage)
	}))
	reg := prometheus.NewRegistry()
	f := newFetcher(t, nil, func(c *Config) { c.Registerer = reg })
	for _, path := range []string{"/", "/", "/missing"} {
		_, _ = f.Fetch(context.Background(), Request{URL: srv.URL + path})
	}
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "pictor_ogpage_fetches_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	if want := map[string]float64{outcomeOK: 2, outcomeStatus: 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("fetches by outcome = %v, want %v", got, want)
	}
	// A second fetcher on the same registry shares the collectors.
	g := newFetcher(t, nil, func(c *Config) { c.Registerer = reg })
	if g.metrics.fetches != f.metrics.fetches {
		t.Error("a second fetcher did not reuse the registered collectors")
	}
}
