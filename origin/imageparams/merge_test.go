package imageparams

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/field"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name       string
		base, over request
		check      func(t *testing.T, p *Params)
	}{
		{name: "variation wins, base fills in",
			base: request{body: `{"html":"base","viewport_width":100,"viewport_height":100,"headers":{"X-A":"1","X-B":"2"},"format":"jpg"}`},
			over: request{body: `{"html":"over","viewport_width":200,"headers":{"X-C":"3"}}`},
			check: func(t *testing.T, p *Params) {
				if p.HTML != "over" || *p.Viewport != (Size{200, 100}) || p.Format != FormatJPG || len(p.Headers) != 1 || p.Headers["X-C"] != "3" {
					t.Errorf("got %+v", p)
				}
			}},
		{name: "null in the variation removes the default",
			base: request{body: `{"html":"x","disable_twemoji":true,"viewport_width":1,"viewport_height":1}`},
			over: request{body: `{"disable_twemoji":null,"viewport_width":null,"viewport_height":null}`},
			check: func(t *testing.T, p *Params) {
				if p.DisableTwemoji != nil || p.Viewport != nil {
					t.Errorf("got %+v", p)
				}
			}},
		{name: "template id from the path",
			base: request{body: `{"template_values":{"a":1},"template_id":"t-body"}`},
			over: request{body: `{"template_id":"t-path"}`},
			check: func(t *testing.T, p *Params) {
				if p.TemplateID != "t-path" || string(p.TemplateValues) != `{"a":1}` {
					t.Errorf("got %+v", p)
				}
			}},
		{name: "two forms",
			base: request{body: `html=a&headers=X-A:1&headers=X-B:2&ms_delay=5`, form: true},
			over: request{body: `html=b&ms_delay=`, form: true},
			check: func(t *testing.T, p *Params) {
				if p.HTML != "b" || len(p.Headers) != 2 || p.Delay != 0 {
					t.Errorf("got %+v", p)
				}
			}},
		{name: "JSON over a form",
			base: request{body: `html=a&headers=X-A:1&viewport_width=5&viewport_height=6`, form: true},
			over: request{body: `{"pdf_options":{"scale":2},"additional_header_origins":["https://a.com"],"full_screen":true,"viewport_height":null}`},
			check: func(t *testing.T, p *Params) {
				if p.HTML != "a" || p.PDF == nil || p.PDF.Scale != 2 || !slices.Equal(p.AdditionalHeaderOrigins, []string{"https://a.com"}) || !p.FullScreen {
					t.Errorf("got %+v", p)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, over := object(t, tc.base.body, tc.base.form), object(t, tc.over.body, tc.over.form)
			merged := Merge(base, over)
			p, err := Parse(merged, Options{RequireSource: true})
			if tc.name == "JSON over a form" {
				// viewport_height was removed, so viewport_width stands alone.
				if got := errorPaths(t, err); !slices.Equal(got, []string{"viewport_height"}) {
					t.Fatalf("paths = %q", got)
				}
				merged = Merge(merged, object(t, `{"viewport_width":null}`, false))
				p, err = Parse(merged, Options{RequireSource: true})
			}
			if err != nil {
				t.Fatalf("Parse: %v (%v)", err, errorPathsOrNil(err))
			}
			tc.check(t, &p)
		})
	}
}

func TestMergePrefixAndNil(t *testing.T) {
	base := object(t, `{"viewport_width":0,"viewport_height":10}`, false)
	over := object(t, `{"html":"x"}`, false)
	over.Prefix = "variations[3]."
	_, err := Parse(Merge(base, over), Options{RequireSource: true})
	if got := errorPaths(t, err); !slices.Equal(got, []string{"variations[3].viewport_width"}) {
		t.Fatalf("paths = %q", got)
	}
	if _, err := Parse(Merge(nil, over), Options{RequireSource: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(Merge(over, nil), Options{RequireSource: true}); err != nil {
		t.Fatal(err)
	}
	if keys := Merge(nil, nil).Keys(); len(keys) != 0 {
		t.Fatalf("keys = %q", keys)
	}
	path := field.FromJSON(map[string]json.RawMessage{"template_id": json.RawMessage(`"t-9"`)})
	p, err := Parse(Merge(object(t, `{"template_id":"t-1"}`, false), path), Options{RequireSource: true})
	if err != nil || p.TemplateID != "t-9" {
		t.Fatalf("template id %q, %v", p.TemplateID, err)
	}
}
