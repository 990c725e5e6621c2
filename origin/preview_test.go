package origin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// preview asks for a preview as creds.
func (o *testOrigin) preview(t testing.TB, creds apitest.Creds, body map[string]any) *apitest.Response {
	t.Helper()
	return o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/preview", Creds: &creds, JSON: body})
}

// serverTiming is the header of a preview's answer.
var serverTiming = regexp.MustCompile(`^render;dur=[0-9]+(\.[0-9]+)?$`)

// wantPreview checks a preview's answer and decodes its image.
func wantPreview(t *testing.T, r *apitest.Response, contentType string) *apitest.Response {
	t.Helper()
	apitest.WantStatus(t, r, http.StatusOK)
	if ct := r.Header.Get("Content-Type"); ct != contentType {
		t.Fatalf("Content-Type %q, want %q", ct, contentType)
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	if st := r.Header.Get("Server-Timing"); !serverTiming.MatchString(st) {
		t.Errorf("Server-Timing %q", st)
	}
	for _, h := range []string{"x-renders-allowed", "x-renders-consumed", "x-renders-used"} {
		if v := r.Header.Get(h); v != "" {
			t.Errorf("a preview answered %s: %s", h, v)
		}
	}
	return r
}

// TestPreview: a preview is the real render of what POST /v1/image takes,
// every option honoured, answered as the image's bytes.
func TestPreview(t *testing.T) {
	o := startOrigin(t)
	page := func(color string) string {
		return `<body style="margin:0;background:` + color + `"><div id="box" style="margin:10px;width:30px;height:20px;background:white"></div></body>`
	}
	tests := []struct {
		name        string
		body        map[string]any
		contentType string
		w, h        int
		at          [2]int
		want        [4]uint8
	}{
		{"png", map[string]any{"html": page("rgb(255,0,0)"), "viewport_width": 200, "viewport_height": 100, "device_scale": 1}, "image/png", 200, 100, [2]int{150, 50}, [4]uint8{255, 0, 0, 255}},
		{"other html", map[string]any{"html": page("rgb(0,0,255)"), "viewport_width": 200, "viewport_height": 100, "device_scale": 1}, "image/png", 200, 100, [2]int{150, 50}, [4]uint8{0, 0, 255, 255}},
		{"css and device scale", map[string]any{"html": page("red"), "css": "body { background: rgb(0,128,0) !important }", "viewport_width": 200, "viewport_height": 100, "device_scale": 2},
			"image/png", 400, 200, [2]int{300, 100}, [4]uint8{0, 128, 0, 255}},
		{"jpg", map[string]any{"html": page("rgb(0,0,255)"), "viewport_width": 120, "viewport_height": 80, "device_scale": 1, "format": "jpg"}, "image/jpeg", 120, 80, [2]int{100, 60}, [4]uint8{0, 0, 255, 255}},
		{"webp", map[string]any{"html": page("rgb(255,0,0)"), "viewport_width": 120, "viewport_height": 80, "device_scale": 1, "format": "webp"}, "image/webp", 120, 80, [2]int{100, 60}, [4]uint8{255, 0, 0, 255}},
		{"selector", map[string]any{"html": page("rgb(255,0,0)"), "viewport_width": 200, "viewport_height": 100, "device_scale": 1, "selector": "#box"}, "image/png", 30, 20, [2]int{15, 10}, [4]uint8{255, 255, 255, 255}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := wantPreview(t, o.preview(t, o.Owner, tc.body), tc.contentType)
			img := apitest.DecodeImage(t, r)
			apitest.WantSize(t, img, tc.w, tc.h)
			tol := 3
			if tc.contentType != "image/png" {
				tol = 24 // lossy
			}
			apitest.WantPixel(t, img, tc.at[0], tc.at[1], colorOf(tc.want), tol)
		})
	}
	t.Run("pdf", func(t *testing.T) {
		r := wantPreview(t, o.preview(t, o.Owner, map[string]any{"html": page("red"), "format": "pdf"}), "application/pdf")
		if !strings.HasPrefix(string(r.Body), "%PDF-") {
			t.Fatalf("not a PDF: %.40q", r.Body)
		}
	})
	t.Run("a render failure", func(t *testing.T) {
		r := o.preview(t, o.Owner, map[string]any{"html": page("red"), "selector": "#missing"})
		apitest.WantMessage(t, apitest.WantError(t, r, http.StatusBadRequest), "selector")
	})
}

