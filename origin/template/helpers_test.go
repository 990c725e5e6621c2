package template_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/template"
	"github.com/pictorhq/pictor/wasm"
)

// TestSaveRefusesUnknownHelpers: a template calling a helper the
// sandbox lacks is refused when saved, as a new template or a new
// version, JSON or form: a 400 naming html or css, the helper and where
// it is called. Built-in helpers, sections and block parameters are
// not helper calls of that kind.
func TestSaveRefusesUnknownHelpers(t *testing.T) {
	s := start(t)
	helpers := strings.Join(wasm.Helpers(), ", ")
	tests := []struct {
		name      string
		html, css string
		fields    map[string]string // field: fragment of its message; none: saved
	}{
		{name: "a helper with a parameter", html: "<h1>\n\n  {{upper title}}</h1>",
			fields: map[string]string{"html": `unknown helper "upper" on line 3, column 5: templates have only the built-in Handlebars helpers (` + helpers + ")"}},
		{name: "a block helper", html: "{{#repeat 3}}<i></i>{{/repeat}}", fields: map[string]string{"html": `unknown helper "repeat" on line 1, column 4`}},
		{name: "a helper with a string", html: `<p>{{formatDate date "YYYY"}}</p>`, fields: map[string]string{"html": `unknown helper "formatDate" on line 1, column 6`}},
		{name: "a hash only", html: "{{badge size=2}}", fields: map[string]string{"html": `unknown helper "badge"`}},
		{name: "a subexpression", html: "{{#if (isEven n)}}even{{/if}}", fields: map[string]string{"html": `unknown helper "isEven" on line 1, column 8`}},
		{name: "nested calls, each named once", html: "{{foo (bar x)}}{{foo y}}", fields: map[string]string{"html": `unknown helper "foo" on line 1, column 3; unknown helper "bar" on line 1, column 8:`}},
		{name: "more than three", html: "{{a 1}}{{b 1}}{{c 1}}{{d 1}}{{e 1}}", fields: map[string]string{"html": `unknown helper "c" on line 1, column 17 (and 2 more)`}},
		{name: "in an unrendered branch", html: "{{#if a}}{{else}}{{shout b}}{{/if}}", fields: map[string]string{"html": `unknown helper "shout"`}},
		{name: "in the css", html: "<p>x</p>", css: "p{color:{{darken ink 10}} }", fields: map[string]string{"css": `unknown helper "darken" on line 1, column 11`}},
		{name: "in both", html: "{{upper t}}", css: "{{lower c}}", fields: map[string]string{"html": `"upper"`, "css": `"lower"`}},
		{name: "built-in helpers", html: `{{#each items as |item i|}}{{#if item.on}}{{lookup item "name"}}{{else}}{{log i}}{{/if}}{{/each}}{{#with a}}{{b}}{{/with}}{{#unless c}}{{/unless}}`},
		{name: "sections and paths", html: "{{#show}}{{badge}}{{/show}}{{^hide}}x{{/hide}}{{author.name}}{{{raw}}}{{@root.x}}"},
		{name: "a block parameter called with a parameter", html: "{{#each fmts as |fmt|}}{{fmt 1}}{{/each}}"},
		{name: "a built-in in a subexpression", html: `{{#if (lookup flags "on")}}on{{/if}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"html": tc.html}
			if tc.css != "" {
				body["css"] = tc.css
			}
			r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: pro, JSON: body})
			if len(tc.fields) == 0 {
				apitest.WantStatus(t, r, http.StatusCreated)
				return
			}
			wantFields(t, r, tc.fields)
		})
	}

	// A new version: refused, the template unchanged; then saved.
	id := s.save(t, pro, map[string]any{"html": "<p>{{title}}</p>"})
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id, Creds: pro, JSON: map[string]any{"html": "<p>\n{{upper title}}</p>"}})
	wantFields(t, r, map[string]string{"html": `unknown helper "upper" on line 2, column 3`})
	if v := s.versions(t, pro, id); len(v) != 1 || v[0].HTML != "<p>{{title}}</p>" {
		t.Fatalf("after a refused edit: %+v", v)
	}
	if got := s.changes(); len(got) != 0 {
		t.Fatalf("a refused edit announced a change: %q", got)
	}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id, Creds: pro, JSON: map[string]any{"html": "<p>{{#if title}}{{title}}{{/if}}</p>"}}), http.StatusOK)

	// A form, as JSON.
	form := url.Values{"html": {"{{upper title}}"}, "name": {"Card"}}
	r = s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: pro, Raw: form.Encode(), ContentType: "application/x-www-form-urlencoded"})
	wantFields(t, r, map[string]string{"html": `unknown helper "upper" on line 1, column 3`})

	// A syntax error is still reported as one, before any helper.
	r = s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: pro, JSON: map[string]any{"html": "{{upper x}}{{#if a}}"}})
	wantFields(t, r, map[string]string{"html": "line 1, column"})
}

// wantFields checks a 400 whose validation errors are exactly fields,
// each message holding its fragment.
func wantFields(t *testing.T, r *apitest.Response, fields map[string]string) {
	t.Helper()
	apitest.WantError(t, r, http.StatusBadRequest)
	var body struct {
		ValidationErrors []struct{ Path, Message string } `json:"validation_errors"`
	}
	r.Decode(t, &body)
	if len(body.ValidationErrors) != len(fields) {
		t.Fatalf("validation errors %+v, want %v", body.ValidationErrors, fields)
	}
	for _, ve := range body.ValidationErrors {
		want, ok := fields[ve.Path]
		if !ok || !strings.Contains(ve.Message, want) {
			t.Fatalf("validation error %+v, want %s: %q", ve, ve.Path, want)
		}
	}
}

// TestStoredUnknownHelpers: a version saved before saves refused
// unknown helpers renders as it did: its error is still the render's,
// on template_values, and a call that renders nothing still does.
func TestStoredUnknownHelpers(t *testing.T) {
	s := start(t)
	orgID := "org-" + pro.APIID
	store := func(html string) string {
		t.Helper()
		tpl, _, err := s.h.Store.Create(context.Background(), orgID, 1000, template.Version{HTML: html})
		if err != nil {
			t.Fatal(err)
		}
		return tpl.ID
	}
	values := field.FromJSON(map[string]json.RawMessage{"template_values": json.RawMessage(`{"title":"Hi"}`)})

	failing := store("<p>{{upper title}}</p>")
	_, _, _, err := s.h.Expand(context.Background(), orgID, values, failing, 0)
	wantAPIError(t, err, 400, "template_values", "")

	quiet := store("<p>{{badge size=2}}{{title}}</p>")
	out, _, _, err := s.h.Expand(context.Background(), orgID, values, quiet, 0)
	if err != nil {
		t.Fatal(err)
	}
	var html string
	if raw, _ := out.Raw("html"); json.Unmarshal(raw, &html) != nil || html != "<p>Hi</p>" {
		t.Fatalf("html %s", raw)
	}
	if vars, err := s.h.Variables(t.Context(), orgID, quiet, 0); err != nil || !slices.Equal(vars, []string{"title"}) {
		t.Fatalf("Variables = %q, %v", vars, err)
	}
}

// TestVariables: the names a version's html and css read from the top
// level of template_values, for the version asked for.
func TestVariables(t *testing.T) {
	s := start(t)
	orgID := "org-" + pro.APIID
	id := s.save(t, pro, map[string]any{
		"html": "<h1>{{title}}</h1>{{#each items}}<i>{{label}} {{../brand}}</i>{{else}}{{empty}}{{/each}}{{#if show}}{{author.name}}{{/if}}{{#with site}}{{url}}{{/with}}",
		"css":  "h1{color:{{ink}} }",
	})
	if err := s.h.CountRenders(t.Context(), id, 1, 1); err != nil {
		t.Fatal(err)
	}
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id, Creds: pro, JSON: map[string]any{"html": "{{headline}}"}})
	apitest.WantStatus(t, r, http.StatusOK)

	for _, tc := range []struct {
		version int
		want    []string
	}{
		{1, []string{"author", "brand", "empty", "ink", "items", "show", "site", "title"}},
		{2, []string{"headline"}},
		{0, []string{"headline"}},
	} {
		got, err := s.h.Variables(t.Context(), orgID, id, tc.version)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Fatalf("version %d: Variables = %q, %v; want %q", tc.version, got, err, tc.want)
		}
	}
	_, err := s.h.Variables(t.Context(), orgID, "t-nope", 0)
	wantAPIError(t, err, 404, "", "Template t-nope not found")
	_, err = s.h.Variables(t.Context(), "org-"+other.APIID, id, 0)
	wantAPIError(t, err, 404, "", "not found")
}
