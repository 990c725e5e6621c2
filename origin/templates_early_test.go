package origin_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// wantValidation checks a 400 in the standard body whose validation
// errors are exactly paths, in order, each message holding its fragment.
func wantValidation(t *testing.T, r *apitest.Response, want [][2]string) {
	t.Helper()
	apitest.WantError(t, r, http.StatusBadRequest)
	var body struct {
		ValidationErrors []struct{ Path, Message string } `json:"validation_errors"`
	}
	r.Decode(t, &body)
	if len(body.ValidationErrors) != len(want) {
		t.Fatalf("validation errors %+v, want %q", body.ValidationErrors, want)
	}
	for i, ve := range body.ValidationErrors {
		if ve.Path != want[i][0] || !strings.Contains(ve.Message, want[i][1]) {
			t.Fatalf("validation error %d: %+v, want %s: %q", i, ve, want[i][0], want[i][1])
		}
	}
}

// TestTemplatesFailEarly (issue 28): a template calling a helper the
// sandbox lacks is refused when saved, over REST and MCP, naming the
// helper and its line; a template render carrying one of the template's
// variables beside template_values is refused naming it, while other
// unknown fields are ignored as before and the image renders.
func TestTemplatesFailEarly(t *testing.T) {
	o := startOrigin(t)

	// Saves.
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &o.Owner, JSON: map[string]any{"html": "<div>\n  <h1>\n    {{upper title}}</h1></div>"}})
	wantValidation(t, r, [][2]string{{"html", `unknown helper "upper" on line 3, column 7`}})
	apitest.WantMessage(t, apitest.WantError(t, r, 400), `Invalid request: html unknown helper "upper" on line 3`)
	for _, html := range []string{"{{#repeat 3}}x{{/repeat}}", `{{formatDate date "YYYY"}}`, "{{foo (bar x)}}", "{{#if (isEven n)}}e{{/if}}"} {
		wantValidation(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &o.Owner, JSON: map[string]any{"html": html}}),
			[][2]string{{"html", "unknown helper"}})
	}
	// The card reads w, color and title at the top level, label only in
	// #each's context; format is also an image parameter.
	html := card + `{{#each tags}}<i>{{label}}</i>{{/each}}<!-- {{format}} -->`
	id, _ := o.saveTemplate(t, o.Owner, map[string]any{"html": html, "device_scale": 1})
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id, Creds: &o.Owner, JSON: map[string]any{"html": card, "css": "div{color:{{shade ink}} }"}})
	wantValidation(t, r, [][2]string{{"css", `unknown helper "shade" on line 1, column 13`}})

	// Renders.
	values := map[string]any{"w": 120, "color": "rgb(0,0,255)", "title": "", "tags": []any{}}
	form := func(fields url.Values) apitest.Request {
		return apitest.Request{Method: "POST", Path: "/v1/image/" + id, Creds: &o.Owner, Raw: fields.Encode(), ContentType: "application/x-www-form-urlencoded"}
	}
	for _, tc := range []struct {
		name string
		req  apitest.Request
		want [][2]string
	}{
		{"template id in the path", apitest.Request{Method: "POST", Path: "/v1/image/" + id, Creds: &o.Owner, JSON: map[string]any{"template_values": values, "title": "Launch"}},
			[][2]string{{"title", "is a variable of this template: put it in template_values"}}},
		{"version in the path", apitest.Request{Method: "POST", Path: "/v1/image/" + id + "/1", Creds: &o.Owner, JSON: map[string]any{"title": "Launch", "color": "red"}},
			[][2]string{{"color", "is a variable of this template"}, {"title", "is a variable of this template"}}},
		{"template_id in the body", apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"template_id": id, "template_values": values, "w": 80}},
			[][2]string{{"w", "put it in template_values"}}},
		{"a form", form(url.Values{"template_values": {`{"w":120}`}, "title": {"Launch"}}), [][2]string{{"title", "put it in template_values"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := o.do(t, tc.req)
			wantValidation(t, r, tc.want)
			if r.Header.Get("x-renders-consumed") != "" {
				t.Fatalf("a refused render consumed %q", r.Header.Get("x-renders-consumed"))
			}
		})
	}
	if n := o.usage(t, o.Owner); n != 0 {
		t.Fatalf("refused renders used %d credits", n)
	}
	// Fields that are not variables of the top level, or are parameters,
	// are what they were: ignored, or parameters.
	_, u := o.create(t, o.Owner, map[string]any{"template_id": id, "template_values": values, "label": "x", "subtitle": "y", "format": "png"})
	img := apitest.DecodeImage(t, o.get(t, u))
	apitest.WantSize(t, img, 120, 50)
	apitest.WantPixel(t, img, 60, 25, blue, 3)
	r = o.do(t, form(url.Values{"template_values": {`{"w":60,"color":"rgb(0,0,255)"}`}, "unrelated": {"1"}}))
	apitest.WantStatus(t, r, 200)

	// MCP: the template tools run these routes.
	_, pro := o.newOrg(t.Context(), t, "pro")
	cs := mcpSession(t, o, mcpConnect(t, o, pro, nil).Access)
	body := mcpFail(t, cs, "create_template", map[string]any{"html": "<p>{{upper title}}</p>"}, `unknown helper "upper" on line 1, column 6`)
	if body["statusCode"] != float64(400) {
		t.Fatalf("create_template: %v", body)
	}
	var saved struct {
		TemplateID string `json:"template_id"`
	}
	mcpOK(t, cs, "create_template", map[string]any{"html": card}, &saved)
	mcpFail(t, cs, "update_template", map[string]any{"template_id": saved.TemplateID, "html": "{{#repeat 2}}x{{/repeat}}"}, `unknown helper "repeat" on line 1, column 4`)
	mcpFail(t, cs, "create_templated_image", map[string]any{"template_id": saved.TemplateID, "template_values": values, "title": "Launch"},
		"title is a variable of this template: put it in template_values")
}
