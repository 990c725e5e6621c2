package origin_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// ogSite is a local website whose pages carry OG metadata: each path's
// background colour and content_version can be changed while it runs, and
// it can be made to fail.
type ogSite struct {
	*httptest.Server
	mu          sync.Mutex
	pages       map[string]ogSitePage
	failing     atomic.Bool
	notModified atomic.Int64 // 304s to conditional requests
	requests    chan string  // every path requested, for tests that wait on a read
}

type ogSitePage struct {
	color          string // CSS colour of the whole page
	contentVersion int
	extra          string // more <head>
	maxAge         int    // the page's own Cache-Control max-age, when set
}

func newOGSite(t *testing.T) *ogSite {
	s := &ogSite{pages: map[string]ogSitePage{}, requests: make(chan string, 1024)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.requests <- r.URL.Path:
		default:
		}
		if s.failing.Load() {
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
			return
		}
		s.mu.Lock()
		p, ok := s.pages[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			p = ogSitePage{color: "rgb(0,0,255)"}
		}
		// The page's validator names what it shows: a conditional
		// request for an unchanged page gets a 304.
		etag := fmt.Sprintf(`"%x"`, sha256.Sum256([]byte(fmt.Sprint(p))))
		w.Header().Set("ETag", etag)
		if p.maxAge > 0 {
			w.Header().Set("Cache-Control", fmt.Sprintf("max-age=%d", p.maxAge))
		}
		if r.Header.Get("If-None-Match") == etag {
			s.notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>Page %s</title>
<meta property="og:title" content="Title of %s">
<meta name="hcti:content_version" content="%d">%s
</head><body style="margin:0;background:%s"></body></html>`, r.URL.Path, r.URL.Path, p.contentVersion, p.extra, p.color)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *ogSite) set(path string, p ogSitePage) {
	s.mu.Lock()
	s.pages[path] = p
	s.mu.Unlock()
}

// waitRequest waits until the ogSite was asked for path.
func (s *ogSite) waitRequest(t *testing.T, path string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case p := <-s.requests:
			if p == path {
				return
			}
		case <-deadline:
			t.Fatalf("the ogSite was never asked for %s", path)
		}
	}
}

// drain forgets the requests seen so far.
func (s *ogSite) drain() {
	for {
		select {
		case <-s.requests:
		default:
			return
		}
	}
}

func (o *testOrigin) ogConfig(t *testing.T, body map[string]any) (id, domainID string) {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: &o.Owner, JSON: body})
	apitest.WantStatus(t, r, 200)
	var c struct {
		ID       string
		DomainID string `json:"domain_id"`
	}
	r.Decode(t, &c)
	return c.ID, c.DomainID
}

// ogGet asks the origin for an OG image as the edge does.
func (o *testOrigin) ogGet(t *testing.T, domainID, path, platform string) *apitest.Response {
	t.Helper()
	h := map[string]string{}
	if platform != "" {
		h[contract.HeaderOGPlatform] = platform
	}
	return o.do(t, apitest.Request{Method: "GET", Path: "/v1/og/" + domainID + path, Header: h})
}

// wantOGImage decodes an OG answer and checks its size and the colour at
// its centre.
func wantOGImage(t *testing.T, r *apitest.Response, w, h int, want color.RGBA) {
	t.Helper()
	apitest.WantStatus(t, r, 200)
	img, err := png.Decode(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("image %d×%d, want %d×%d", b.Dx(), b.Dy(), w, h)
	}
	c := color.RGBAModel.Convert(img.At(w/2, h/2)).(color.RGBA)
	if d := func(a, b uint8) int { return max(int(a), int(b)) - min(int(a), int(b)) }; d(c.R, want.R) > 8 || d(c.G, want.G) > 8 || d(c.B, want.B) > 8 {
		t.Fatalf("centre %v, want %v", c, want)
	}
}

var (
	ogBlue = color.RGBA{0, 0, 255, 255}
	ogRed  = color.RGBA{255, 0, 0, 255}
)

// TestOGImages follows one page through its life at the origin: the first
// request renders once however many ask; the identity is the image's
// ETag; after the refresh interval the current image is served at once
// and the page is read again in the background, rendering nothing when
// nothing changed, and a new image when content_version changed; a
// failing source keeps the last image served.
func TestOGImages(t *testing.T) {
	rechecked := make(chan string, 16)
	o := startOrigin(t, func(c *origin.Config) { c.OG.OnRecheck = func(_, path string) { rechecked <- path } })
	s := newOGSite(t)
	cfgID, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL, "refresh_interval_s": 3600})

	// 50 concurrent first requests: one read, one render, one credit.
	before, creditsBefore := o.rendersOK(t), creditsUsed(t, o)
	var wg sync.WaitGroup
	answers := make([]*apitest.Response, 50)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := apitest.Send(o.URL, apitest.Request{Method: "GET", Path: "/v1/og/" + domain + "/blog/post"})
			if err != nil {
				t.Error(err)
				return
			}
			answers[i] = r
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	wantOGImage(t, answers[0], 1200, 630, ogBlue)
	etag := answers[0].Header.Get("ETag")
	for i, r := range answers {
		if r.Status != 200 || r.Header.Get("ETag") != etag || !bytes.Equal(r.Body, answers[0].Body) {
			t.Fatalf("answer %d: %d, ETag %q, want the first's %q", i, r.Status, r.Header.Get("ETag"), etag)
		}
	}
	if got := o.rendersOK(t) - before; got != 1 {
		t.Fatalf("50 first requests made %d renders, want 1", got)
	}
	r := answers[0]
	if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=3600") || !strings.Contains(cc, "stale-while-revalidate=") {
		t.Fatalf("Cache-Control %q", cc)
	}
	if r.Header.Get(contract.HeaderTag) != contract.JoinTags(contract.OGConfigTag(cfgID), contract.OGPageTag(cfgID, "/blog/post")) || r.Header.Get(contract.HeaderOGMode) != contract.OGFit {
		t.Fatalf("notes for the edge: tag %q mode %q", r.Header.Get(contract.HeaderTag), r.Header.Get(contract.HeaderOGMode))
	}
	// Two spellings of one page, and a query string, are one image.
	for _, p := range []string{"/blog//post/", "/blog/./x/../post?utm=1", "/blog/%70ost"} {
		if got := o.ogGet(t, domain, p, "").Header.Get("ETag"); got != etag {
			t.Fatalf("%s: ETag %q, want %q", p, got, etag)
		}
	}
	// If-None-Match → 304.
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/og/" + domain + "/blog/post", Header: map[string]string{"If-None-Match": etag}}), 304)

	// The interval passes; the page is unchanged: the current image at
	// once, one read in the background, no render.
	s.drain()
	o.Clock.Advance(2 * time.Hour)
	r = o.ogGet(t, domain, "/blog/post", "")
	if r.Header.Get("ETag") != etag {
		t.Fatalf("stale answer ETag %q, want %q", r.Header.Get("ETag"), etag)
	}
	if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age=10,") {
		t.Fatalf("stale answer Cache-Control %q, want a short max-age while the page is read", cc)
	}
	s.waitRequest(t, "/blog/post")
	waitRecheck(t, o, rechecked, domain, "/blog/post")
	if got := o.rendersOK(t) - before; got != 1 {
		t.Fatalf("a recheck of an unchanged page rendered: %d renders", got)
	}
	if got := creditsUsed(t, o) - creditsBefore; got != 1 {
		t.Fatalf("one image and an unchanged recheck used %d credits, want 1", got)
	}
	if s.notModified.Load() != 1 {
		t.Fatalf("the recheck was answered %d 304s, want one conditional read", s.notModified.Load())
	}

	// A new content_version (and colour): a new image after the recheck.
	s.set("/blog/post", ogSitePage{color: "rgb(255,0,0)", contentVersion: 2})
	o.Clock.Advance(2 * time.Hour)
	s.drain()
	if got := o.ogGet(t, domain, "/blog/post", "").Header.Get("ETag"); got != etag {
		t.Fatalf("the changed page answered %q before it was read again", got)
	}
	s.waitRequest(t, "/blog/post")
	r = waitRecheck(t, o, rechecked, domain, "/blog/post")
	if r.Header.Get("ETag") == etag {
		t.Fatal("a new content_version kept the image")
	}
	wantOGImage(t, r, 1200, 630, ogRed)
	etag2 := r.Header.Get("ETag")
	if got := creditsUsed(t, o) - creditsBefore; got != 2 {
		t.Fatalf("after a new content_version %d credits used, want 2 (one per new image)", got)
	}

	// The source starts failing: the last image stays served.
	s.failing.Store(true)
	o.Clock.Advance(2 * time.Hour)
	s.drain()
	o.ogGet(t, domain, "/blog/post", "")
	s.waitRequest(t, "/blog/post")
	r = waitRecheck(t, o, rechecked, domain, "/blog/post")
	if r.Header.Get("ETag") != etag2 {
		t.Fatalf("a failing source changed the image: %q, want %q", r.Header.Get("ETag"), etag2)
	}
	wantOGImage(t, r, 1200, 630, ogRed)
	// A page that never had an image: 502 naming the source.
	apitest.WantMessage(t, apitest.WantError(t, o.ogGet(t, domain, "/never", ""), 502), "500")

	// Unknown domain id: 404.
	apitest.WantError(t, o.ogGet(t, "aaaaaaaaaaaaaaaaaaaaaaaaaa", "/blog/post", ""), 404)
}

// waitRecheck waits until the origin says the background recheck of path
// ended, then answers the page as it is now.
func waitRecheck(t *testing.T, o *testOrigin, rechecked <-chan string, domain, path string) *apitest.Response {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case p := <-rechecked:
			if p != path {
				continue
			}
			r := o.ogGet(t, domain, path, "")
			if cc := r.Header.Get("Cache-Control"); r.Status != 200 || strings.Contains(cc, "max-age=10,") {
				t.Fatalf("%s after its recheck: %d %q, want a fresh answer", path, r.Status, cc)
			}
			return r
		case <-deadline:
			t.Fatalf("the recheck of %s never ended", path)
		}
	}
}

// TestOGSizesAndBudget: set_viewport renders each platform at its size;
// the render budget refuses new pages past it and keeps serving the
// others; a disabled configuration answers 404.
func TestOGSizesAndBudget(t *testing.T) {
	o := startOrigin(t, func(c *origin.Config) { c.OG.Budget = 3 })
	s := newOGSite(t)
	cfgID, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL, "optimization_mode": "set_viewport"})
	for _, tc := range []struct {
		platform string
		w, h     int
	}{
		{"twitter", 1200, 600},
		{"pinterest", 1000, 1500},
	} {
		t.Run(tc.platform, func(t *testing.T) {
			r := o.ogGet(t, domain, "/a", tc.platform)
			wantOGImage(t, r, tc.w, tc.h, ogBlue)
			if r.Header.Get(contract.HeaderOGMode) != contract.OGAsIs {
				t.Fatalf("mode %q", r.Header.Get(contract.HeaderOGMode))
			}
		})
	}
	// Three renders spent: a new page (or platform) is refused with 503.
	r := o.ogGet(t, domain, "/a", "linkedin")
	wantOGImage(t, r, 1200, 627, ogBlue)
	refused := apitest.WantError(t, o.ogGet(t, domain, "/b", "twitter"), 503)
	apitest.WantMessage(t, refused, "renders")
	if o.ogGet(t, domain, "/b", "twitter").Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	// Made images keep being served.
	wantOGImage(t, o.ogGet(t, domain, "/a", "twitter"), 1200, 600, ogBlue)
	// The budget refills with time.
	o.Clock.Advance(time.Minute)
	wantOGImage(t, o.ogGet(t, domain, "/b", "twitter"), 1200, 600, ogBlue)

	// Disabled: 404.
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + cfgID, Creds: &o.Owner,
		JSON: map[string]any{"config_type": "html_css", "base_url": s.URL, "disabled": true}}), 200)
	apitest.WantError(t, o.ogGet(t, domain, "/a", "twitter"), 404)
}

// TestOGTemplated: a templated configuration fills the template from the
// page: template_values_mapping (a meta key, a fallback), then html:tv:
// values, which beat the mapping; without extract_values the page counts
// for nothing.
func TestOGTemplated(t *testing.T) {
	o := startOrigin(t)
	s := newOGSite(t)
	tplID, _ := o.saveTemplate(t, o.Owner, map[string]any{
		"html": `<body style="margin:0;background:{{color}}"><h1 style="font-size:12px;margin:0">{{title}}</h1></body>`})
	s.set("/mapped", ogSitePage{extra: `<meta name="theme-color" content="rgb(0,128,0)">`})
	s.set("/tv", ogSitePage{extra: `<meta name="theme-color" content="rgb(0,128,0)"><meta name="html:tv:color" content="&quot;rgb(255,0,0)&quot;">`})
	mapping := []map[string]any{{"template_key": "color", "meta_key": "theme-color"}, {"template_key": "title", "fallback": "titles"}}
	_, domain := o.ogConfig(t, map[string]any{"config_type": "templated", "base_url": s.URL, "template_id": tplID,
		"template_values_mapping": mapping})
	wantOGImage(t, o.ogGet(t, domain, "/mapped", ""), 1200, 630, color.RGBA{0, 128, 0, 255})
	wantOGImage(t, o.ogGet(t, domain, "/tv", ""), 1200, 630, ogRed)

	// The same page under a configuration that does not read values: the
	// template's own (empty) colour, a white page.
	s2 := newOGSite(t)
	s2.set("/tv", ogSitePage{extra: `<meta name="html:tv:color" content="&quot;rgb(255,0,0)&quot;">`})
	_, plain := o.ogConfig(t, map[string]any{"config_type": "templated", "base_url": s2.URL, "template_id": tplID, "extract_values": false})
	wantOGImage(t, o.ogGet(t, plain, "/tv", ""), 1200, 630, color.RGBA{255, 255, 255, 255})

	// post_process at device scale 2: twice the pixels, and the scale for
	// the edge's fit.
	s3 := newOGSite(t)
	_, dense := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s3.URL, "default_options": map[string]any{"device_scale": 2}})
	r := o.ogGet(t, dense, "/", "twitter")
	wantOGImage(t, r, 2400, 1260, ogBlue)
	if r.Header.Get(contract.HeaderOGMode) != contract.OGFit || r.Header.Get(contract.HeaderOGScale) != "2" {
		t.Fatalf("mode %q scale %q", r.Header.Get(contract.HeaderOGMode), r.Header.Get(contract.HeaderOGScale))
	}

	// A suspended organization's pages answer 404, made images included.
	c, err := admin.Dial(o.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetSuspended(t.Context(), o.OrgID, true); err != nil {
		t.Fatal(err)
	}
	apitest.WantError(t, o.ogGet(t, domain, "/mapped", ""), 404)
}

// TestOGHeaders: a configuration's custom headers reach the page both when
// it is read and when it is rendered.
func TestOGHeaders(t *testing.T) {
	o := startOrigin(t)
	var withHeader, without atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bg := "rgb(255,0,0)"
		if r.Header.Get("X-Site-Key") == "s3cret" {
			withHeader.Add(1)
			bg = "rgb(0,0,255)"
		} else {
			without.Add(1)
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><head><title>t</title></head><body style="margin:0;background:%s"></body></html>`, bg)
	}))
	defer site.Close()
	_, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": site.URL, "headers": map[string]string{"X-Site-Key": "s3cret"}})
	wantOGImage(t, o.ogGet(t, domain, "/", ""), 1200, 630, ogBlue)
	if withHeader.Load() < 2 {
		t.Fatalf("%d requests carried the header, want the read and the render", withHeader.Load())
	}
}