// TestPreviewTemplates: a saved template, or a draft never saved, renders
// with its values and under the request's options.
func TestPreviewTemplates(t *testing.T) {
	o := startOrigin(t)
	values := map[string]any{"w": 120, "color": "rgb(0,0,255)", "title": "", "ink": "white"}
	id, _ := o.saveTemplate(t, o.Owner, map[string]any{"html": card, "device_scale": 1})
	draft := map[string]any{"html": card, "css": "body { margin: 0; background: {{ground}} }", "device_scale": 1, "viewport_width": 300, "viewport_height": 100}
	tests := []struct {
		name string
		body map[string]any
		w, h int
		// at is blue: the card's background, a template value.
		at [2]int
		// bg, at (250, 80), is the page's background.
		bg [4]uint8
	}{
		{"saved", map[string]any{"template_id": id, "template_values": values, "viewport_width": 300, "viewport_height": 100}, 300, 100, [2]int{115, 45}, [4]uint8{255, 255, 255, 255}},
		{"saved version, scaled", map[string]any{"template_id": id, "template_version": 1, "template_values": values, "viewport_width": 300, "viewport_height": 100, "device_scale": 2},
			600, 200, [2]int{230, 90}, [4]uint8{255, 255, 255, 255}},
		{"draft", map[string]any{"template": draft, "template_values": withValue(values, "ground", "rgb(255,0,0)")}, 300, 100, [2]int{115, 45}, [4]uint8{255, 0, 0, 255}},
		{"draft with other values", map[string]any{"template": draft, "template_values": withValue(withValue(values, "ground", "rgb(0,128,0)"), "w", 200)},
			300, 100, [2]int{195, 45}, [4]uint8{0, 128, 0, 255}},
		{"draft under the request's options", map[string]any{"template": draft, "template_values": withValue(values, "ground", "rgb(255,0,0)"), "device_scale": 2},
			600, 200, [2]int{230, 90}, [4]uint8{255, 0, 0, 255}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := wantPreview(t, o.preview(t, o.Owner, tc.body), "image/png")
			img := apitest.DecodeImage(t, r)
			apitest.WantSize(t, img, tc.w, tc.h)
			apitest.WantPixel(t, img, tc.at[0], tc.at[1], colorOf([4]uint8{0, 0, 255, 255}), 3)
			scale := tc.w / 300
			apitest.WantPixel(t, img, 250*scale, 80*scale, colorOf(tc.bg), 3)
		})
	}
	t.Run("draft in a form", func(t *testing.T) {
		d, v := jsonString(t, draft), jsonString(t, withValue(values, "ground", "rgb(255,0,0)"))
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/preview", Creds: &o.Owner, ContentType: "application/x-www-form-urlencoded",
			Raw: url.Values{"template": {d}, "template_values": {v}, "device_scale": {"2"}}.Encode()})
		img := apitest.DecodeImage(t, wantPreview(t, r, "image/png"))
		apitest.WantSize(t, img, 600, 200)
		apitest.WantPixel(t, img, 230, 90, colorOf([4]uint8{0, 0, 255, 255}), 3)
		apitest.WantPixel(t, img, 500, 160, colorOf([4]uint8{255, 0, 0, 255}), 3)
	})
	// A draft is not saved: the organization still has one template.
	var list struct {
		Templates []any `json:"data"`
	}
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/template", Creds: &o.Owner})
	apitest.WantStatus(t, r, http.StatusOK)
	r.Decode(t, &list)
	if len(list.Templates) != 1 {
		t.Errorf("%d templates after draft previews, want the 1 saved", len(list.Templates))
	}
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func colorOf(c [4]uint8) color.NRGBA { return color.NRGBA{c[0], c[1], c[2], c[3]} }

func withValue(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for key, val := range m {
		if key != k {
			out[key] = val
		}
	}
	return out
}

