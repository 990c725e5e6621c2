package origin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/color"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/edge"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// These tests prove that a render whose main document cannot be loaded
// fails, instead of becoming a picture of an error page that the egress or
// Chromium made: the GET answers the standard error body naming the cause,
// nothing is cached, the answer is recorded (a second GET gives the same
// without rendering again) and the image's credit is given back. A page
// that loads is still captured, its own 404 or 500 and broken subframes
// included.

// Public addresses of the failure world, routed by the egress dial hook.
const (
	refusedIP = "93.184.216.50" // refused.test: nothing listens
	resetIP   = "93.184.216.51" // reset.test: accepts and resets
	plainIP   = "93.184.216.52" // plain.test: plain HTTP on 443
)

// failureWorld is egressWorld (public.test, private.test, ...) with hosts
// that fail in each way a network can: nonexistent.invalid has no address
// at all.
type failureWorld struct {
	*egressWorld
}

func newFailureWorld(t *testing.T) *failureWorld {
	t.Helper()
	w := &failureWorld{newEgressWorld(t)}
	closed := apitest.ClosedAddr(t)
	w.dns.names["refused.test"] = []string{refusedIP}
	w.dns.names["reset.test"] = []string{resetIP}
	w.dns.names["plain.test"] = []string{plainIP}
	w.dials.routes[refusedIP+":80"] = closed
	w.dials.routes[refusedIP+":443"] = closed
	w.dials.routes[resetIP+":80"] = apitest.ResetServer(t)
	w.dials.routes[plainIP+":443"] = w.other.addr()
	return w
}

// pageWithStatus serves html with a status of the site's choosing.
func (rc *recorder) pageWithStatus(path string, status int, html string) {
	rc.mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		io.WriteString(w, "<!DOCTYPE html>"+html)
	})
}

// usageReport is the whole GET /v1/usage body: buckets and periods.
func (o *testOrigin) usageReport(t testing.TB, c apitest.Creds) string {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &c})
	apitest.WantStatus(t, r, 200)
	return string(r.Body)
}

// failure is a render that must fail, and how.
type failure struct {
	name   string
	body   map[string]any
	status int
	// mention: fragments the message must contain, naming the cause.
	mention []string
}

// wantFailure creates an image of tc.body, which must be accepted and
// charged, and proves its GET fails as tc says, twice, without a picture,
// without caching, without a second render, and with the credit back.
func (o *testOrigin) wantFailure(t *testing.T, tc failure) {
	t.Helper()
	usageBefore := o.usageReport(t, o.Owner)
	cr := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: tc.body})
	apitest.WantStatus(t, cr, 200)
	if got := cr.Header.Get("x-renders-consumed"); got != "1" {
		t.Fatalf("x-renders-consumed %q at creation, want 1", got)
	}
	var c struct{ URL string }
	cr.Decode(t, &c)

	first := o.get(t, c.URL)
	if strings.HasPrefix(first.Header.Get("Content-Type"), "image/") {
		img := apitest.DecodeImage(t, first)
		t.Fatalf("GET answered %d with a %v picture, want %d: an error page was captured", first.Status, img.Bounds().Size(), tc.status)
	}
	m := apitest.WantError(t, first, tc.status)
	apitest.WantMessage(t, m, tc.mention...)
	msg := m["message"].(string)
	for _, leak := range []string{"127.0.0.1", "::1", "egress:", "Blocked by the Pictor", "X-Pictor"} {
		if strings.Contains(msg, leak) {
			t.Errorf("message %q gives away %q", msg, leak)
		}
	}
	if cc := first.Header.Get("Cache-Control"); cc != "no-store" || strings.Contains(cc, "immutable") {
		t.Errorf("Cache-Control %q on a failure, want no-store", cc)
	}

	// Recorded: the same answer again, without a render.
	renders := apitest.Metric(t, o.URL, `pictor_render_total{outcome="target"}`) + apitest.Metric(t, o.URL, `pictor_render_total{outcome="ok"}`)
	again := o.get(t, c.URL)
	if again.Status != first.Status || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("second GET: %d %s, want the first answer again: %d %s", again.Status, again.Body, first.Status, first.Body)
	}
	if now := apitest.Metric(t, o.URL, `pictor_render_total{outcome="target"}`) + apitest.Metric(t, o.URL, `pictor_render_total{outcome="ok"}`); now != renders {
		t.Errorf("the second GET rendered again (%v renders, then %v)", renders, now)
	}
	if after := o.usageReport(t, o.Owner); after != usageBefore {
		t.Errorf("usage changed by a failed render:\nbefore %s\nafter  %s", usageBefore, after)
	}
}

