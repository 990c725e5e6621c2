package origin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// These tests prove, end to end through a real origin and a real Chromium,
// that no render reaches what the egress policy refuses. Every case aims at
// a "secret" server on loopback that records connections and requests; the
// assertion is always that it saw none, and that the render still answered
// as it should. "Public" hosts are loopback servers too, reached through the
// two test seams of origin.Config: a fake resolver that answers public
// addresses for names such as public.test, and a dial hook that connects
// those checked public addresses to the servers. The hook dials every other
// loopback address for real, so a leak really lands on the secret server.

// Public addresses the fake resolver answers, routed by the dial hook.
const (
	publicIP = "93.184.216.34" // public.test, and public.test:8080
	otherIP  = "93.184.216.35" // other.test
	rebindIP = "93.184.216.36" // rebind.test, first answer only
)

// loopbackSpellings all name the secret server: IP literals in the spellings
// Chromium and inet_aton accept, local names, and names the fake resolver
// maps to loopback (private.test), to loopback among public answers
// (mixed.test) and to IPv6 loopback (private6.test).
var loopbackSpellings = []string{
	"127.0.0.1", "localhost", "[::1]", "2130706433", "0x7f000001", "[::ffff:7f00:1]",
	"127.1", "localhost.", "private.test", "mixed.test", "private6.test",
}

// fakeDNS is the origin's egress resolver. rebind.test answers public once
// and loopback ever after.
type fakeDNS struct {
	mu      sync.Mutex
	names   map[string][]string
	lookups map[string]int
}

func (d *fakeDNS) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	d.mu.Lock()
	d.lookups[name]++
	n := d.lookups[name]
	answers, ok := d.names[name]
	d.mu.Unlock()
	if name == "rebind.test" {
		answers, ok = []string{"127.0.0.1"}, true
		if n == 1 {
			answers = []string{rebindIP}
		}
	}
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, len(answers))
	for i, a := range answers {
		out[i] = net.IPAddr{IP: net.ParseIP(a)}
	}
	return out, nil
}

func (d *fakeDNS) count(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lookups[name]
}

// dialLog is the origin's egress dial hook: it records every address the
// egress dials, connects the routed public addresses to their loopback
// servers, dials loopback addresses for real and refuses anything else (this
// sandbox has no internet, and a hang would only slow a failing test).
type dialLog struct {
	mu     sync.Mutex
	routes map[string]string
	dials  []string
}

func (d *dialLog) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dials = append(d.dials, addr)
	to, routed := d.routes[addr]
	d.mu.Unlock()
	if !routed {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			return nil, fmt.Errorf("test dial: no route to %s", addr)
		}
		to = addr
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, to)
}

func (d *dialLog) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.dials)
}

// recorder is a site (see newSite) whose answers come from a mux, so that
// tests can add pages, assets and redirects while it runs.
type recorder struct {
	*site
	mux *http.ServeMux
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	rc := &recorder{site: &site{}, mux: http.NewServeMux()}
	rc.site.Server = httptest.NewServer(rc)
	t.Cleanup(rc.Close)
	return rc
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.requests = append(rc.requests, r.Clone(r.Context()))
	rc.mu.Unlock()
	rc.mux.ServeHTTP(w, r)
}

func (rc *recorder) serve(path, contentType, body string) {
	rc.mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	})
}

func (rc *recorder) page(path, html string) {
	rc.serve(path, "text/html; charset=utf-8", "<!DOCTYPE html>"+html)
}

func (rc *recorder) svg(path, fill string) { rc.serve(path, "image/svg+xml", solidSVG(fill)) }

func (rc *recorder) redirect(path, to string) {
	rc.mux.Handle(path, http.RedirectHandler(to, http.StatusFound))
}

func (rc *recorder) addr() string { return rc.Listener.Addr().String() }

// snapshot returns the requests received so far.
func (rc *recorder) snapshot() []*http.Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.requests)
}

// secretServer is the server no render may reach while private addresses
// are refused. It listens on 127.0.0.1 and [::1] on one port, so that every
// loopback spelling of http://HOST:PORT/ lands on it, and it counts
// connections as well as requests, so a tunnel or a WebSocket that got
// through is caught even if no HTTP request follows.
type secretServer struct {
	*recorder
	port  string
	conns atomic.Int64
}

func newSecretServer(t *testing.T) *secretServer {
	t.Helper()
	s := &secretServer{recorder: &recorder{site: &site{}, mux: http.NewServeMux()}}
	var lns []net.Listener
	for range 20 {
		l4, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(l4.Addr().String())
		l6, err := net.Listen("tcp6", net.JoinHostPort("::1", port))
		if err != nil {
			l4.Close()
			continue
		}
		lns, s.port = []net.Listener{l4, l6}, port
		break
	}
	if lns == nil {
		t.Fatal("no port is free on both 127.0.0.1 and [::1]")
	}
	for i, ln := range lns {
		srv := httptest.NewUnstartedServer(s.recorder)
		srv.Listener.Close()
		srv.Listener = ln
		srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		if i == 0 {
			s.site.Server = srv
		}
	}
	return s
}

// url is http://HOST:PORT/path on the secret server's port.
func (s *secretServer) url(host, path string) string {
	return "http://" + host + ":" + s.port + path
}

// contact is what the secret server has seen: connections and requests.
type contact struct {
	conns    int64
	requests int
}

func (s *secretServer) touched() contact {
	s.mu.Lock()
	defer s.mu.Unlock()
	return contact{conns: s.conns.Load(), requests: len(s.requests)}
}

// wantUntouchedSince fails if the secret server was contacted after since.
func (s *secretServer) wantUntouchedSince(t testing.TB, since contact) {
	t.Helper()
	now := s.touched()
	if now == since {
		return
	}
	var got []string
	for _, r := range s.snapshot()[since.requests:] {
		got = append(got, r.Method+" "+r.Host+r.URL.RequestURI())
	}
	t.Errorf("the secret server was reached: %d new connections, requests %q", now.conns-since.conns, got)
}