// TestPreviewValidation: a preview is refused as the creation routes
// refuse the same request, with the same validation_errors; a draft's
// errors name template.<field>.
func TestPreviewValidation(t *testing.T) {
	o := startOrigin(t)
	_, free := o.newOrg(t.Context(), t, "free")
	id, _ := o.saveTemplate(t, o.Owner, map[string]any{"html": card})
	same := []struct {
		name  string
		creds apitest.Creds
		body  map[string]any
		path  string
	}{
		{"nothing to render", o.Owner, map[string]any{"css": "x"}, "html"},
		{"viewport pair", o.Owner, map[string]any{"html": "x", "viewport_width": 100}, "viewport_height"},
		{"viewport type", o.Owner, map[string]any{"html": "x", "viewport_width": "wide", "viewport_height": 100}, "viewport_width"},
		{"device scale range", o.Owner, map[string]any{"html": "x", "device_scale": 3.5}, "device_scale"},
		{"format", o.Owner, map[string]any{"html": "x", "format": "gif"}, "format"},
		{"relative url", o.Owner, map[string]any{"url": "/page"}, "url"},
		{"max wait above the free plan", free, map[string]any{"html": "x", "max_wait_ms": 6000}, "max_wait_ms"},
		{"too big without jumbo", o.Owner, map[string]any{"html": "x", "viewport_width": 6000, "viewport_height": 100, "device_scale": 3}, "viewport_width"},
		{"dedupe window", free, map[string]any{"html": "x", "dedupe_duration_s": 5}, "dedupe_duration_s"},
		{"template values", o.Owner, map[string]any{"template_id": id, "template_values": []int{1}}, "template_values"},
		{"a template variable beside its values", o.Owner, map[string]any{"template_id": id, "template_values": map[string]any{}, "color": "red"}, "color"},
	}
	for _, tc := range same {
		t.Run(tc.name, func(t *testing.T) {
			created := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &tc.creds, JSON: tc.body})
			apitest.WantField(t, created, tc.path)
			previewed := o.preview(t, tc.creds, tc.body)
			apitest.WantField(t, previewed, tc.path)
			if a, b := created.Object(t)["validation_errors"], previewed.Object(t)["validation_errors"]; fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("validation_errors differ:\n POST /v1/image:         %v\n POST /v1/image/preview: %v", a, b)
			}
		})
	}
	t.Run("unknown template", func(t *testing.T) {
		apitest.WantError(t, o.preview(t, o.Owner, map[string]any{"template_id": "t-00000000-0000-0000-0000-000000000000"}), http.StatusNotFound)
	})

	// A draft is checked as POST /v1/template checks a save, under template.
	drafts := []struct {
		name, path string
		body       map[string]any
	}{
		{"no html", "template.html", map[string]any{"template": map[string]any{"css": "x"}}},
		{"syntax", "template.html", map[string]any{"template": map[string]any{"html": "{{#if x}}open"}}},
		{"unknown helper", "template.css", map[string]any{"template": map[string]any{"html": "x", "css": "{{shout x}}"}}},
		{"render default", "template.viewport_height", map[string]any{"template": map[string]any{"html": "x", "viewport_width": 100}}},
		{"name", "template.name", map[string]any{"template": map[string]any{"html": "x", "name": strings.Repeat("n", 65)}}},
		{"not an object", "template", map[string]any{"template": "<p>x</p>"}},
		{"with html", "template", map[string]any{"template": map[string]any{"html": "x"}, "html": "y"}},
		{"with template_id", "template", map[string]any{"template": map[string]any{"html": "x"}, "template_id": id}},
		{"values", "template_values", map[string]any{"template": map[string]any{"html": "x"}, "template_values": "x"}},
		{"a variable beside the values", "title", map[string]any{"template": map[string]any{"html": "{{title}}"}, "template_values": map[string]any{}, "title": "x"}},
		{"an option of the request", "viewport_height", map[string]any{"template": map[string]any{"html": "x"}, "viewport_width": 100}},
	}
	for _, tc := range drafts {
		t.Run("draft "+tc.name, func(t *testing.T) {
			apitest.WantField(t, o.preview(t, o.Owner, tc.body), tc.path)
		})
	}
	// The draft's own check is POST /v1/template's, under another name.
	saved := o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &o.Owner, JSON: map[string]any{"html": "{{#if x}}open"}})
	apitest.WantField(t, saved, "html")
	previewed := o.preview(t, o.Owner, map[string]any{"template": map[string]any{"html": "{{#if x}}open"}})
	if a, b := saved.Object(t)["validation_errors"].([]any)[0].(map[string]any)["message"], previewed.Object(t)["validation_errors"].([]any)[0].(map[string]any)["message"]; a != b {
		t.Errorf("the draft's syntax error %q, the save's %q", b, a)
	}

	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/preview", JSON: map[string]any{"html": "x"}}), http.StatusUnauthorized)
	noImages := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"usage:read"}})
	apitest.WantMessage(t, apitest.WantError(t, o.preview(t, *noImages.creds(), map[string]any{"html": "x"}), http.StatusForbidden), "images:create")
}