// TestMainDocumentFailuresAreNotCaptured covers every way the main
// document can fail to load: at the start, after a redirect, and when the
// page navigates itself away.
func TestMainDocumentFailuresAreNotCaptured(t *testing.T) {
	t.Parallel() // a slow test with its own origin: see startOrigin
	w := newFailureWorld(t)
	o := startOrigin(t, w.configure(false))
	sp := w.secret.port
	targets := map[string]string{
		"unresolvable":       "http://nonexistent.invalid/",
		"unresolvable-https": "https://nonexistent.invalid/",
		"refused":            "http://refused.test/",
		"refused-https":      "https://refused.test/",
		"reset":              "http://reset.test/",
		"tls":                "https://plain.test/",
		"private":            "http://private.test:" + sp + "/",
		"private-https":      "https://private.test:" + sp + "/",
	}
	for name, u := range targets {
		w.public.redirect("/to/"+name, u)
	}
	w.public.page("/self/unresolvable", `<p>leaving</p><script>location.href = "http://nonexistent.invalid/"</script>`)
	w.public.page("/self/refused-https", `<p>leaving</p><script>location.href = "https://refused.test/"</script>`)
	w.public.page("/self/after-load", greenMark+`<script>addEventListener("load", () => { location.href = "http://reset.test/"; })</script>`)
	w.public.page("/self/meta-refresh", greenMark+`<meta http-equiv="refresh" content="0;url=http://private.test:`+sp+`/">`)

	resolve := []string{"could not be reached", "could not resolve host nonexistent.invalid"}
	refused := []string{"could not be reached", "connection refused by refused.test:80"}
	refusedTLS := []string{"could not be reached", "connection refused by refused.test:443"}
	reset := []string{"could not be reached", "connection reset by reset.test:80"}
	handshake := []string{"could not be reached", "TLS handshake with plain.test failed"}
	blocked := []string{"not allowed", "private.test resolves to a loopback address"}
	url := func(u string) map[string]any { return map[string]any{"url": u} }
	tests := []failure{
		{"unresolvable host", url(targets["unresolvable"]), 502, resolve},
		{"unresolvable host over https", url(targets["unresolvable-https"]), 502, resolve},
		{"connection refused", url(targets["refused"]), 502, refused},
		{"connection refused over https", url(targets["refused-https"]), 502, refusedTLS},
		{"connection reset", url(targets["reset"]), 502, reset},
		{"TLS handshake with a plain HTTP server", url(targets["tls"]), 502, handshake},
		{"name resolving to a refused address", url(targets["private"]), 400, blocked},
		{"name resolving to a refused address over https", url(targets["private-https"]), 400, blocked},
		{"redirect to an unresolvable host", url("http://public.test/to/unresolvable"), 502, resolve},
		{"redirect to an unresolvable host over https", url("http://public.test/to/unresolvable-https"), 502, resolve},
		{"redirect to a refused connection", url("http://public.test/to/refused"), 502, refused},
		{"redirect to a refused connection over https", url("http://public.test/to/refused-https"), 502, refusedTLS},
		{"redirect to a reset connection", url("http://public.test/to/reset"), 502, reset},
		{"redirect to a failing TLS handshake", url("http://public.test/to/tls"), 502, handshake},
		{"redirect to a refused address", url("http://public.test/to/private"), 400, blocked},
		{"redirect to a refused address over https", url("http://public.test/to/private-https"), 400, blocked},
		{"page that sends itself to an unresolvable host", url("http://public.test/self/unresolvable"), 502, resolve},
		{"page that sends itself to a refused tunnel", url("http://public.test/self/refused-https"), 502, refusedTLS},
		{"page that sends itself away once loaded", url("http://public.test/self/after-load"), 502, reset},
		{"page that refreshes to a refused address", url("http://public.test/self/meta-refresh"), 400, blocked},
		{"html that sends itself to an unresolvable host", map[string]any{"html": greenMark + `<script>location.href = "http://nonexistent.invalid/"</script>`}, 502, resolve},
		{"html that sends itself to a document Pictor does not hold", map[string]any{"html": greenMark + `<script>location.href = "http://pictor.internal/doc/none"</script>`}, 400,
			[]string{"not allowed", "pictor.internal serves no such document"}},
		{"html that sends itself to a refused address", map[string]any{"html": greenMark + `<script>addEventListener("load", () => { location.href = "http://private.test:` + sp + `/"; })</script>`}, 400, blocked},
	}
	start := w.secret.touched()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { o.wantFailure(t, tc) })
	}
	w.secret.wantUntouchedSince(t, start)
}