// egressWorld is the secret server, the public stand-ins and the seams
// that make them reachable under public names.
type egressWorld struct {
	secret *secretServer
	public *recorder // public.test
	port   *recorder // public.test:8080
	other  *recorder // other.test
	rebind *recorder // rebind.test:<secret port>
	dns    *fakeDNS
	dials  *dialLog
}

func newEgressWorld(t *testing.T) *egressWorld {
	t.Helper()
	w := &egressWorld{secret: newSecretServer(t), public: newRecorder(t), port: newRecorder(t), other: newRecorder(t), rebind: newRecorder(t)}
	w.dns = &fakeDNS{lookups: map[string]int{}, names: map[string][]string{
		"public.test":   {publicIP},
		"other.test":    {otherIP},
		"private.test":  {"127.0.0.1"},
		"mixed.test":    {publicIP, "127.0.0.1"},
		"private6.test": {"::1"},
		"metadata.test": {"169.254.169.254"},
	}}
	w.dials = &dialLog{routes: map[string]string{
		publicIP + ":80":               w.public.addr(),
		publicIP + ":8080":             w.port.addr(),
		otherIP + ":80":                w.other.addr(),
		rebindIP + ":" + w.secret.port: w.rebind.addr(),
	}}
	return w
}

// configure points an origin's egress at the world.
func (w *egressWorld) configure(allowPrivate bool) func(*origin.Config) {
	return func(c *origin.Config) {
		c.AllowPrivateURLs = allowPrivate
		c.Egress.Resolver = w.dns
		c.Egress.Dial = w.dials.dial
	}
}

// wantNoProxyHeaders fails if any request any server received carries a
// header a proxy adds: the egress must stay invisible.
func (w *egressWorld) wantNoProxyHeaders(t *testing.T) {
	t.Helper()
	for _, rc := range []*recorder{w.secret.recorder, w.public, w.port, w.other, w.rebind} {
		for _, r := range rc.snapshot() {
			for _, h := range []string{"Via", "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Proxy-Connection", "Proxy-Authorization"} {
				if v := r.Header.Values(h); len(v) > 0 {
					t.Errorf("%s %s%s carries %s: %q", r.Method, r.Host, r.URL.RequestURI(), h, v)
				}
			}
		}
	}
}

// refusalWatch reads, from the test binary's logs, the requests the egress
// refused after it was taken. It is the proof that a case really made
// Chromium reach out, so that "the secret server saw nothing" is not
// vacuous.
type refusalWatch struct{ from int }

func watchRefusals() refusalWatch { return refusalWatch{from: len(logs.String())} }