// TestPreviewKeepsNothing: previews leave no image, no file, no usage and
// no template render count; a real creation, for contrast, leaves each.
func TestPreviewKeepsNothing(t *testing.T) {
	o := startOrigin(t)
	id, _ := o.saveTemplate(t, o.Owner, map[string]any{"html": card})
	values := map[string]any{"w": 50, "color": "red", "title": "x"}
	for _, body := range []map[string]any{
		{"html": "<p>one</p>"},
		{"html": "<p>two</p>", "format": "webp"},
		{"html": "<p>three</p>", "format": "pdf"},
		{"template_id": id, "template_values": values},
		{"template": map[string]any{"html": card}, "template_values": values},
	} {
		apitest.WantStatus(t, o.preview(t, o.Owner, body), http.StatusOK)
	}
	want := func(images, used, files int, renders float64) {
		t.Helper()
		var list struct {
			Images []any `json:"images"`
		}
		r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/images", Creds: &o.Owner})
		apitest.WantStatus(t, r, http.StatusOK)
		r.Decode(t, &list)
		var usage struct {
			Periods []struct {
				Total int `json:"total_images"`
			} `json:"per_billing_period"`
		}
		r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &o.Owner})
		apitest.WantStatus(t, r, http.StatusOK)
		r.Decode(t, &usage)
		var versions struct {
			Versions []struct {
				RenderCount float64 `json:"render_count"`
			} `json:"data"`
		}
		r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/template/" + id, Creds: &o.Owner})
		apitest.WantStatus(t, r, http.StatusOK)
		r.Decode(t, &versions)
		n := 0
		err := filepath.WalkDir(filepath.Join(o.DataDir, "images"), func(_ string, d fs.DirEntry, err error) error {
			// A .tmp- file is a write under way (the compactor's, after a
			// second of idle engine), not a kept file.
			if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".tmp-") {
				n++
			}
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		last := usage.Periods[len(usage.Periods)-1].Total
		if len(list.Images) != images || last != used || n != files || len(versions.Versions) != 1 || versions.Versions[0].RenderCount != renders {
			t.Fatalf("%d images, %d credits used, %d files in the blob store, versions %+v; want %d, %d, %d and %v renders",
				len(list.Images), last, n, versions.Versions, images, used, files, renders)
		}
	}
	want(0, 0, 0, 0)
	_, u := o.create(t, o.Owner, map[string]any{"template_id": id, "template_values": values})
	apitest.WantStatus(t, o.get(t, u), http.StatusOK)
	// The first GET may be answered while the master is being stored; a
	// rendition is made from the stored master and stored before it is
	// answered, so after it both are files.
	apitest.WantStatus(t, o.get(t, u+".jpg"), http.StatusOK)
	want(1, 1, 2, 1)
}