// TestSitePagesAreCaptured: a page that loads is captured whatever its
// status, and a subframe, image or tunnel that fails is not the main
// document. Each is charged.
func TestSitePagesAreCaptured(t *testing.T) {
	w := newFailureWorld(t)
	o := startOrigin(t, w.configure(false))
	box := `<div style="width:300px;height:200px;background:rgb(0,0,255)"></div>`
	w.public.pageWithStatus("/own-404", http.StatusNotFound, box+`<p>Not here</p>`)
	w.public.pageWithStatus("/own-500", http.StatusInternalServerError, box+`<p>Broken</p>`)
	w.public.pageWithStatus("/own-502", http.StatusBadGateway, box+`<p>Bad gateway</p>`)
	w.public.page("/broken-parts", greenMark+
		`<iframe src="http://nonexistent.invalid/" width="50" height="50"></iframe>`+
		`<iframe src="https://refused.test/" width="50" height="50"></iframe>`+
		`<iframe src="http://private.test:`+w.secret.port+`/" width="50" height="50"></iframe>`+
		`<iframe src="http://pictor.internal/doc/none" width="50" height="50"></iframe>`+
		`<img src="http://reset.test/x.png" width="20" height="20"><img src="https://plain.test/y.png" width="20" height="20">`)
	tests := []struct {
		name string
		body map[string]any
		// want is the colour at (40,40): the page's own box or mark.
		want color.NRGBA
	}{
		{"the site's own 404 page", map[string]any{"url": "http://public.test/own-404"}, blue},
		{"the site's own 500 page", map[string]any{"url": "http://public.test/own-500"}, blue},
		{"the site's own 502 page", map[string]any{"url": "http://public.test/own-502"}, blue},
		{"a page whose subframes and images fail", map[string]any{"url": "http://public.test/broken-parts"}, green},
		{"html whose subframes fail", map[string]any{"html": greenMark + `<iframe src="http://nonexistent.invalid/"></iframe><img src="https://refused.test/x.png">`,
			"viewport_width": 400, "viewport_height": 300}, green},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			used := o.usage(t, o.Owner)
			img := o.render(t, tc.body)
			apitest.WantPixel(t, img, 40, 40, tc.want, 8)
			if got := o.usage(t, o.Owner) - used; got != 1 {
				t.Fatalf("a captured page cost %d credits, want 1", got)
			}
		})
	}
}

