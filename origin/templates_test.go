package origin_test

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

const card = `<div style="width:{{w}}px;height:50px;background:{{color}}">{{title}}</div>`

func (o *testOrigin) saveTemplate(t testing.TB, creds apitest.Creds, body map[string]any) (string, int) {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &creds, JSON: body})
	apitest.WantStatus(t, r, 201)
	var s struct {
		TemplateID      string `json:"template_id"`
		TemplateVersion int    `json:"template_version"`
	}
	r.Decode(t, &s)
	if !strings.HasPrefix(s.TemplateID, "t-") || s.TemplateVersion != 1 {
		t.Fatalf("saved %s", r.Body)
	}
	return s.TemplateID, s.TemplateVersion
}

func TestTemplates(t *testing.T) {
	// Its own sandbox: it counts the sandbox's renders.
	o := startOrigin(t, func(c *origin.Config) { c.Sandbox = nil })
	id, _ := o.saveTemplate(t, o.Owner, map[string]any{"html": card, "name": "Card", "description": "a card", "device_scale": 1, "css": "div{color:{{ink}} }"})

	// Rendering from the template: the saved defaults apply (scale 1).
	values := map[string]any{"w": 120, "color": "rgb(0,0,255)", "title": "<b>hi</b>", "ink": "white"}
	for _, req := range []struct {
		name, path string
		body       map[string]any
	}{
		{"template_id in the body", "/v1/image", map[string]any{"template_id": id, "template_values": values}},
		{"template id in the path", "/v1/image/" + id, map[string]any{"template_values": values}},
		{"version in the path", "/v1/image/" + id + "/1", map[string]any{"template_values": values}},
	} {
		t.Run(req.name, func(t *testing.T) {
			r := o.do(t, apitest.Request{Method: "POST", Path: req.path, Creds: &o.Owner, JSON: req.body})
			apitest.WantStatus(t, r, 200)
			if r.Header.Get("x-renders-consumed") != "1" {
				t.Fatalf("x-renders-consumed %q", r.Header.Get("x-renders-consumed"))
			}
			var c struct{ URL string }
			r.Decode(t, &c)
			img := apitest.DecodeImage(t, o.get(t, c.URL))
			apitest.WantSize(t, img, 120, 50)
			apitest.WantPixel(t, img, 115, 45, blue, 3)
		})
	}
	// The request's options win over the template's defaults.
	_, u := o.create(t, o.Owner, map[string]any{"template_id": id, "template_values": values, "device_scale": 2})
	apitest.WantSize(t, apitest.DecodeImage(t, o.get(t, u)), 240, 100)

	// A batch mixes templates and values.
	r := o.batch(t, o.Owner, map[string]any{"template_id": id, "default_options": map[string]any{"template_values": values},
		"variations": []map[string]any{{}, {"template_values": map[string]any{"w": 60, "color": "red"}}}})
	apitest.WantStatus(t, r, 200)
	var b struct{ Images []struct{ URL string } }
	r.Decode(t, &b)
	apitest.WantSize(t, apitest.DecodeImage(t, o.get(t, b.Images[1].URL)), 60, 50)

	// The template was parsed when saved: every render above was the
	// sandbox evaluator's, none the Go guest's.
	metrics := string(o.get(t, "/metrics").Body)
	evaluated := regexp.MustCompile(`(?m)^pictor_template_renders_total\{engine="evaluator"\} ([0-9]+)$`).FindStringSubmatch(metrics)
	if evaluated == nil || evaluated[1] == "0" || !strings.Contains(metrics, `pictor_template_renders_total{engine="go_guest"} 0`+"\n") {
		t.Fatalf("template render metrics:\n%s", regexp.MustCompile(`(?m)^pictor_template.*$`).FindAllString(metrics, -1))
	}

	// Versions: an edit of a rendered version makes a new one.
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id, Creds: &o.Owner, JSON: map[string]any{"html": card + "<p>v2</p>", "device_scale": 1}})
	apitest.WantStatus(t, r, 200)
	if !strings.Contains(string(r.Body), `"template_version":2`) {
		t.Fatalf("edit after renders: %s", r.Body)
	}
	// ... and an edit of the unrendered latest version replaces it.
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id, Creds: &o.Owner, JSON: map[string]any{"html": card + "<p>v2b</p>"}})
	if !strings.Contains(string(r.Body), `"template_version":2`) {
		t.Fatalf("edit of an unrendered version: %s", r.Body)
	}
	r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/template/" + id, Creds: &o.Owner})
	apitest.WantStatus(t, r, 200)
	var versions struct {
		Data []struct {
			ID          string `json:"id"`
			Version     int    `json:"version"`
			HTML        string `json:"html"`
			RenderCount int    `json:"render_count"`
		}
	}
	r.Decode(t, &versions)
	if len(versions.Data) != 2 || versions.Data[0].Version != 2 || !strings.Contains(versions.Data[0].HTML, "v2b") || versions.Data[1].RenderCount != 6 {
		t.Fatalf("versions %+v", versions.Data)
	}
	r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/template", Creds: &o.Owner})
	if !strings.Contains(string(r.Body), `"next_page_start":null`) || !strings.Contains(string(r.Body), id) {
		t.Fatalf("list %s", r.Body)
	}

	// Errors.
	for _, tc := range []struct {
		name, path string
		body       map[string]any
		status     int
		field      string
	}{
		{"syntax error names line and column", "/v1/template", map[string]any{"html": "<p>\n{{#if x}}open"}, 400, "html"},
		{"html required", "/v1/template", map[string]any{"css": "x"}, 400, "html"},
		{"bad default", "/v1/template", map[string]any{"html": "x", "device_scale": 9}, 400, "device_scale"},
		{"name too long", "/v1/template", map[string]any{"html": "x", "name": strings.Repeat("n", 65)}, 400, "name"},
		{"unknown template", "/v1/image/t-01a20000-0000-7000-8000-000000000000", map[string]any{}, 404, ""},
		{"unknown version", "/v1/image/" + id + "/9", map[string]any{}, 404, ""},
		{"values not an object", "/v1/image/" + id, map[string]any{"template_values": []int{1}}, 400, "template_values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := o.do(t, apitest.Request{Method: "POST", Path: tc.path, Creds: &o.Owner, JSON: tc.body})
			if tc.field != "" {
				apitest.WantField(t, r, tc.field)
			} else {
				apitest.WantError(t, r, tc.status)
			}
		})
	}
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &o.Owner, JSON: map[string]any{"html": "<p>\n{{#if x}}open"}})
	apitest.WantMessage(t, apitest.WantError(t, r, 400), "line")

	// A template that loops forever is stopped and reported as the
	// caller's fault; the server keeps working.
	loop, _ := o.saveTemplate(t, o.Owner, map[string]any{"html": strings.Repeat("{{#each a}}", 6) + "x" + strings.Repeat("{{/each}}", 6)})
	big := make([]int, 100)
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/" + loop, Creds: &o.Owner, JSON: map[string]any{"template_values": map[string]any{"a": big}}})
	if r.Status != 400 {
		t.Fatalf("runaway template: %d %s", r.Status, r.Body)
	}
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/" + id, Creds: &o.Owner, JSON: map[string]any{"template_values": values}}), 200)

	// Another organization cannot see or use the template.
	_, other := o.newOrg(t.Context(), t, "pro")
	apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/template/" + id, Creds: &other}), 404)
	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/" + id, Creds: &other, JSON: map[string]any{}}), 404)

	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/template/" + id, Creds: &o.Owner}), 204)
	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/" + id, Creds: &o.Owner, JSON: map[string]any{}}), 404)
}