// TestOGBudgetUnderABurst: distinct new paths requested at once start no
// more renders than the budget; the rest answer 503 with Retry-After.
func TestOGBudgetUnderABurst(t *testing.T) {
	o := startOrigin(t, func(c *origin.Config) { c.OG.Budget = 3 })
	s := newOGSite(t)
	_, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL})
	before := o.rendersOK(t)
	var wg sync.WaitGroup
	statuses := make([]int, 12)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := apitest.Send(o.URL, apitest.Request{Method: "GET", Path: fmt.Sprintf("/v1/og/%s/page-%d", domain, i)})
			if err != nil {
				t.Error(err)
				return
			}
			if r.Status == 503 && r.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			statuses[i] = r.Status
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, st := range statuses {
		switch st {
		case 200:
			ok++
		case 503:
			refused++
		default:
			t.Fatalf("statuses %v", statuses)
		}
	}
	if ok != 3 || refused != 9 {
		t.Fatalf("%d answered, %d refused; want 3 and 9 (%v)", ok, refused, statuses)
	}
	if got := o.rendersOK(t) - before; got != 3 {
		t.Fatalf("%d renders, want the budget's 3", got)
	}
}

// TestOGSourceLifetime: the page's own max-age lengthens the refresh
// interval (never shortens it).
func TestOGSourceLifetime(t *testing.T) {
	o := startOrigin(t)
	s := newOGSite(t)
	s.set("/long", ogSitePage{color: "rgb(0,0,255)", maxAge: 7200})
	s.set("/short", ogSitePage{color: "rgb(0,0,255)", maxAge: 60})
	_, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL, "refresh_interval_s": 3600})
	for path, want := range map[string]string{"/long": "max-age=7200,", "/short": "max-age=3600,"} {
		r := o.ogGet(t, domain, path, "")
		apitest.WantStatus(t, r, 200)
		if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, want) {
			t.Fatalf("%s: Cache-Control %q, want %s", path, cc, want)
		}
	}
}