// TestFailuresNeverReachTheEdgeCache puts an edge in front of the origin:
// a failed render is relayed to the client every time, never stored, while
// a picture is stored once and then served from the cache.
func TestFailuresNeverReachTheEdgeCache(t *testing.T) {
	w := newFailureWorld(t)
	o := startOrigin(t, w.configure(false))
	cfg := edge.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.OriginURL = o.URL
	cfg.PublicURL = o.URL
	cfg.CacheDir = t.TempDir()
	cfg.CacheMem = 16 << 20
	cfg.CacheDisk = 64 << 20
	e, err := edge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		e.Stop(ctx)
	})
	base := "http://" + e.Addr()
	hits := func() float64 {
		return apitest.Metric(t, base, "pictor_edge_hits_l1_total") + apitest.Metric(t, base, "pictor_edge_hits_l2_total")
	}

	_, bad := o.create(t, o.Owner, map[string]any{"url": "http://nonexistent.invalid/"})
	_, good := o.create(t, o.Owner, map[string]any{"html": redBox})
	bad, good = strings.TrimPrefix(bad, o.URL), strings.TrimPrefix(good, o.URL)

	before := hits()
	for i := range 3 {
		r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: bad})
		apitest.WantMessage(t, apitest.WantError(t, r, 502), "could not resolve host nonexistent.invalid")
		if cc := r.Header.Get("Cache-Control"); strings.Contains(cc, "immutable") || !strings.Contains(cc, "no-store") {
			t.Fatalf("GET %d through the edge: Cache-Control %q", i, cc)
		}
	}
	if got := hits() - before; got != 0 {
		t.Fatalf("the edge answered a failed render from its cache %v times", got)
	}
	// The proof that hits are counted: a picture is a hit the second time.
	for range 2 {
		r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: good})
		apitest.WantPixel(t, apitest.DecodeImage(t, r), 10, 10, red, 0)
	}
	if got := hits() - before; got != 1 {
		t.Fatalf("%v cache hits for a picture fetched twice, want 1", got)
	}
}

// TestRefundsAreExact creates failing and succeeding images at once, each
// fetched by several GETs at once while its background render runs: every
// failing image gives its credit back exactly once, every succeeding one
// keeps it, and the next charge counts on from what was kept.
func TestRefundsAreExact(t *testing.T) {
	w := newFailureWorld(t)
	o := startOrigin(t, w.configure(false))
	_, free := o.newOrg(t.Context(), t, "free") // 50 credits
	const failing, succeeding, getters = 12, 3, 3
	bodies := make([]map[string]any, 0, failing+succeeding)
	for i := range failing {
		hosts := []string{"http://nonexistent.invalid/", "http://refused.test/", "https://private.test:" + w.secret.port + "/"}
		bodies = append(bodies, map[string]any{"url": hosts[i%len(hosts)] + strconv.Itoa(i)})
	}
	for i := range succeeding {
		bodies = append(bodies, map[string]any{"html": redBox + "<!-- " + strconv.Itoa(i) + " -->"})
	}
	var wg sync.WaitGroup
	statuses := make([][]int, len(bodies))
	for i, body := range bodies {
		wg.Go(func() {
			r, err := apitest.Send(o.URL, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &free, JSON: body})
			if err != nil || r.Status != 200 {
				return
			}
			var c struct{ URL string }
			if json.Unmarshal(r.Body, &c) != nil {
				return
			}
			got := make([]int, getters)
			var gets sync.WaitGroup
			for j := range getters {
				gets.Go(func() {
					if g, err := apitest.Send(o.URL, apitest.Request{Method: "GET", Path: strings.TrimPrefix(c.URL, o.URL)}); err == nil {
						got[j] = g.Status
					}
				})
			}
			gets.Wait()
			statuses[i] = got
		})
	}
	wg.Wait()
	for i, got := range statuses {
		want := 200
		if i < failing {
			want = map[int]int{0: 502, 1: 502, 2: 400}[i%3]
		}
		for j, s := range got {
			if s != want {
				t.Fatalf("image %d (%v), GET %d: status %d, want %d", i, bodies[i], j, s, want)
			}
		}
		if len(got) != getters {
			t.Fatalf("image %d (%v) was not created", i, bodies[i])
		}
	}
	if used := o.usage(t, free); used != succeeding {
		t.Fatalf("%d credits used, want %d: one for each image that rendered", used, succeeding)
	}
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &free, JSON: map[string]any{"html": "<p>next</p>"}})
	apitest.WantStatus(t, r, 200)
	if got := r.Header.Get("x-renders-used"); got != strconv.Itoa(succeeding+1) {
		t.Fatalf("x-renders-used %q after the refunds, want %d", got, succeeding+1)
	}
}