func TestTemplatePlanLimit(t *testing.T) {
	o := startOrigin(t)
	_, free := o.newOrg(t.Context(), t, "free")
	o.saveTemplate(t, free, map[string]any{"html": "one"})
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &free, JSON: map[string]any{"html": "two"}})
	apitest.WantMessage(t, apitest.WantError(t, r, 429), "The free plan is limited to 1 template")
}

// TestSignedTemplateURLs signs like the official client: sorted values,
// objects as JSON, with any key of the organization.
func TestSignedTemplateURLs(t *testing.T) {
	o := startOrigin(t)
	id, _ := o.saveTemplate(t, o.Owner, map[string]any{"html": card, "device_scale": 1})
	k := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"images:create"}})
	values := map[string]string{"w": "80", "color": "rgb(0,0,255)", "title": "Launch"}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	q := url.Values{}
	for _, k := range keys {
		q.Add(k, values[k])
	}
	query := q.Encode()
	path := fmt.Sprintf("/v1/image/%s/%s?%s", id, sign(k.APIKey, query), query)
	img := apitest.DecodeImage(t, o.get(t, path))
	apitest.WantSize(t, img, 80, 50)
	again := o.get(t, path)
	apitest.WantStatus(t, again, 200)
	if got := o.usage(t, o.Owner); got != 1 {
		t.Fatalf("the same signed template URL consumed %d credits", got)
	}
	jpg := o.get(t, fmt.Sprintf("/v1/image/%s/%s/jpg?%s", id, sign(k.APIKey, query), query))
	if jpg.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("jpg: %d %q", jpg.Status, jpg.Header.Get("Content-Type"))
	}
	bad := o.get(t, fmt.Sprintf("/v1/image/%s/%s?%s", id, strings.Repeat("a", 64), query))
	apitest.WantMessage(t, apitest.WantError(t, bad, 401), "Invalid token")
	// A key of another organization cannot sign for this template.
	_, other := o.newOrg(t.Context(), t, "pro")
	apitest.WantError(t, o.get(t, fmt.Sprintf("/v1/image/%s/%s?%s", id, sign(other.APIKey, query), query)), 401)
}
