package template_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/template"
)

// TestExpandDraft: a draft expands as a saved version of the same
// template does, from JSON and from a form, and stores nothing.
func TestExpandDraft(t *testing.T) {
	s := start(t)
	draft := map[string]any{"html": "<p>{{title}}</p>", "css": "p{color:{{ink}} }", "device_scale": 1, "viewport_width": 300, "viewport_height": 200}
	id := s.save(t, pro, draft)
	values := map[string]any{"title": "<b>Hi</b>", "ink": "red"}
	orgID := "org-" + pro.APIID
	jsonObj := func(m map[string]any) *field.Object {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		o, err := field.ParseJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, tc := range []struct {
		name string
		req  map[string]any
	}{
		{"values", map[string]any{"template_values": values}},
		{"the request wins over the defaults", map[string]any{"template_values": values, "viewport_width": 500, "device_scale": nil}},
		{"no values", map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved, _, _, err := s.h.Expand(t.Context(), orgID, jsonObj(withField(tc.req, "template_id", id)), "", 0)
			if err != nil {
				t.Fatal(err)
			}
			got, vars, err := s.h.ExpandDraft(t.Context(), jsonObj(withField(tc.req, template.DraftField, draft)))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(vars, []string{"ink", "title"}) {
				t.Errorf("variables %v", vars)
			}
			if a, b := objectJSON(t, saved), objectJSON(t, got); a != b {
				t.Errorf("the draft expands to\n%s\nthe saved template to\n%s", b, a)
			}
		})
	}
	t.Run("form", func(t *testing.T) {
		d, _ := json.Marshal(draft)
		v, _ := json.Marshal(values)
		got, _, err := s.h.ExpandDraft(t.Context(), field.FromForm(url.Values{"template": {string(d)}, "template_values": {string(v)}, "viewport_width": {"500"}}))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := got.Raw("html")
		var html string
		if err := json.Unmarshal(raw, &html); err != nil || html != "<p>&lt;b&gt;Hi&lt;/b&gt;</p>" {
			t.Errorf("html %s", raw)
		}
		width := got.FormValues("viewport_width")
		if len(width) != 1 || width[0] != "500" {
			t.Errorf("viewport_width %v", width)
		}
	})
	// Nothing was saved: the organization has its one template.
	if versions := s.versions(t, pro, id); len(versions) != 1 {
		t.Errorf("%d versions", len(versions))
	}
}

func withField(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for key, val := range m {
		out[key] = val
	}
	return out
}

// objectJSON is an expanded request's fields, as sorted JSON.
func objectJSON(t *testing.T, o *field.Object) string {
	t.Helper()
	m := map[string]json.RawMessage{}
	for _, k := range o.Keys() {
		raw, ok := o.Raw(k)
		if !ok {
			raw = json.RawMessage("null")
		}
		m[k] = raw
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzExpandDraft: whatever the body, a draft expands to a plain request
// without the draft, or is refused with a 4xx; it never panics.
func FuzzExpandDraft(f *testing.F) {
	for _, seed := range []string{
		`{"template":{"html":"<p>{{title}}</p>","css":"p{color:{{ink}}}"},"template_values":{"title":"x","ink":"red"}}`,
		`{"template":{"html":"{{#each items}}<i>{{this}}</i>{{/each}}","viewport_width":10,"viewport_height":10},"template_values":{"items":[1,2]}}`,
		`{"template":{"html":"{{#if x}}"}}`,
		`{"template":{"html":"{{shout x}}"}}`,
		`{"template":"<p>x</p>"}`,
		`{"template":null}`,
		`{"template":[]}`,
		`{"template":{"html":"x","device_scale":"big"}}`,
		`{"template":{"html":"x"},"template_values":[1]}`,
		`{"template":{"html":"x"},"html":"y"}`,
		`{"template":{"html":"{{> partial}}"}}`,
		`{"template":{"html":"{{../../x}}"},"template_values":{"x":{"y":1}}}`,
	} {
		f.Add(seed)
	}
	h := &template.Handler{Engine: engine} // a draft needs no store
	f.Fuzz(func(t *testing.T, body string) {
		o, err := field.ParseJSON([]byte(body))
		if err != nil {
			return // refused before any draft is read
		}
		out, _, err := h.ExpandDraft(t.Context(), o)
		var ae *apierr.Error
		switch {
		case err == nil:
			if out.Present(template.DraftField) || !out.Present("html") {
				t.Fatalf("%s expanded to fields %v", body, out.Keys())
			}
		case errors.As(err, &ae):
			if ae.Status < 400 || ae.Status > 499 {
				t.Fatalf("%s: %v", body, err)
			}
		default:
			t.Fatalf("%s: an error without an answer: %v", body, err)
		}
	})
}
