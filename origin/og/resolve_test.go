package og

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/rendition"
)

// TestItem: a variant's image is made from the page's stored parameters,
// its request not parsed again (a record whose request no longer parses
// still renders); parameters over the plan's cap on max_wait_ms now (the
// plan changed since the page was read), or a request that breaks a rule,
// fail with the error naming the field, as the request parsed at render
// time did; set_viewport gives the platform's viewport to this image only.
func TestItem(t *testing.T) {
	o := &org.Org{ID: "org-1", Plan: "free"} // max_wait_ms up to 5 s
	post := &ogconfig.Config{OptimizationMode: ogconfig.PostProcess}
	perPlatform := &ogconfig.Config{OptimizationMode: ogconfig.SetViewport}
	within := json.RawMessage(`{"url":"https://a.example/","max_wait_ms":4000,"viewport_width":1200,"viewport_height":630}`)
	over := json.RawMessage(`{"url":"https://a.example/","max_wait_ms":9000}`)
	broken := json.RawMessage(`{"url":"https://a.example/","viewport_width":99999}`)
	for _, tc := range []struct {
		name    string
		cfg     *ogconfig.Config
		pg      *page
		variant string
		wantW   int    // the item's viewport width
		wantErr string // the error's message, when it fails
	}{
		{"stored parameters", post, &page{Params: requestParams(within), Request: json.RawMessage(`"no longer parses"`), Extra: "x"}, "", 1200, ""},
		{"per platform", perPlatform, &page{Params: requestParams(within), Request: within, Extra: "x"}, "twitter", 1200, ""},
		{"over the plan's cap now", post, &page{Params: requestParams(over), Request: over, Extra: "x"}, "",
			0, "The page's OG settings make an invalid image: Invalid request: max_wait_ms must be at most 5000: your plan limits max_wait_ms to 5000 ms"},
		{"breaks a rule", post, &page{Params: requestParams(broken), Request: broken, Extra: "x"}, "", 0, "The page's OG settings make an invalid image: Invalid request: viewport_width"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := tc.pg.Params
			var before []byte
			if stored != nil {
				before = stored.Canonical()
			}
			it, err := (&Service{}).item(tc.cfg, o, tc.pg, tc.variant)
			if tc.wantErr != "" {
				if e := apierr.From(err); err == nil || e.Status != 400 || !strings.HasPrefix(e.Message, tc.wantErr) {
					t.Fatalf("item: %v, want a 400 %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if it.Params.URL != "https://a.example/" || it.Params.Viewport == nil || it.Params.Viewport.Width != tc.wantW {
				t.Fatalf("item params %+v", it.Params)
			}
			if tc.cfg == perPlatform && it.Params.Viewport.Height != 600 {
				t.Fatalf("twitter's viewport: %+v", it.Params.Viewport)
			}
			if want := rendition.ContentID(o.ID, &it.Params, "x\x00"+tc.variant); it.ID != want {
				t.Fatalf("id %s, want %s", it.ID, want)
			}
			if string(stored.Canonical()) != string(before) {
				t.Fatalf("the page's parameters changed: %s, were %s", stored.Canonical(), before)
			}
		})
	}
}
