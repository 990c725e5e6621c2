package main

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestOGThroughTheEdge runs `pictor serve` against a local site: each real
// crawler gets the page's card at its platform's size (one render, fitted
// by the edge), answers come from the edge's cache afterwards, and
// updating the configuration purges them.
func TestOGThroughTheEdge(t *testing.T) {
	var reads atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.UserAgent(), "PictorOG") { // the page read, not the render's own loads
			reads.Add(1)
		}
		w.Header().Set("Content-Type", "text/html")
		// A red page with a 40 px blue band down the middle: a fit that
		// stretched or letterboxed would move or lose it.
		fmt.Fprint(w, `<!doctype html><html><head><title>Card</title><meta property="og:title" content="Card"></head>
<body style="margin:0;background:rgb(255,0,0)"><div style="position:absolute;left:580px;top:0;width:40px;height:100%;background:rgb(0,0,255)"></div></body></html>`)
	}))
	defer site.Close()
	s := startServe(t, t.TempDir(), nil)
	r := apitest.Do(t, s.URL, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: &s.Owner,
		JSON: map[string]any{"config_type": "html_css", "base_url": site.URL}})
	apitest.WantStatus(t, r, 200)
	var cfg struct {
		ID       string
		DomainID string `json:"domain_id"`
	}
	r.Decode(t, &cfg)

	renders := apitest.Metric(t, s.OriginURL, `pictor_render_total{outcome="ok"}`)
	for _, tc := range []struct {
		name, ua string
		w, h     int
	}{
		{"facebook", "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", 1200, 630},
		{"twitter", "Twitterbot/1.0", 1200, 600},
		{"linkedin", "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)", 1200, 627},
		{"pinterest", "Pinterest/0.2 (+https://www.pinterest.com/bot.html)", 1000, 1500},
		{"mastodon", "http.rb/5.1.1 (Mastodon/4.2.0; +https://mastodon.social/)", 1200, 675},
		{"browser", "Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0", 1200, 630},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // a miss, then a hit
				r := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: "/v1/og/" + cfg.DomainID + "/post?utm_source=x",
					Header: map[string]string{"User-Agent": tc.ua}})
				apitest.WantStatus(t, r, 200)
				if r.Header.Get("Vary") != "User-Agent" {
					t.Fatalf("Vary: %q, want User-Agent", r.Header.Get("Vary"))
				}
				img, err := png.Decode(bytes.NewReader(r.Body))
				if err != nil {
					t.Fatal(err)
				}
				if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
					t.Fatalf("%d×%d, want %d×%d", b.Dx(), b.Dy(), tc.w, tc.h)
				}
				mid := color.RGBAModel.Convert(img.At(tc.w/2, tc.h/2)).(color.RGBA)
				side := color.RGBAModel.Convert(img.At(tc.w/10, tc.h/2)).(color.RGBA)
				if mid.B < 200 || mid.R > 60 || side.R < 200 || side.B > 60 {
					t.Fatalf("centre %v (want the blue band), side %v (want red)", mid, side)
				}
			}
		})
	}
	if got := apitest.Metric(t, s.OriginURL, `pictor_render_total{outcome="ok"}`) - renders; got != 1 {
		t.Fatalf("six platforms made %v renders, want one fitted by the edge", got)
	}
	if got := reads.Load(); got != 1 {
		t.Fatalf("the page was read %d times, want once", got)
	}
	if apitest.Metric(t, s.URL, `pictor_edge_og_hits_total{state="fresh"}`) < 6 {
		t.Fatal("the second requests were not answered from the edge's cache")
	}

	// An update purges the edge: the next request goes to the origin,
	// which reads the page again under the new revision.
	apitest.WantStatus(t, apitest.Do(t, s.URL, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + cfg.ID, Creds: &s.Owner,
		JSON: map[string]any{"config_type": "html_css", "base_url": site.URL, "name": "renamed"}}), 200)
	apitest.WantStatus(t, apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: "/v1/og/" + cfg.DomainID + "/post"}), 200)
	if got := reads.Load(); got != 2 {
		t.Fatalf("after the update the page was read %d times in all, want 2", got)
	}
	// Unknown domain: 404 in the standard body.
	apitest.WantError(t, apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: "/v1/og/aaaaaaaaaaaaaaaaaaaaaaaaaa/post"}), 404)
}
