package origin_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/pictorhq/pictor/edge"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// startCachingEdge runs a separate edge in front of o that caches and
// follows o's purge channel with its edge token, as `pictor edge` does.
func startCachingEdge(t *testing.T, o *testOrigin) string {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(o.DataDir, origin.EdgeTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := edge.DefaultConfig()
	cfg.Addr, cfg.Listener, cfg.OriginURL = ln.Addr().String(), ln, o.URL
	cfg.Standalone, cfg.EdgeToken, cfg.Name = true, strings.TrimSpace(string(token)), "refresh-test"
	cfg.CacheDir = filepath.Join(t.TempDir(), "edge-cache")
	cfg.CacheMem, cfg.CacheDisk = 16<<20, 64<<20
	e, err := edge.New(cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(context.Background()); err != nil {
			t.Errorf("stop edge: %v", err)
		}
	})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return "http://" + ln.Addr().String()
}

// ogRefreshView is the answer to a refresh of one page.
type ogRefreshView struct {
	Path      string  `json:"path"`
	URL       string  `json:"url"`
	Identity  string  `json:"identity"`
	ImageID   *string `json:"image_id"`
	Changed   bool    `json:"changed"`
	Rendered  bool    `json:"rendered"`
	CheckedAt string  `json:"checked_at"`
}

func (o *testOrigin) ogRefresh(t *testing.T, creds apitest.Creds, cfgID string, body any) *apitest.Response {
	t.Helper()
	r := apitest.Request{Method: "POST", Path: "/v1/og-configs/" + cfgID + "/refresh", Creds: &creds}
	if s, ok := body.(string); ok {
		r.Raw = s
	} else {
		r.JSON = body
	}
	return o.do(t, r)
}

func (o *testOrigin) ogRefreshPage(t *testing.T, cfgID, path string) ogRefreshView {
	t.Helper()
	r := o.ogRefresh(t, o.Owner, cfgID, map[string]any{"path": path})
	apitest.WantStatus(t, r, 200)
	var v ogRefreshView
	r.Decode(t, &v)
	return v
}

// TestOGRefreshPage: a refresh of a page whose content_version changed
// renders its new card at once, charges it as any OG image, and has the
// edge drop the page's cached card, so that the next GET through the edge
// is the new card; a refresh of a page that did not change renders and
// charges nothing and leaves the edge's card; a refused render (the cap)
// and a page that cannot be read answer why, and the current card stays.
func TestOGRefreshPage(t *testing.T) {
	o := startOrigin(t)
	edgeURL := startCachingEdge(t, o)
	s := newOGSite(t)
	cfgID, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL, "max_new_images_per_period": 2})
	card := "/v1/og/" + domain + "/post/1"
	viaEdge := func() *apitest.Response {
		t.Helper()
		return apitest.Do(t, edgeURL, apitest.Request{Method: "GET", Path: card})
	}
	wantOGImage(t, viaEdge(), 1200, 630, ogBlue)
	misses := apitest.Metric(t, edgeURL, "pictor_edge_og_misses_total")
	wantOGImage(t, viaEdge(), 1200, 630, ogBlue)

	// Nothing changed: nothing rendered, charged or purged.
	renders, credits := o.rendersOK(t), creditsUsed(t, o)
	v := o.ogRefreshPage(t, cfgID, "/post//1/")
	if v.Path != "/post/1" || !strings.HasSuffix(v.URL, card) || v.Changed || v.Rendered || v.ImageID == nil || len(v.Identity) != 32 || v.CheckedAt == "" {
		t.Fatalf("refresh of an unchanged page: %+v", v)
	}
	if etag := o.ogGet(t, domain, "/post/1", "").Header.Get("ETag"); etag != `"`+*v.ImageID+`"` {
		t.Fatalf("image_id %s, the origin serves %s", *v.ImageID, etag)
	}
	if o.rendersOK(t) != renders || creditsUsed(t, o) != credits {
		t.Fatalf("an unchanged refresh made %d renders and used %d credits", o.rendersOK(t)-renders, creditsUsed(t, o)-credits)
	}
	wantOGImage(t, viaEdge(), 1200, 630, ogBlue)
	if got := apitest.Metric(t, edgeURL, "pictor_edge_og_misses_total"); got != misses {
		t.Fatalf("the edge missed %v times after an unchanged refresh, want %v: it dropped the card", got, misses)
	}

	// A new content_version: the edge keeps its card until the refresh,
	// which renders the new one and has the edge drop the old.
	s.set("/post/1", ogSitePage{color: "rgb(255,0,0)", contentVersion: 2})
	wantOGImage(t, viaEdge(), 1200, 630, ogBlue)
	changed := o.ogRefreshPage(t, cfgID, "/post/1")
	if !changed.Changed || !changed.Rendered || changed.Identity == v.Identity || changed.ImageID == nil || *changed.ImageID == *v.ImageID {
		t.Fatalf("refresh of a changed page: %+v (before: %+v)", changed, v)
	}
	if o.rendersOK(t) != renders+1 || creditsUsed(t, o) != credits+1 {
		t.Fatalf("a changed refresh made %d renders and used %d credits, want 1 and 1", o.rendersOK(t)-renders, creditsUsed(t, o)-credits)
	}
	wantOGImage(t, viaEdge(), 1200, 630, ogRed)
	if etag := o.ogGet(t, domain, "/post/1", "").Header.Get("ETag"); etag != `"`+*changed.ImageID+`"` {
		t.Fatalf("image_id %s, the origin serves %s", *changed.ImageID, etag)
	}

	// The cap (2 new images) refuses the next change: 429 saying which
	// cap, and the red card stays.
	s.set("/post/1", ogSitePage{color: "rgb(0,255,0)", contentVersion: 3})
	r := o.ogRefresh(t, o.Owner, cfgID, map[string]any{"path": "/post/1"})
	apitest.WantMessage(t, apitest.WantError(t, r, 429), "max_new_images_per_period", "current card stays served")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	wantOGImage(t, viaEdge(), 1200, 630, ogRed)

	// The site fails: 422 naming the cause, and the red card stays.
	s.failing.Store(true)
	r = o.ogRefresh(t, o.Owner, cfgID, map[string]any{"path": "/post/1"})
	apitest.WantMessage(t, apitest.WantError(t, r, 422), "could not be read", "500")
	wantOGImage(t, viaEdge(), 1200, 630, ogRed)
	wantOGImage(t, o.ogGet(t, domain, "/post/1", ""), 1200, 630, ogRed)
}