// targets returns the refused targets: absolute URLs of http requests,
// host:port of CONNECTs.
func (rw refusalWatch) targets() []string {
	var out []string
	for line := range strings.SplitSeq(logs.String()[rw.from:], "\n") {
		var rec struct{ Msg, Target string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "egress request blocked" {
			out = append(out, rec.Target)
		}
	}
	return out
}

// errors returns the log lines at level WARN or ERROR since the watch began: what
// a failed render's answer does not say.
func (rw refusalWatch) errors() string {
	var out strings.Builder
	for line := range strings.SplitSeq(logs.String()[rw.from:], "\n") {
		if strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"level":"WARN"`) {
			out.WriteString(line + "\n")
		}
	}
	return out.String()
}

// wantRefused fails unless a refused target ends with each suffix.
func (rw refusalWatch) wantRefused(t testing.TB, suffixes ...string) {
	t.Helper()
	targets := rw.targets()
	for _, s := range suffixes {
		if !slices.ContainsFunc(targets, func(tg string) bool { return strings.HasSuffix(tg, s) }) {
			t.Errorf("the egress never refused a request for %s: the case did not exercise it (%d other refusals)", s, len(targets))
		}
	}
}

func solidSVG(fill string) string {
	return `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><rect width="100" height="100" fill="` + fill + `"/></svg>`
}

// fuchsia is rgb(255,0,255), the colour of the images that must load.
var fuchsia = color.NRGBA{255, 0, 255, 255}

// greenMark opens every probe page: a green box at the top left of the
// image shows that the page meant to render is the one captured.
const greenMark = `<div id="mark" style="width:200px;height:100px;background:rgb(0,128,0)"></div>`

// probePage wraps body, whose attempts each call settle(id) once over, in a
// page that calls ScreenshotReady() when they all are and the window has
// loaded: with render_when_ready, the render (and the GET waiting for it)
// ends only after every attempt was answered, so nothing is still in flight
// when the servers are inspected. leak(id) turns the mark red; broken(id)
// turns it yellow.
func probePage(attempts int, body string) string {
	return fmt.Sprintf(`<script>
const settled = new Set();
function settle(id) { settled.add(String(id)); if (settled.size === %d) ScreenshotReady(); }
function paint(c) { const m = document.getElementById("mark"); if (m) m.style.background = c; }
function leak(id) { paint("rgb(255,0,0)"); settle(id); }
function broken(id) { paint("rgb(255,255,0)"); settle(id); }
addEventListener("load", () => settle("load"));
</script>`, attempts+1) + greenMark + body
}

// whenReady is the creation body of a probe render.
func whenReady(body map[string]any) map[string]any {
	body["render_when_ready"] = true
	body["max_wait_ms"] = 8000
	return body
}

// createAndGet creates an image (which must be accepted) and GETs it,
// which waits for its render.
func (o *testOrigin) createAndGet(t testing.TB, body map[string]any) *apitest.Response {
	t.Helper()
	_, u := o.create(t, o.Owner, body)
	return o.get(t, u)
}

// wantRefusedRender creates an image of a URL whose render the egress must
// refuse: creation may refuse it already (400 naming url); if it accepts,
// the GET must answer a 4xx standard error.
func (o *testOrigin) wantRefusedRender(t testing.TB, u string) {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"url": u}})
	if r.Status != http.StatusOK {
		apitest.WantField(t, r, "url")
		t.Logf("%s: refused at creation", u)
		return
	}
	var c struct{ URL string }
	r.Decode(t, &c)
	g := o.get(t, c.URL)
	if g.Status < 400 || g.Status > 499 {
		t.Fatalf("GET of a render of %s: status %d (%s), want a 4xx standard error: the refused target was rendered or reported as the site's failure", u, g.Status, g.Header.Get("Content-Type"))
	}
	apitest.WantError(t, g, g.Status)
	t.Logf("%s: refused at render, %d", u, g.Status)
}

// vector is one way markup reaches for a URL.
type vector struct {
	name string
	// markup reaches for {U} (http), {S} (https) or {WS} (ws), with
	// attempt index {I}.
	markup string
	// events: each attempt calls settle({I}) when over; otherwise the
	// window's load event is the only wait.
	events bool
	// attempted: Chromium sends every attempt to the egress, which must
	// refuse it (proved from its log).
	attempted bool
	// tunnel: the attempts go out as CONNECT host:port, which the log
	// cannot tell apart by path; they are counted instead.
	tunnel bool
}

// htmlVectors each run in an HTML render, once per loopback spelling.
var htmlVectors = []vector{
	{name: "img-src", markup: `<img src="{U}" onload="settle({I})" onerror="settle({I})">`, events: true, attempted: true},
	{name: "img-src-https", markup: `<img src="{S}" onload="settle({I})" onerror="settle({I})">`, events: true, attempted: true, tunnel: true},
	{name: "img-srcset", markup: `<img srcset="{U} 1x" onload="settle({I})" onerror="settle({I})">`, events: true, attempted: true},
	{name: "picture-source-srcset", markup: `<picture><source srcset="{U}"><img onload="settle({I})" onerror="settle({I})"></picture>`, events: true, attempted: true},
	{name: "link-stylesheet", markup: `<link rel="stylesheet" href="{U}" onload="settle({I})" onerror="settle({I})">`, events: true, attempted: true},
	{name: "link-preload", markup: `<link rel="preload" as="image" href="{U}" onload="settle({I})" onerror="settle({I})">`, events: true, attempted: true},
	{name: "link-prefetch", markup: `<link rel="prefetch" href="{U}" onload="settle({I})" onerror="settle({I})">`, events: true, attempted: true},
	{name: "script-src", markup: `<script src="{U}" onload="settle({I})" onerror="settle({I})"></script>`, events: true, attempted: true},
	{name: "dynamic-import", markup: `<script type="module">import("{U}").then(() => settle({I}), () => settle({I}))</script>`, events: true, attempted: true},
	{name: "iframe-src", markup: `<iframe src="{U}" width="40" height="40" onload="settle({I})"></iframe>`, events: true, attempted: true},
	{name: "css-background-image", markup: `<div style="width:4px;height:4px;background-image:url('{U}')"></div>`, attempted: true},
	{name: "css-import", markup: `<style>@import url("{U}");</style>`, attempted: true},
	{name: "css-font-face", markup: `<style>@font-face { font-family: f{I}; src: url("{U}"); }</style><span style="font-family:f{I}">x</span>` +
		`<script>document.fonts.load("16px f{I}").then(() => settle({I}), () => settle({I}))</script>`, events: true, attempted: true},
	{name: "fetch", markup: `<script>fetch("{U}").then(() => settle({I}), () => settle({I}))</script>`, events: true, attempted: true},
	{name: "fetch-post-no-cors", markup: `<script>fetch("{U}", {method: "POST", mode: "no-cors", body: "x"}).then(() => settle({I}), () => settle({I}))</script>`, events: true, attempted: true},
	{name: "xhr", markup: `<script>(x => { x.onloadend = () => settle({I}); x.open("GET", "{U}"); x.send(); })(new XMLHttpRequest())</script>`, events: true, attempted: true},
	{name: "websocket", markup: `<script>try { new WebSocket("{WS}").onclose = () => settle({I}); } catch (e) { settle({I}); }</script>`, events: true, attempted: true, tunnel: true},
	{name: "eventsource", markup: `<script>(e => { e.onopen = e.onerror = () => { e.close(); settle({I}); }; })(new EventSource("{U}"))</script>`, events: true, attempted: true},
	{name: "send-beacon", markup: `<script>navigator.sendBeacon("{U}", "x")</script>`, attempted: true},
	{name: "video-src", markup: `<video src="{U}" preload="auto" width="40" height="40" onloadeddata="settle({I})" onerror="settle({I})"></video>`, events: true, attempted: true},
	{name: "audio-src", markup: `<audio src="{U}" preload="auto" onloadeddata="settle({I})" onerror="settle({I})"></audio>`, events: true, attempted: true},
	{name: "object-data", markup: `<object data="{U}" width="40" height="40" onload="settle({I})" onerror="settle({I})"></object>`, events: true, attempted: true},
	{name: "embed-src", markup: `<embed src="{U}" width="40" height="40">`, attempted: true},
	{name: "svg-image", markup: `<svg width="4" height="4"><image href="{U}" width="4" height="4" onload="settle({I})" onerror="settle({I})"/></svg>`, events: true, attempted: true},
	{name: "form-into-iframe", markup: `<iframe name="f{I}" width="40" height="40"></iframe><form id="form{I}" method="post" action="{U}" target="f{I}"><input type="hidden" name="q" value="1"></form>` +
		`<script>document.getElementById("form{I}").submit()</script>`, attempted: true},
	{name: "iframe-meta-refresh", markup: `<iframe width="40" height="40" srcdoc="<meta http-equiv=refresh content='0;url={U}'>"></iframe>`},
	{name: "a-ping", markup: `<a id="a{I}" href="#p{I}" ping="{U}">p</a><script>document.getElementById("a{I}").click()</script>`},
	{name: "window-open", markup: `<script>window.open("{U}")</script>`},
	{name: "worker", markup: `<script>try { new Worker("{U}") } catch (e) {}</script>`},
}

// navVectors move the main frame itself; each runs once per spelling.
var navVectors = []vector{
	{name: "form-auto-submit", markup: `<form id="f" method="post" action="{U}"><input type="hidden" name="q" value="1"></form><script>document.getElementById("f").submit()</script>`, attempted: true},
	{name: "location-after-load", markup: `<script>addEventListener("load", () => { location.href = "{U}"; })</script>`, attempted: true},
	{name: "meta-refresh", markup: `<meta http-equiv="refresh" content="0;url={U}">`, attempted: true},
}

func (v vector) expand(s *secretServer, prefix string, i int, host string) (string, string) {
	path := fmt.Sprintf("/%s/%s/%d", prefix, v.name, i)
	u := s.url(host, path)
	rest := strings.TrimPrefix(u, "http")
	return strings.NewReplacer("{U}", u, "{S}", "https"+rest, "{WS}", "ws"+rest, "{I}", strconv.Itoa(i)).Replace(v.markup), path
}

// TestRenderCannotEscape runs every way out against one origin whose
// renders may not reach private addresses.
func TestRenderCannotEscape(t *testing.T) {
	t.Parallel() // a slow test with its own origin: see startOrigin
	w := newEgressWorld(t)
	o := startOrigin(t, w.configure(false))
	start := w.secret.touched()

	t.Run("url parameter refused at creation", func(t *testing.T) {
		// Literal addresses, local names and other schemes never get a
		// render: creation answers 400 naming url.
		port := w.secret.port
		for _, tc := range []struct{ name, url string }{
			{"loopback", "http://127.0.0.1:" + port + "/"},
			{"localhost", "http://localhost:" + port + "/"},
			{"localhost upper case with trailing dot", "http://LOCALHOST.:" + port + "/"},
			{"subdomain of localhost", "http://a.localhost:" + port + "/"},
			{"IPv6 loopback", "http://[::1]:" + port + "/"},
			{"IPv4-mapped IPv6 loopback", "http://[::ffff:127.0.0.1]:" + port + "/"},
			{"decimal", "http://2130706433:" + port + "/"},
			{"hex and short", "http://0x7f.1:" + port + "/"},
			{"octal", "http://017700000001:" + port + "/"},
			{"octal octet", "http://0177.0.0.1:" + port + "/"},
			{"short", "http://127.1:" + port + "/"},
			{"trailing dot", "http://127.0.0.1.:" + port + "/"},
			{"userinfo before loopback", "http://public.test@127.0.0.1:" + port + "/"},
			{"https loopback", "https://127.0.0.1:" + port + "/"},
			{"unspecified", "http://0.0.0.0:" + port + "/"},
			{"IPv6 unspecified", "http://[::]:" + port + "/"},
			{"private 10/8", "http://10.0.0.1/"},
			{"private 192.168/16", "http://192.168.1.1/"},
			{"CGNAT", "http://100.64.0.1/"},
			{"unique local IPv6", "http://[fd00::1]/"},
			{"link-local IPv6", "http://[fe80::1]/"},
			{"multicast", "http://224.0.0.1/"},
			{"cloud metadata", "http://169.254.169.254/latest/meta-data/"},
			{"cloud metadata in hex", "http://0xa9fea9fe/"},
			{"cloud metadata IPv4-mapped", "http://[::ffff:169.254.169.254]/"},
			{"AWS IPv6 metadata", "http://[fd00:ec2::254]/"},
			{"Alibaba metadata", "http://100.100.100.200/"},
			{"GCP metadata name", "http://metadata.google.internal/"},
			{"bare metadata name", "http://metadata/"},
			{"file", "file:///etc/passwd"},
			{"ftp", "ftp://127.0.0.1:" + port + "/"},
			{"chrome", "chrome://version"},
			{"data", "data:text/html,<p>x</p>"},
			{"javascript", "javascript:alert(1)"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"url": tc.url}})
				apitest.WantField(t, r, "url")
			})
		}
	})

	t.Run("url parameter refused at render", func(t *testing.T) {
		// Names resolve only at render time, and spellings Go and Chromium
		// read differently may pass creation: the render must still refuse
		// them, with a 4xx like any other input at fault.
		port := w.secret.port
		for _, tc := range []struct{ name, url string }{
			{"name resolving to loopback", "http://private.test:" + port + "/top"},
			{"name with a loopback answer among public ones", "http://mixed.test:" + port + "/top"},
			{"name resolving to IPv6 loopback", "http://private6.test:" + port + "/top"},
			{"https to a name resolving to loopback", "https://private.test:" + port + "/top"},
			{"backslash before userinfo", "http://127.0.0.1:" + port + `\@public.test/`},
			{"full-width digits", "http://１２７.０.０.１:" + port + "/"},
			{"ideographic full stops", "http://127。0。0。1:" + port + "/"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				since := w.secret.touched()
				o.wantRefusedRender(t, tc.url)
				w.secret.wantUntouchedSince(t, since)
			})
		}
	})

	t.Run("html markup", func(t *testing.T) {
		for _, v := range htmlVectors {
			t.Run(v.name, func(t *testing.T) {
				since, refused := w.secret.touched(), watchRefusals()
				var markup strings.Builder
				var paths []string
				n := 0
				for i, host := range loopbackSpellings {
					m, path := v.expand(w.secret, "v", i, host)
					markup.WriteString(m)
					paths = append(paths, path)
					if v.events {
						n++
					}
				}
				img := o.render(t, whenReady(map[string]any{"html": probePage(n, markup.String())}))
				apitest.WantPixel(t, img, 10, 10, green, 8)
				w.secret.wantUntouchedSince(t, since)
				if v.tunnel {
					n := 0
					for _, tg := range refused.targets() {
						if strings.HasSuffix(tg, ":"+w.secret.port) {
							n++
						}
					}
					if n < len(loopbackSpellings) {
						t.Errorf("%d tunnels refused, want %d: %q", n, len(loopbackSpellings), refused.targets())
					}
				} else if v.attempted {
					refused.wantRefused(t, paths...)
				}
			})
		}
	})

	t.Run("html top-level navigation", func(t *testing.T) {
		for _, v := range navVectors {
			for i, host := range loopbackSpellings {
				t.Run(v.name+"/"+host, func(t *testing.T) {
					since, refused := w.secret.touched(), watchRefusals()
					t.Cleanup(func() {
						if t.Failed() {
							t.Logf("errors logged:\n%s", refused.errors())
						}
					})
					m, path := v.expand(w.secret, "n", i, host)
					r := o.createAndGet(t, map[string]any{"html": greenMark + m})
					w.secret.wantUntouchedSince(t, since)
					// The egress refuses the navigation, and the render never
					// captures the refusal it answered: the page's main
					// document is a refused URL, an input fault.
					apitest.WantMessage(t, apitest.WantError(t, r, 400), "not allowed")
					refused.wantRefused(t, path)
				})
			}
		}
	})

	t.Run("public page", func(t *testing.T) {
		redirects := []string{"127.0.0.1", "localhost", "[::1]", "2130706433", "[::ffff:7f00:1]", "private.test", "mixed.test"}
		for i, host := range redirects {
			w.public.redirect(fmt.Sprintf("/redirect/%d", i), w.secret.url(host, fmt.Sprintf("/redirected/%d", i)))
		}
		w.public.redirect("/chain/1", "http://public.test/chain/2")
		w.public.redirect("/chain/2", "http://other.test/chain/3")
		w.other.redirect("/chain/3", w.secret.url("127.0.0.1", "/chain/4"))

		for i, host := range redirects {
			t.Run("302 to "+host, func(t *testing.T) {
				since, refused := w.secret.touched(), watchRefusals()
				o.wantRefusedRender(t, fmt.Sprintf("http://public.test/redirect/%d", i))
				w.secret.wantUntouchedSince(t, since)
				refused.wantRefused(t, fmt.Sprintf("/redirected/%d", i))
				if len(w.public.seen(fmt.Sprintf("/redirect/%d", i))) == 0 {
					t.Error("the public page was never requested")
				}
			})
		}
		t.Run("redirect chain public to public to secret", func(t *testing.T) {
			since, refused := w.secret.touched(), watchRefusals()
			o.wantRefusedRender(t, "http://public.test/chain/1")
			w.secret.wantUntouchedSince(t, since)
			refused.wantRefused(t, "/chain/4")
			if len(w.other.seen("/chain/3")) == 0 {
				t.Error("the chain's last public hop was never requested")
			}
		})

		t.Run("embeds", func(t *testing.T) {
			var markup strings.Builder
			var paths []string
			n := 0
			for k, v := range htmlVectors {
				switch v.name {
				case "img-src", "iframe-src", "fetch", "xhr", "websocket", "script-src", "link-stylesheet", "css-background-image":
				default:
					continue
				}
				for i, host := range loopbackSpellings {
					// Attempt indexes are unique across the vectors of the page.
					m, path := v.expand(w.secret, "e", 100*k+i, host)
					markup.WriteString(m)
					if v.events {
						n++
					}
					if !v.tunnel {
						paths = append(paths, path)
					}
				}
			}
			w.public.page("/embeds", probePage(n, markup.String()))
			since, refused := w.secret.touched(), watchRefusals()
			r := o.createAndGet(t, whenReady(map[string]any{"url": "http://public.test/embeds"}))
			apitest.WantStatus(t, r, 200)
			apitest.WantPixel(t, apitest.DecodeImage(t, r), 10, 10, green, 8)
			w.secret.wantUntouchedSince(t, since)
			refused.wantRefused(t, paths...)
		})

		t.Run("cross-origin iframe reaching in", func(t *testing.T) {
			// The inner frame is another site, so Chromium runs it in a
			// process of its own: its requests must take the same way out.
			var inner strings.Builder
			var paths []string
			for i, host := range loopbackSpellings {
				for _, v := range htmlVectors {
					switch v.name {
					case "img-src", "iframe-src", "css-background-image":
						m, path := v.expand(w.secret, "x", i, host)
						inner.WriteString(m)
						paths = append(paths, path)
					}
				}
			}
			// The inner page's load waits for all of those; the outer
			// page's iframe load waits for the inner page's.
			w.other.page("/inner", `<script>function settle() {}</script>`+inner.String())
			w.public.page("/outer", probePage(1, `<iframe src="http://other.test/inner" onload="settle('inner')"></iframe>`))
			since, refused := w.secret.touched(), watchRefusals()
			r := o.createAndGet(t, whenReady(map[string]any{"url": "http://public.test/outer"}))
			apitest.WantStatus(t, r, 200)
			apitest.WantPixel(t, apitest.DecodeImage(t, r), 10, 10, green, 8)
			w.secret.wantUntouchedSince(t, since)
			refused.wantRefused(t, paths...)
		})
	})

	t.Run("dns rebinding", func(t *testing.T) {
		// rebind.test answers public for the page and loopback ever after,
		// on the secret server's port: each later request of the page must
		// be resolved anew and refused, never sent to the first answer's
		// connection nor dialed to loopback.
		w.rebind.page("/page", probePage(2, `<img src="/secret-img" onload="settle('img')" onerror="settle('img')">
<script>
(async () => {
  for (let i = 0; i < 5; i++) { try { await fetch("/secret/" + i); } catch (e) {} }
  settle("fetches");
})();
</script>`))
		since, refused := w.secret.touched(), watchRefusals()
		r := o.createAndGet(t, whenReady(map[string]any{"url": "http://rebind.test:" + w.secret.port + "/page"}))
		apitest.WantStatus(t, r, 200)
		apitest.WantPixel(t, apitest.DecodeImage(t, r), 10, 10, green, 8)
		w.secret.wantUntouchedSince(t, since)
		if n := w.dns.count("rebind.test"); n < 2 {
			t.Errorf("rebind.test looked up %d times: later requests were not resolved again", n)
		}
		refused.wantRefused(t, "/secret-img", "/secret/0", "/secret/4")
		var paths []string
		for _, req := range w.rebind.snapshot() {
			paths = append(paths, req.URL.Path)
		}
		if !slices.Equal(paths, []string{"/page"}) {
			t.Errorf("the public rebind.test server got %q, want only /page", paths)
		}
	})

	t.Run("schemes", func(t *testing.T) {
		port := w.secret.port
		const magenta = "rgb(255,0,255)"
		page := probePage(9, `
<img style="display:block;width:100px;height:100px" src="data:image/svg+xml,`+strings.ReplaceAll(solidSVG("rgb(0,0,255)"), `"`, `'`)+`" onload="settle('data-img')" onerror="broken('data-img')">
<img id="blob" style="display:block;width:100px;height:100px" onerror="broken('blob-img')">
<iframe src="file:///etc/hostname" style="display:block;width:200px;height:100px;border:0"></iframe>
<iframe src="chrome://version" style="display:block;width:200px;height:100px;border:0"></iframe>
<iframe srcdoc="<p style='margin:0;font:bold 60px sans-serif'>ink</p>" style="display:block;width:200px;height:100px;border:0"></iframe>
<div style="display:none">
<img src="file:///etc/passwd" onload="leak('file-img')" onerror="settle('file-img')">
<img src="ftp://127.0.0.1:`+port+`/ftp-img" onload="leak('ftp-img')" onerror="settle('ftp-img')">
</div>
<script>
fetch("file:///etc/passwd").then(() => leak("file-fetch"), () => settle("file-fetch"));
(x => {
  x.onload = () => leak("file-xhr"); x.onerror = () => settle("file-xhr");
  try { x.open("GET", "file:///etc/hostname"); x.send(); } catch (e) { settle("file-xhr"); }
})(new XMLHttpRequest());
fetch("ftp://127.0.0.1:`+port+`/ftp-fetch").then(() => leak("ftp-fetch"), () => settle("ftp-fetch"));
const blobURL = URL.createObjectURL(new Blob(['`+solidSVG(magenta)+`'], {type: "image/svg+xml"}));
const b = document.getElementById("blob");
b.onload = () => settle("blob-img");
b.src = blobURL;
fetch(blobURL).then(r => r.text()).then(t => t.includes("<svg") ? settle("blob-fetch") : broken("blob-fetch"), () => broken("blob-fetch"));
fetch("data:text/plain,ok").then(r => r.text()).then(t => t === "ok" ? settle("data-fetch") : broken("data-fetch"), () => broken("data-fetch"));
</script>`)
		since := w.secret.touched()
		img := o.render(t, whenReady(map[string]any{"html": page}))
		w.secret.wantUntouchedSince(t, since)
		// CSS pixels at device scale 2: the mark (0-100), the data: image
		// (100-200), the blob: image (200-300), the file: and chrome:
		// iframes (300-500), and an iframe with text that shows what ink
		// would look like (500-600).
		apitest.WantPixel(t, img, 20, 20, green, 8)
		apitest.WantPixel(t, img, 100, 300, blue, 8)
		apitest.WantPixel(t, img, 100, 500, fuchsia, 8)
		for _, f := range []struct {
			name string
			top  int
		}{{"file:///etc/hostname", 600}, {"chrome://version", 800}} {
			if x, y, ok := inkIn(img, image.Rect(0, f.top, 400, f.top+200)); ok {
				t.Errorf("the iframe of %s shows content: pixel (%d,%d) is %v", f.name, x, y, apitest.Pixel(img, x, y))
			}
		}
		if _, _, ok := inkIn(img, image.Rect(0, 1000, 400, 1200)); !ok {
			t.Error("no ink in the control iframe: the check of the other iframes proves nothing")
		}

		t.Run("top-level redirect to file", func(t *testing.T) {
			w.public.redirect("/to-file", "file:///etc/passwd")
			r := o.createAndGet(t, map[string]any{"url": "http://public.test/to-file"})
			if r.Status == 200 {
				t.Fatalf("a redirect to file:///etc/passwd rendered an image (%d bytes)", len(r.Body))
			}
			m := apitest.WantError(t, r, r.Status)
			t.Logf("a top-level redirect to file: answers %d %q", r.Status, m["message"])
			if r.Status != 400 && r.Status != 502 {
				t.Errorf("status %d, want 400 (refused) or 502 (the site failed)", r.Status)
			}
		})
	})

	t.Run("CustomHeaders", func(t *testing.T) { testCustomHeaders(t, o, w) })

	w.secret.wantUntouchedSince(t, start)
	w.wantNoProxyHeaders(t)
	// The egress only ever dialed the checked public addresses.
	for _, d := range w.dials.all() {
		if _, ok := w.dials.routes[d]; !ok {
			t.Errorf("the egress dialed %s", d)
		}
	}
}

// TestRenderCannotEscapeWithAllowPrivateURLs: --allow-private-urls lifts
// the address rule only; cloud metadata stays out of reach.
func TestRenderCannotEscapeWithAllowPrivateURLs(t *testing.T) {
	w := newEgressWorld(t)
	o := startOrigin(t, w.configure(true))
	const magenta = "rgb(255,0,255)"
	w.secret.svg("/allowed/img.svg", magenta)
	w.secret.page("/allowed/page", `<div style="width:100vw;height:100vh;background:`+magenta+`"></div>`)
	metadataHosts := []string{
		"169.254.169.254", "[::ffff:169.254.169.254]", "0xa9fea9fe", "2852039166", "169.254.170.2",
		"metadata.google.internal", "metadata.test", "[fd00:ec2::254]", "100.100.100.200", "168.63.129.16",
	}

	t.Run("loopback url renders", func(t *testing.T) {
		img := o.render(t, map[string]any{"url": w.secret.url("127.0.0.1", "/allowed/page")})
		apitest.WantPixel(t, img, 10, 10, fuchsia, 8)
		if len(w.secret.seen("/allowed/page")) == 0 {
			t.Fatal("the loopback page was not requested")
		}
	})

	t.Run("every loopback spelling reaches the secret server", func(t *testing.T) {
		// The control of TestRenderCannotEscape: each spelling it refuses
		// does land on the secret server once the address rule is lifted.
		var markup strings.Builder
		var paths []string
		for i, host := range loopbackSpellings {
			m, path := htmlVectors[0].expand(w.secret, "c", i, host)
			markup.WriteString(m)
			paths = append(paths, path)
		}
		o.render(t, whenReady(map[string]any{"html": probePage(len(loopbackSpellings), markup.String())}))
		for i, path := range paths {
			if len(w.secret.seen(path)) == 0 {
				t.Errorf("http://%s:%s%s did not reach the secret server", loopbackSpellings[i], w.secret.port, path)
			}
		}
	})

	t.Run("loopback subresource loads, metadata does not", func(t *testing.T) {
		refused := watchRefusals()
		var markup strings.Builder
		markup.WriteString(`<img style="display:block;width:100px;height:100px" src="` + w.secret.url("127.0.0.1", "/allowed/img.svg") + `" onload="settle('allowed')" onerror="broken('allowed')">`)
		markup.WriteString(`<div style="display:none">`)
		for i, h := range metadataHosts {
			fmt.Fprintf(&markup, `<img src="http://%s/latest/meta-data/%d" onload="leak(%d)" onerror="settle(%d)">`, h, i, i, i)
		}
		markup.WriteString(`</div>`)
		img := o.render(t, whenReady(map[string]any{"html": probePage(len(metadataHosts)+1, markup.String())}))
		apitest.WantPixel(t, img, 10, 10, green, 8)
		apitest.WantPixel(t, img, 100, 300, fuchsia, 8)
		if len(w.secret.seen("/allowed/img.svg")) == 0 {
			t.Error("the loopback image was not requested")
		}
		var paths []string
		for i := range metadataHosts {
			paths = append(paths, fmt.Sprintf("/latest/meta-data/%d", i))
		}
		refused.wantRefused(t, paths...)
	})

	t.Run("metadata url refused", func(t *testing.T) {
		for _, h := range metadataHosts {
			t.Run(h, func(t *testing.T) {
				o.wantRefusedRender(t, "http://"+h+"/latest/meta-data/")
			})
		}
	})

	t.Run("redirect to metadata", func(t *testing.T) {
		w.public.redirect("/to-metadata", "http://169.254.169.254/latest/meta-data/")
		o.wantRefusedRender(t, "http://public.test/to-metadata")
	})

	linkLocal := netip.MustParsePrefix("169.254.0.0/16")
	metadata := []netip.Addr{netip.MustParseAddr("100.100.100.200"), netip.MustParseAddr("168.63.129.16"), netip.MustParseAddr("fd00:ec2::254")}
	for _, d := range w.dials.all() {
		ap, err := netip.ParseAddrPort(d)
		if err != nil {
			t.Errorf("the egress dialed %q", d)
			continue
		}
		if a := ap.Addr().Unmap(); linkLocal.Contains(a) || slices.Contains(metadata, a) {
			t.Errorf("the egress dialed the metadata address %s", d)
		}
	}
	w.wantNoProxyHeaders(t)
}

// testCustomHeaders checks that headers, additional_header_origins,
// include_headers_on_subrequests and identify_as_service send their headers
// where spec §2.2 says and nowhere else.
func testCustomHeaders(t *testing.T, o *testOrigin, w *egressWorld) {
	// Each case gets its own copy of the same site under /h/<case>: a page
	// on public.test whose subresources are same-origin, on other.test and
	// on public.test:8080, and a hop that redirects the top level to a page
	// on other.test.
	build := func(p string) {
		pub, oth := "http://public.test"+p, "http://other.test"+p
		w.public.page(p+"/page", probePage(9, `
<img src="`+p+`/same.svg" onload="settle('same')" onerror="settle('same')">
<iframe src="`+p+`/frame" width="40" height="40" onload="settle('frame')"></iframe>
<img src="`+oth+`/other.svg" onload="settle('other')" onerror="settle('other')">
<iframe src="`+oth+`/frame" width="40" height="40" onload="settle('other-frame')"></iframe>
<img src="http://public.test:8080`+p+`/port.svg" onload="settle('port')" onerror="settle('port')">
<img src="`+p+`/to-other.svg" onload="settle('to-other')" onerror="settle('to-other')">
<script>
fetch("`+p+`/fetch").then(() => settle("fetch"), () => settle("fetch"));
fetch("`+oth+`/fetch").then(() => settle("other-fetch"), () => settle("other-fetch"));
fetch("http://public.test:8080`+p+`/fetch").then(() => settle("port-fetch"), () => settle("port-fetch"));
</script>`))
		w.public.page(p+"/frame", `<img src="`+p+`/frame-img.svg">`)
		w.public.svg(p+"/same.svg", "blue")
		w.public.svg(p+"/frame-img.svg", "blue")
		w.public.serve(p+"/fetch", "text/plain", "ok")
		w.public.redirect(p+"/to-other.svg", oth+"/redirected.svg")
		w.public.redirect(p+"/hop", oth+"/landing")
		w.public.svg(p+"/from-landing.svg", "blue")
		w.other.svg(p+"/other.svg", "blue")
		w.other.page(p+"/frame", `<img src="`+p+`/frame-img.svg">`)
		w.other.svg(p+"/frame-img.svg", "blue")
		w.other.serve(p+"/fetch", "text/plain", "ok")
		w.other.svg(p+"/redirected.svg", "blue")
		w.other.page(p+"/landing", probePage(2, `
<img src="`+p+`/landing.svg" onload="settle('landing')" onerror="settle('landing')">
<img src="`+pub+`/from-landing.svg" onload="settle('from-landing')" onerror="settle('from-landing')">`))
		w.other.svg(p+"/landing.svg", "blue")
		w.port.svg(p+"/port.svg", "blue")
		w.port.serve(p+"/fetch", "text/plain", "ok")
	}
	// What each start loads, as host/path under the case's prefix.
	loads := map[string][]string{
		"page": {"public.test/page", "public.test/same.svg", "public.test/frame", "public.test/frame-img.svg", "public.test/fetch", "public.test/to-other.svg",
			"other.test/other.svg", "other.test/frame", "other.test/frame-img.svg", "other.test/fetch", "other.test/redirected.svg",
			"public.test:8080/port.svg", "public.test:8080/fetch"},
		"hop": {"public.test/hop", "other.test/landing", "other.test/landing.svg", "public.test/from-landing.svg"},
	}
	secret := map[string]string{"X-Secret": "s3"}
	sameOrigin := []string{"public.test/page", "public.test/same.svg", "public.test/frame", "public.test/frame-img.svg", "public.test/fetch", "public.test/to-other.svg"}
	otherOrigin := []string{"other.test/other.svg", "other.test/frame", "other.test/frame-img.svg", "other.test/fetch", "other.test/redirected.svg"}
	tests := []struct {
		name    string
		start   string
		params  map[string]any
		secret  []string // where X-Secret: s3 must be, and nowhere else
		service []string // where X-SERVICE-SCREENSHOT: 1 must be, and nowhere else
	}{
		{"defaults", "page", map[string]any{"headers": secret},
			[]string{"public.test/page"}, nil},
		{"include_headers_on_subrequests", "page", map[string]any{"headers": secret, "include_headers_on_subrequests": true},
			sameOrigin, nil},
		{"additional_header_origins with subrequests", "page", map[string]any{"headers": secret, "include_headers_on_subrequests": true, "additional_header_origins": []string{"http://other.test"}},
			slices.Concat(sameOrigin, otherOrigin), nil},
		{"redirect to another origin", "hop", map[string]any{"headers": secret},
			[]string{"public.test/hop"}, nil},
		{"redirect to an additional origin", "hop", map[string]any{"headers": secret, "additional_header_origins": []string{"http://other.test"}},
			[]string{"public.test/hop", "other.test/landing"}, nil},
		{"identify_as_service", "page", map[string]any{"identify_as_service": true},
			nil, []string{"public.test/page"}},
		{"identify_as_service with headers on subrequests", "page", map[string]any{"identify_as_service": true, "headers": secret, "include_headers_on_subrequests": true},
			sameOrigin, []string{"public.test/page"}},
		{"identify_as_service through a redirect", "hop", map[string]any{"identify_as_service": true},
			nil, []string{"public.test/hop"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := fmt.Sprintf("/h/%d", i)
			build(p)
			body := whenReady(tc.params)
			body["url"] = "http://public.test" + p + "/" + tc.start
			r := o.createAndGet(t, body)
			apitest.WantStatus(t, r, 200)
			apitest.WantPixel(t, apitest.DecodeImage(t, r), 10, 10, green, 8)

			got := map[string][]*http.Request{}
			for _, rc := range []*recorder{w.public, w.port, w.other} {
				for _, req := range rc.snapshot() {
					if rest, ok := strings.CutPrefix(req.URL.Path, p+"/"); ok {
						key := req.Host + "/" + rest
						got[key] = append(got[key], req)
					}
				}
			}
			for _, k := range loads[tc.start] {
				if len(got[k]) == 0 {
					t.Errorf("%s was never requested", k)
				}
			}
			for _, h := range []struct {
				name, value string
				want        []string
			}{{"X-Secret", "s3", tc.secret}, {"X-Service-Screenshot", "1", tc.service}} {
				for k, reqs := range got {
					for _, req := range reqs {
						v, has := req.Header.Values(h.name), slices.Contains(h.want, k)
						switch {
						case has && !slices.Equal(v, []string{h.value}):
							t.Errorf("%s %s: %s = %q, want %q", req.Method, k, h.name, v, h.value)
						case !has && len(v) > 0:
							t.Errorf("%s %s carries %s: %q", req.Method, k, h.name, v)
						}
					}
				}
			}
		})
	}
}

// inkIn returns a pixel of r that is neither white nor transparent: text or
// an icon where nothing may show.
func inkIn(img image.Image, r image.Rectangle) (int, int, bool) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			p := apitest.Pixel(img, x, y)
			if p.A > 16 && (p.R < 200 || p.G < 200 || p.B < 200) {
				return x, y, true
			}
		}
	}
	return 0, 0, false
}
