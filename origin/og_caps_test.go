package origin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/og"
)

// TestOGCapsKeepLastImages: past a configuration's cap on new images a
// new page answers the generic 429, and the images made are still served:
// a page that changed keeps its last image when its re-render is refused,
// and so do the pages of a configuration that changed (a new revision)
// until the cap is raised. The configuration's answer shows the count.
func TestOGCapsKeepLastImages(t *testing.T) {
	rechecked := make(chan string, 16)
	o := startOrigin(t, func(c *origin.Config) { c.OG.OnRecheck = func(_, path string) { rechecked <- path } })
	s := newOGSite(t)
	body := map[string]any{"config_type": "html_css", "base_url": s.URL, "refresh_interval_s": 3600, "max_new_images_per_period": 2}
	cfgID, domain := o.ogConfig(t, body)
	etags := map[string]string{}
	for _, p := range []string{"/a", "/b"} {
		r := o.ogGet(t, domain, p, "")
		wantOGImage(t, r, 1200, 630, ogBlue)
		etags[p] = r.Header.Get("ETag")
	}

	r := o.ogGet(t, domain, "/c", "")
	apitest.WantMessage(t, apitest.WantError(t, r, 429), og.LimitedMessage)
	if r.Header.Get("Retry-After") == "" || r.Header.Get("Cache-Control") != "no-store" || strings.Contains(string(r.Body), "credit") {
		t.Fatalf("refusal: Retry-After %q, Cache-Control %q, %s", r.Header.Get("Retry-After"), r.Header.Get("Cache-Control"), r.Body)
	}
	if got := o.ogGet(t, domain, "/a", "").Header.Get("ETag"); got != etags["/a"] {
		t.Fatalf("a made image answered %q past the cap, want %q", got, etags["/a"])
	}

	// /a changes; its recheck may not render: the last image stays.
	s.set("/a", ogSitePage{color: "rgb(255,0,0)", contentVersion: 2})
	o.Clock.Advance(2 * time.Hour)
	s.drain()
	o.ogGet(t, domain, "/a", "")
	s.waitRequest(t, "/a")
	r = waitRecheck(t, o, rechecked, domain, "/a")
	if r.Header.Get("ETag") != etags["/a"] {
		t.Fatalf("a refused re-render changed the image: %q, want %q", r.Header.Get("ETag"), etags["/a"])
	}
	wantOGImage(t, r, 1200, 630, ogBlue)

	// A new revision of the configuration: /b keeps its image, asked
	// again soon, while the cap refuses its new one.
	body["name"] = "renamed"
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + cfgID, Creds: &o.Owner, JSON: body}), 200)
	r = o.ogGet(t, domain, "/b", "")
	wantOGImage(t, r, 1200, 630, ogBlue)
	if r.Header.Get("ETag") != etags["/b"] || !strings.Contains(r.Header.Get("Cache-Control"), "max-age=10,") {
		t.Fatalf("/b under the new revision: ETag %q, Cache-Control %q; want its last image, asked again soon", r.Header.Get("ETag"), r.Header.Get("Cache-Control"))
	}
	// A higher cap lets the new revision make it.
	body["max_new_images_per_period"] = 4
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + cfgID, Creds: &o.Owner, JSON: body}), 200)
	r = o.ogGet(t, domain, "/b", "")
	wantOGImage(t, r, 1200, 630, ogBlue)
	if r.Header.Get("ETag") == etags["/b"] {
		t.Fatal("the new revision kept the old image once the cap allowed a new one")
	}

	cr := o.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs/" + cfgID, Creds: &o.Owner})
	apitest.WantStatus(t, cr, 200)
	var v struct {
		Limits struct {
			PerPeriod int `json:"new_images_per_period"`
			Used      int `json:"used_this_period"`
		} `json:"limits"`
	}
	cr.Decode(t, &v)
	if v.Limits.PerPeriod != 4 || v.Limits.Used != 3 {
		t.Fatalf("limits %+v, want 3 of 4 new images used", v.Limits)
	}
	if n := apitest.Metric(t, o.URL, `pictor_og_refused_total{reason="period_cap"}`); n != 1 {
		t.Fatalf("%v requests counted as refused by the period cap, want 1 (/c)", n)
	}
}