// TestOGRefreshAllPages: a refresh without a path reads nothing at once;
// each page is then read again (unconditionally) at its next request,
// served its current card meanwhile: a changed page gets its new card, an
// unchanged one keeps its image at no cost, and the edge's cards were
// dropped so that the next request through it reaches the origin.
func TestOGRefreshAllPages(t *testing.T) {
	rechecked := make(chan string, 16)
	o := startOrigin(t, func(c *origin.Config) { c.OG.OnRecheck = func(_, path string) { rechecked <- path } })
	edgeURL := startCachingEdge(t, o)
	s := newOGSite(t)
	cfgID, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL, "refresh_interval_s": 3600})
	etags := map[string]string{}
	for _, p := range []string{"/a", "/b"} {
		r := o.ogGet(t, domain, p, "")
		wantOGImage(t, r, 1200, 630, ogBlue)
		etags[p] = r.Header.Get("ETag")
	}
	wantOGImage(t, apitest.Do(t, edgeURL, apitest.Request{Method: "GET", Path: "/v1/og/" + domain + "/a"}), 1200, 630, ogBlue)
	renders, credits := o.rendersOK(t), creditsUsed(t, o)

	// Changed on the site, but within its refresh interval: served as it was.
	s.set("/a", ogSitePage{color: "rgb(255,0,0)", contentVersion: 2})
	if r := o.ogGet(t, domain, "/a", ""); r.Header.Get("ETag") != etags["/a"] || !strings.Contains(r.Header.Get("Cache-Control"), "max-age=3600,") {
		t.Fatalf("before the refresh: ETag %q, Cache-Control %q", r.Header.Get("ETag"), r.Header.Get("Cache-Control"))
	}
	for _, tc := range []struct {
		name, contentType, body string
	}{
		{"no body", "", ""},
		{"empty object", "application/json", "{}"},
		{"null path", "application/json", `{"path": null}`},
		{"empty form value", "application/x-www-form-urlencoded", "path="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + cfgID + "/refresh", Creds: &o.Owner, Raw: tc.body, ContentType: tc.contentType})
			apitest.WantStatus(t, r, 202)
			var v struct {
				Pages string `json:"pages"`
				At    string `json:"refresh_requested_at"`
			}
			r.Decode(t, &v)
			if v.Pages != "all" || !strings.HasPrefix(v.At, "2026-03-14T") {
				t.Fatalf("answer %s", r.Body)
			}
		})
	}
	if o.rendersOK(t) != renders {
		t.Fatal("a refresh of every page rendered at once")
	}

	// The changed page: its current card at once, then its new one.
	s.drain()
	r := o.ogGet(t, domain, "/a", "")
	if r.Header.Get("ETag") != etags["/a"] || !strings.Contains(r.Header.Get("Cache-Control"), "max-age=10,") {
		t.Fatalf("after the refresh: ETag %q, Cache-Control %q; want the current card, asked again soon", r.Header.Get("ETag"), r.Header.Get("Cache-Control"))
	}
	s.waitRequest(t, "/a")
	r = waitRecheck(t, o, rechecked, domain, "/a")
	wantOGImage(t, r, 1200, 630, ogRed)
	// The edge dropped its card: its next answer is the new one.
	wantOGImage(t, apitest.Do(t, edgeURL, apitest.Request{Method: "GET", Path: "/v1/og/" + domain + "/a"}), 1200, 630, ogRed)

	// The unchanged page: read again in full (no conditional request),
	// same image, nothing rendered.
	notModified := s.notModified.Load()
	if got := o.ogGet(t, domain, "/b", "").Header.Get("Cache-Control"); !strings.Contains(got, "max-age=10,") {
		t.Fatalf("/b after the refresh: Cache-Control %q, want it asked again soon", got)
	}
	r = waitRecheck(t, o, rechecked, domain, "/b")
	if r.Header.Get("ETag") != etags["/b"] || s.notModified.Load() != notModified {
		t.Fatalf("/b: ETag %q (want %q), %d conditional reads answered 304", r.Header.Get("ETag"), etags["/b"], s.notModified.Load()-notModified)
	}
	if o.rendersOK(t) != renders+1 || creditsUsed(t, o) != credits+1 {
		t.Fatalf("%d renders and %d credits, want 1 and 1 (the changed page)", o.rendersOK(t)-renders, creditsUsed(t, o)-credits)
	}
}

