package images

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestCreateRefusesBadInput: a creation with bad input is answered with
// the standard error body, naming the field when there is one, and
// creates and charges nothing.
func TestCreateRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	base := e.serveHTTP(e.handler())
	o := e.newOrg("free")
	variations := func(n int) map[string]any {
		vs := make([]any, n)
		for i := range vs {
			vs[i] = map[string]any{"html": fmt.Sprint(i)}
		}
		return map[string]any{"variations": vs}
	}
	tests := []struct {
		name        string
		path        string
		json        any
		raw         string
		contentType string
		status      int
		field       string // the validation error's path, when one is named
		message     string
	}{
		{name: "malformed JSON", path: "/v1/image", raw: `{"html": `, contentType: "application/json", status: 400},
		{name: "no source", path: "/v1/image", json: map[string]any{"css": "p{}"}, status: 400, field: "html"},
		{name: "private address", path: "/v1/image", json: map[string]any{"url": "http://127.0.0.1/admin"}, status: 400, field: "url",
			message: "not allowed"},
		{name: "viewport too large for its scale", path: "/v1/image",
			json:   map[string]any{"html": "x", "viewport_width": 6000, "viewport_height": 100, "device_scale": 3},
			status: 400, field: "viewport_width", message: "16384"},
		{name: "viewport area too large for its scale", path: "/v1/image",
			json:   map[string]any{"html": "x", "viewport_width": 5000, "viewport_height": 5000, "device_scale": 2},
			status: 400, field: "viewport_width", message: "megapixels"},
		{name: "dedupe window the plan does not offer", path: "/v1/image", json: map[string]any{"html": "x", "dedupe_duration_s": 60},
			status: 400, field: "dedupe_duration_s", message: "free plan"},
		{name: "template without templates", path: "/v1/image/0195f0a0-0000-7000-8000-000000000000", json: map[string]any{},
			status: 404, message: "Templates are not available"},
		{name: "template version not a number", path: "/v1/image/0195f0a0-0000-7000-8000-000000000000/latest", json: map[string]any{},
			status: 400, field: "template_version"},
		{name: "batch without variations", path: "/v1/image/batch", json: map[string]any{}, status: 400, field: "variations"},
		{name: "batch of 26", path: "/v1/image/batch", json: variations(MaxBatch + 1), status: 400, field: "variations", message: "got 26"},
		{name: "batch with an empty variation", path: "/v1/image/batch",
			json:   map[string]any{"variations": []any{map[string]any{"html": "a"}, map[string]any{}}},
			status: 400, field: "variations[1].html"},
		{name: "batch variation not an object", path: "/v1/image/batch", json: map[string]any{"variations": []any{"a"}},
			status: 400, field: "variations[0]"},
		{name: "batch defaults not an object", path: "/v1/image/batch",
			json: map[string]any{"default_options": []any{1}, "variations": []any{map[string]any{"html": "a"}}}, status: 400,
			field: "default_options"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := apitest.Do(t, base, apitest.Request{Method: "POST", Path: tt.path, JSON: tt.json, Raw: tt.raw,
				ContentType: tt.contentType, Header: as(o)})
			m := apitest.WantError(t, r, tt.status)
			if tt.field != "" {
				apitest.WantField(t, r, tt.field)
			}
			apitest.WantMessage(t, m, tt.message)
			if n := len(e.keys(t.Context(), "img/")); n != 0 || e.used(t.Context(), o) != 0 {
				t.Fatalf("a refused creation left %d images and %d credits used", n, e.used(t.Context(), o))
			}
		})
	}
}