// TestOGNoOptimization: one image at the configured viewport for every
// platform, which the edge serves as it is.
func TestOGNoOptimization(t *testing.T) {
	o := startOrigin(t)
	s := newOGSite(t)
	_, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL, "optimization_mode": "no_optimization",
		"default_options": map[string]any{"viewport_width": 800, "viewport_height": 400}})
	var etag string
	for _, platform := range []string{"twitter", "pinterest", ""} {
		r := o.ogGet(t, domain, "/x", platform)
		wantOGImage(t, r, 800, 400, ogBlue)
		if r.Header.Get(contract.HeaderOGMode) != contract.OGAsIs {
			t.Fatalf("mode %q, want %q", r.Header.Get(contract.HeaderOGMode), contract.OGAsIs)
		}
		if etag != "" && r.Header.Get("ETag") != etag {
			t.Fatalf("%s got another image (%s) than the first (%s)", platform, r.Header.Get("ETag"), etag)
		}
		etag = r.Header.Get("ETag")
	}
}

// creditsUsed is the default organization's credits used, all billing
// periods together, from GET /v1/usage.
func creditsUsed(t *testing.T, o *testOrigin) int {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &o.Owner})
	apitest.WantStatus(t, r, 200)
	var rep struct {
		PerBillingPeriod []struct {
			TotalImages int `json:"total_images"`
		} `json:"per_billing_period"`
	}
	r.Decode(t, &rep)
	n := 0
	for _, p := range rep.PerBillingPeriod {
		n += p.TotalImages
	}
	return n
}