// TestOGRefreshRefusals: bad paths and bodies are 400s naming the field;
// another organization's configuration and an unknown one 404; a disabled
// one 409; a page that cannot be read (unreachable, an error status, not
// HTML) a 422 naming the cause; a key without the write permission 403.
func TestOGRefreshRefusals(t *testing.T) {
	o := startOrigin(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/text":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "not a page")
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	cfgID, _ := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": site.URL})

	for i, tc := range []struct {
		name string
		body string
		msg  string
	}{
		{"empty path", `{"path": ""}`, "starting with /"},
		{"relative", `{"path": "post/1"}`, "starting with /"},
		{"a URL", `{"path": "https://blog.example.com/post/1"}`, "starting with /"},
		{"a host", `{"path": "//evil.example/post"}`, "without a scheme or host"},
		{"a query", `{"path": "/post?id=1"}`, "query"},
		{"a fragment", `{"path": "/post#top"}`, "fragment"},
		{"bad escape", `{"path": "/a/%zz"}`, "escapes"},
		{"escaped control character", `{"path": "/a%00b"}`, "control"},
		{"control character", `{"path": "/a\u0007b"}`, "control"},
		{"over 2 KiB", `{"path": "/` + strings.Repeat("a", 2100) + `"}`, "2 KiB"},
		{"over 2 KiB once escaped", `{"path": "/` + strings.Repeat("é", 400) + `"}`, "2 KiB"},
		{"not a string", `{"path": 5}`, "string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if i%10 == 9 {
				o.nextWindow() // the og-config:write group allows 20 a minute
			}
			r := o.ogRefresh(t, o.Owner, cfgID, tc.body)
			apitest.WantField(t, r, "path")
			apitest.WantMessage(t, apitest.WantError(t, r, 400), tc.msg)
		})
	}
	o.nextWindow()
	apitest.WantError(t, o.ogRefresh(t, o.Owner, cfgID, `{"path": `), 400)
	apitest.WantField(t, o.ogRefresh(t, o.Owner, "not-an-id", `{}`), "id")
	apitest.WantError(t, o.ogRefresh(t, o.Owner, "0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", `{"path": "/"}`), 404)
	_, other := o.newOrg(t.Context(), t, "scale")
	otherID := func() string {
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: &other, JSON: map[string]any{"config_type": "html_css", "base_url": site.URL}})
		apitest.WantStatus(t, r, 200)
		var c struct{ ID string }
		r.Decode(t, &c)
		return c.ID
	}()
	for _, body := range []string{`{"path": "/"}`, `{}`} {
		apitest.WantError(t, o.ogRefresh(t, o.Owner, otherID, body), 404)
	}
	readOnly := o.createKey(t, o.Owner, map[string]any{"name": "reader", "permissions": []string{"og_configs:read"}})
	apitest.WantError(t, o.ogRefresh(t, *readOnly.creds(), cfgID, `{}`), 403)

	o.nextWindow()
	for _, tc := range []struct {
		name, path, msg string
	}{
		{"an error status", "/missing", "404"},
		{"not HTML", "/text", "not HTML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := o.ogRefresh(t, o.Owner, cfgID, map[string]any{"path": tc.path})
			apitest.WantMessage(t, apitest.WantError(t, r, 422), "could not be read", tc.msg)
		})
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	goneID, _ := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": gone.URL})
	apitest.WantMessage(t, apitest.WantError(t, o.ogRefresh(t, o.Owner, goneID, map[string]any{"path": "/"}), 422), "could not be read")

	// Disabled: 409, with or without a path.
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + cfgID, Creds: &o.Owner,
		JSON: map[string]any{"config_type": "html_css", "base_url": site.URL, "disabled": true}}), 200)
	for _, body := range []string{`{"path": "/"}`, ""} {
		apitest.WantMessage(t, apitest.WantError(t, o.ogRefresh(t, o.Owner, cfgID, body), 409), "disabled")
	}
}