// TestPreviewLimit: an organization's previews are limited per sliding
// minute, before the body is read; other organizations keep theirs.
func TestPreviewLimit(t *testing.T) {
	o := startOrigin(t)
	_, other := o.newOrg(t.Context(), t, "free")
	// Refused requests take from the allowance too: the limit comes first.
	for i := range 30 {
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/preview", Creds: &o.Owner, Raw: `{"html":`, ContentType: "application/json"})
		if r.Status != http.StatusBadRequest {
			t.Fatalf("preview %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	r := o.preview(t, o.Owner, map[string]any{"html": "<p>31</p>"})
	m := apitest.WantError(t, r, http.StatusTooManyRequests)
	apitest.WantMessage(t, m, "30 previews per 60 seconds")
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	apitest.WantStatus(t, o.preview(t, other, map[string]any{"html": "<p>another organization</p>"}), http.StatusOK)
	o.Clock.Advance(61 * time.Second)
	wantPreview(t, o.preview(t, o.Owner, map[string]any{"html": "<p>a minute later</p>"}), "image/png")
}

// TestPreviewLimitFlag: --previews-per-minute sets the allowance.
func TestPreviewLimitFlag(t *testing.T) {
	o := startOrigin(t, func(c *origin.Config) { c.PreviewsPerMinute = 2 })
	for range 2 {
		apitest.WantStatus(t, o.preview(t, o.Owner, map[string]any{"html": "<p>x</p>"}), http.StatusOK)
	}
	apitest.WantMessage(t, apitest.WantError(t, o.preview(t, o.Owner, map[string]any{"html": "<p>x</p>"}), http.StatusTooManyRequests), "2 previews")
}

// TestPreviewCanceled: a client that goes away stops its render, which
// frees the renderer for the next preview at once.
func TestPreviewCanceled(t *testing.T) {
	// One tab, and a render timeout far beyond the wait below: only the
	// cancellation can free the tab in time.
	o := startOrigin(t, func(c *origin.Config) { c.Render.Tabs, c.Render.Timeout = 1, 10*time.Minute })
	arrived := make(chan struct{}, 1)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-r.Context().Done() // never answers
	}))
	t.Cleanup(hang.Close)
	canceled := apitest.Metric(t, o.URL, `pictor_render_total{outcome="canceled"}`)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", o.URL+"/v1/image/preview", strings.NewReader(`{"url":"`+hang.URL+`/slow"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(o.Owner.APIID, o.Owner.APIKey)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("answered %d", resp.StatusCode)
		}
		done <- err
	}()
	select {
	case <-arrived: // Chromium is loading the page
	case err := <-done:
		t.Fatalf("the preview ended before its page was asked for: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the preview's page was never asked for")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v", err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(2 * time.Minute); apitest.Metric(t, o.URL, `pictor_render_total{outcome="canceled"}`) <= canceled; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatal("the render of a preview whose client went away did not stop")
		}
	}
	// The one tab is free again: the next preview renders.
	img := apitest.DecodeImage(t, wantPreview(t, o.preview(t, o.Owner, map[string]any{"html": `<body style="margin:0;background:rgb(0,0,255)"></body>`,
		"viewport_width": 50, "viewport_height": 50}), "image/png"))
	apitest.WantPixel(t, img, 25, 25, colorOf([4]uint8{0, 0, 255, 255}), 3)
}

// TestHostilePreview: a body past the creation bound is 413, broken JSON
// 400, each in the standard error body, and neither renders.
func TestHostilePreview(t *testing.T) {
	o := startOrigin(t)
	renders := apitest.Metric(t, o.URL, `pictor_render_total{outcome="ok"}`)
	huge := strings.Repeat("a", 7<<20)
	apitest.WantError(t, o.preview(t, o.Owner, map[string]any{"html": huge}), http.StatusRequestEntityTooLarge)
	apitest.WantError(t, o.preview(t, o.Owner, map[string]any{"template": map[string]any{"html": huge}}), http.StatusRequestEntityTooLarge)
	for _, raw := range []string{`{"html":`, `[1,2]`, `{"html":"x"}{"html":"y"}`, "\x00\xff"} {
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/preview", Creds: &o.Owner, Raw: raw, ContentType: "application/json"})
		apitest.WantError(t, r, http.StatusBadRequest)
	}
	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/preview", Creds: &o.Owner, Raw: "<p>x</p>", ContentType: "text/html"}), http.StatusUnsupportedMediaType)
	if got := apitest.Metric(t, o.URL, `pictor_render_total{outcome="ok"}`); got != renders {
		t.Errorf("refused previews rendered: %v renders, want %v", got, renders)
	}
}

// TestTwoOriginsSharePreviewLimit: origins on one PostgreSQL database
// draw an organization's previews from one window.
func TestTwoOriginsSharePreviewLimit(t *testing.T) {
	db := pgtest.Shared(t).Database(t)
	const masterKey = "1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a"
	shared := func(c *origin.Config) { c.Store, c.MasterKey, c.PreviewsPerMinute = db, masterKey, 4 }
	a := startOrigin(t, shared)
	b := startOrigin(t, shared, func(c *origin.Config) { c.CreateDefaultOrg, c.PublicURL = false, a.URL })
	for i := range 4 {
		o := []*testOrigin{a, b}[i%2]
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/preview", Creds: &a.Owner, Raw: `{"html":`, ContentType: "application/json"})
		apitest.WantError(t, r, http.StatusBadRequest)
	}
	for _, o := range []*testOrigin{a, b} {
		r := o.preview(t, a.Owner, map[string]any{"html": "<p>x</p>"})
		apitest.WantMessage(t, apitest.WantError(t, r, http.StatusTooManyRequests), "4 previews")
		if r.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
}
