package origin_test

import (
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestOGVaryAtTheOrigin: the origin's own OG answers (to a client that
// reaches it without the edge) say they depend on the User-Agent: the
// image, HEAD, 304 and errors; Cache-Control is what it was.
func TestOGVaryAtTheOrigin(t *testing.T) {
	o := startOrigin(t)
	s := newOGSite(t)
	_, domain := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": s.URL, "refresh_interval_s": 3600})
	path := "/v1/og/" + domain + "/post"
	const fresh = "public, max-age=3600, stale-while-revalidate=3600"
	first := o.do(t, apitest.Request{Method: "GET", Path: path, Header: map[string]string{"User-Agent": "Twitterbot/1.0"}})
	wantOGImage(t, first, 1200, 630, ogBlue)
	for _, tc := range []struct {
		name, method, path, ifNoneMatch string
		status                          int
		cc                              string
	}{
		{"get", "GET", path, "", 200, fresh},
		{"head", "HEAD", path, "", 200, fresh},
		{"304", "GET", path, first.Header.Get("ETag"), 304, fresh},
		{"unknown domain id", "GET", "/v1/og/aaaaaaaaaaaaaaaaaaaaaaaaaa/post", "", 404, "no-store"},
		{"malformed path", "GET", "/v1/og/" + domain + "/a%00", "", 400, "no-store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{"User-Agent": "Twitterbot/1.0"}
			if tc.ifNoneMatch != "" {
				h["If-None-Match"] = tc.ifNoneMatch
			}
			r := o.do(t, apitest.Request{Method: tc.method, Path: tc.path, Header: h})
			apitest.WantStatus(t, r, tc.status)
			if v := r.Header.Values("Vary"); len(v) != 1 || v[0] != "User-Agent" {
				t.Fatalf("Vary: %q, want User-Agent", v)
			}
			if got := r.Header.Get("Cache-Control"); got != tc.cc {
				t.Fatalf("Cache-Control %q, want %q", got, tc.cc)
			}
		})
	}
}