// TestOGRefreshAcrossOrigins: two origins on one store and one bucket. A
// refresh of a page on one is what the other serves next; a refresh of
// every page on one makes the other read its pages again: the state is in
// the store, not in a process.
func TestOGRefreshAcrossOrigins(t *testing.T) {
	db := pgtest.Shared(t).Database(t)
	s3 := s3test.New(t)
	const masterKey = "6e2d1c0b9a8f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d5c4b3a29180f7e6d"
	shared := func(c *origin.Config) {
		c.Store, c.MasterKey, c.CompactIdle = db, masterKey, -1
		c.Blobs.URL = "s3://" + s3.Bucket + "/masters?endpoint=" + s3.URL + "&region=us-east-1&path_style=true"
		c.Blobs.Credentials = credentials.NewStaticCredentialsProvider(s3test.AccessKeyID, s3test.SecretAccessKey, "")
	}
	a := startOrigin(t, shared)
	rechecked := make(chan string, 16)
	b := startOrigin(t, shared, func(c *origin.Config) {
		c.CreateDefaultOrg, c.PublicURL = false, a.URL
		c.OG.OnRecheck = func(_, path string) { rechecked <- path }
	})
	b.Owner, b.OrgID = a.Owner, a.OrgID
	s := newOGSite(t)
	cfgID, domain := a.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL, "refresh_interval_s": 3600})
	wantOGImage(t, b.ogGet(t, domain, "/a", ""), 1200, 630, ogBlue)
	before := b.ogGet(t, domain, "/b", "")
	wantOGImage(t, before, 1200, 630, ogBlue)

	s.set("/a", ogSitePage{color: "rgb(255,0,0)", contentVersion: 2})
	v := a.ogRefreshPage(t, cfgID, "/a")
	if !v.Changed || v.ImageID == nil {
		t.Fatalf("refresh on the first origin: %+v", v)
	}
	r := b.ogGet(t, domain, "/a", "")
	wantOGImage(t, r, 1200, 630, ogRed)
	if r.Header.Get("ETag") != `"`+*v.ImageID+`"` {
		t.Fatalf("the second origin serves %s, the refresh made %s", r.Header.Get("ETag"), *v.ImageID)
	}

	apitest.WantStatus(t, a.ogRefresh(t, a.Owner, cfgID, ""), 202)
	if cc := b.ogGet(t, domain, "/b", "").Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=10,") {
		t.Fatalf("the second origin after a refresh of every page on the first: Cache-Control %q, want the page read again", cc)
	}
	r = waitRecheck(t, b, rechecked, domain, "/b")
	if r.Header.Get("ETag") != before.Header.Get("ETag") {
		t.Fatalf("an unchanged page changed its image: %s, was %s", r.Header.Get("ETag"), before.Header.Get("ETag"))
	}
}