// TestCreateAnswers: a creation answers the image's URL (with the format's
// extension when the format is not PNG or was given) and id, and the
// x-renders-* headers; an identical HTML creation on the plan's default
// dedupe window answers the same image at no cost, a URL creation does not
// dedupe by default; a batch answers its images in order.
func TestCreateAnswers(t *testing.T) {
	e := newEnv(t)
	base := e.serveHTTP(e.handler())
	o := e.newOrg("free")
	post := func(path string, body any) *apitest.Response {
		t.Helper()
		r := apitest.Do(t, base, apitest.Request{Method: "POST", Path: path, JSON: body, Header: as(o)})
		apitest.WantStatus(t, r, http.StatusOK)
		return r
	}
	type link struct{ URL, ID string }
	tests := []struct {
		name     string
		body     map[string]any
		suffix   string
		consumed string
		sameAs   string // the earlier case whose image this one reuses
	}{
		{name: "html", body: map[string]any{"html": "<p>a</p>"}, consumed: "1"},
		{name: "html again", body: map[string]any{"html": "<p>a</p>"}, consumed: "0", sameAs: "html"},
		{name: "explicit png", body: map[string]any{"html": "<p>b</p>", "format": "png"}, suffix: ".png", consumed: "1"},
		{name: "jpg", body: map[string]any{"html": "<p>c</p>", "format": "jpg"}, suffix: ".jpg", consumed: "1"},
		{name: "url", body: map[string]any{"url": "https://example.com/"}, consumed: "1"},
		{name: "url again", body: map[string]any{"url": "https://example.com/"}, consumed: "1"},
	}
	ids := map[string]string{}
	used := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post("/v1/image", tt.body)
			var l link
			r.Decode(t, &l)
			if l.URL != "https://api.example.test/v1/image/"+l.ID+tt.suffix {
				t.Fatalf("url %q for image %s", l.URL, l.ID)
			}
			if _, err := e.svc.Get(t.Context(), l.ID); err != nil {
				t.Fatalf("the answered image: %v", err)
			}
			if tt.consumed == "1" {
				used++
			}
			h := r.Header
			if h.Get("x-renders-allowed") != "50" || h.Get("x-renders-consumed") != tt.consumed || h.Get("x-renders-used") != fmt.Sprint(used) {
				t.Fatalf("x-renders-*: %s, %s, %s; want 50, %s, %d", h.Get("x-renders-allowed"), h.Get("x-renders-consumed"),
					h.Get("x-renders-used"), tt.consumed, used)
			}
			for name, id := range ids {
				if (id == l.ID) != (name == tt.sameAs) {
					t.Fatalf("image %s; %q made %s", l.ID, name, id)
				}
			}
			ids[tt.name] = l.ID
		})
	}

	r := post("/v1/image/batch", map[string]any{"default_options": map[string]any{"format": "webp"},
		"variations": []any{map[string]any{"html": "1"}, map[string]any{"html": "2", "format": "png"}, map[string]any{"html": "1"}}})
	var batch struct{ Images []link }
	r.Decode(t, &batch)
	if len(batch.Images) != 3 || !strings.HasSuffix(batch.Images[0].URL, ".webp") || !strings.HasSuffix(batch.Images[1].URL, ".png") ||
		batch.Images[0].ID == batch.Images[2].ID {
		t.Fatalf("batch answer %+v (batches never dedupe)", batch.Images)
	}
	if r.Header.Get("x-renders-consumed") != "3" {
		t.Fatalf("a batch of 3 consumed %s", r.Header.Get("x-renders-consumed"))
	}
}

// TestCreateOverThePlan: a creation the plan cannot pay for is a 429 with
// the plan's figures, in the body and the x-renders-* headers.
func TestCreateOverThePlan(t *testing.T) {
	e := newEnv(t)
	base := e.serveHTTP(e.handler())
	o := e.newOrg("free")
	var vs []any
	for i := range 25 {
		vs = append(vs, map[string]any{"html": fmt.Sprint(i)})
	}
	for range 2 {
		r := apitest.Do(t, base, apitest.Request{Method: "POST", Path: "/v1/image/batch", JSON: map[string]any{"variations": vs}, Header: as(o)})
		apitest.WantStatus(t, r, http.StatusOK)
	}
	r := apitest.Do(t, base, apitest.Request{Method: "POST", Path: "/v1/image", JSON: map[string]any{"html": "one more"}, Header: as(o)})
	m := apitest.WantError(t, r, http.StatusTooManyRequests)
	apitest.WantMessage(t, m, "used 50 of your 50", "needs 1")
	if m["error"] != "Plan limit exceeded" {
		t.Fatalf("error %q", m["error"])
	}
	h := r.Header
	if h.Get("x-renders-allowed") != "50" || h.Get("x-renders-consumed") != "0" || h.Get("x-renders-used") != "50" {
		t.Fatalf("x-renders-*: %s, %s, %s", h.Get("x-renders-allowed"), h.Get("x-renders-consumed"), h.Get("x-renders-used"))
	}
}
