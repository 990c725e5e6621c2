package openapi

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/proxy"
	"github.com/pictorhq/pictor/origin/storedest"
)

// parser runs a request parser of the API on a JSON body.
type parser func(o *field.Object) error

var parsers = map[string]parser{
	schKeyRequest: func(o *field.Object) error { _, err := apikey.ParseRequest(o); return err },
	schProxyRequest: func(o *field.Object) error {
		_, err := proxy.ParseRequest(o, proxy.Options{})
		return err
	},
	schDestRequest: func(o *field.Object) error {
		_, err := storedest.ParseRequest(o, storedest.Options{})
		return err
	},
	schOGRequest: func(o *field.Object) error {
		_, err := ogconfig.ParseRequest(o, ogconfig.Options{})
		return err
	},
	schImageParams: func(o *field.Object) error {
		_, err := imageparams.Parse(o, imageparams.Options{RequireSource: true})
		return err
	},
}

func fields(t *testing.T, p parser, body map[string]any) []apierr.FieldError {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	o, err := field.ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	err = p(o)
	var ae *apierr.Error
	if errors.As(err, &ae) {
		if len(ae.Fields) == 0 {
			t.Fatalf("a 400 without validation_errors: %v", ae)
		}
		return ae.Fields
	}
	if err != nil {
		t.Fatal(err)
	}
	return nil
}

// wrong is a JSON value of another type than s allows.
func wrong(s *openapi3.Schema) any {
	if s.Type.Includes(openapi3.TypeObject) {
		return []any{1}
	}
	return map[string]any{"x": 1}
}

func names(fs []apierr.FieldError) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

// TestRequestSchemasHeldToParsers: the request bodies of the document are
// the parsers' own. Each schema's example parses; each property, and each
// property of an object property, is one the parser reads (a value of the
// wrong type is refused naming it); and where the schema allows null, the
// parser takes null as not sent.
func TestRequestSchemasHeldToParsers(t *testing.T) {
	s := newSpec()
	s.define()
	for name, p := range parsers {
		t.Run(name, func(t *testing.T) {
			sch := s.components.Schemas[name].Value
			if len(sch.Examples) == 0 {
				t.Fatal("no example")
			}
			example := sch.Examples[0].(map[string]any)
			if fs := fields(t, p, example); len(fs) > 0 {
				t.Fatalf("the example is refused: %v", fs)
			}
			for _, prop := range sortedKeys(sch.Properties) {
				ps := sch.Properties[prop].Value
				body := cloneMap(example)
				body[prop] = wrong(ps)
				if name == schImageParams && prop == "template_version" {
					continue // read by the template's expansion (origin/template), not imageparams
				}
				if got := names(fields(t, p, body)); !slices.ContainsFunc(got, func(path string) bool {
					return path == prop || strings.HasPrefix(path, prop+".") || strings.HasPrefix(path, prop+"[")
				}) {
					t.Errorf("%s is not read by the parser (errors %v)", prop, got)
				}
				if ps.Type.IncludesNull() {
					// Null is not sent: at most "required" (a templated
					// configuration needs its template_id), never a type error.
					body[prop] = nil
					for _, f := range fields(t, p, body) {
						if f.Path == prop && !strings.Contains(f.Message, "required") {
							t.Errorf("%s: null is refused: %s", prop, f.Message)
						}
					}
				}
				if !ps.Type.Is(openapi3.TypeObject) && !ps.Type.Includes(openapi3.TypeObject) || len(ps.Properties) == 0 {
					continue
				}
				for _, sub := range sortedKeys(ps.Properties) {
					inner := map[string]any{}
					if m, ok := example[prop].(map[string]any); ok {
						inner = cloneMap(m)
					}
					inner[sub] = wrong(ps.Properties[sub].Value)
					body := cloneMap(example)
					body[prop] = inner
					path := prop + "." + sub
					if got := names(fields(t, p, body)); !slices.ContainsFunc(got, func(p string) bool {
						return p == path || strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[")
					}) {
						t.Errorf("%s is not read by the parser (errors %v)", path, got)
					}
				}
			}
			// Required properties are required.
			for _, prop := range sch.Required {
				body := cloneMap(example)
				delete(body, prop)
				if got := names(fields(t, p, body)); !slices.Contains(got, prop) {
					t.Errorf("%s is required by the schema, not by the parser (errors %v)", prop, got)
				}
			}
		})
	}
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestFormSchemas: the form twin of every body has the JSON body's fields,
// and holds no object and no null.
func TestFormSchemas(t *testing.T) {
	s := newSpec()
	s.define()
	for jsonName, formName := range map[string]string{schImageParams: schImageForm, schTemplateRender: schTemplateForm,
		schTemplateRequest: schTemplateFormReq, schProxyRequest: schProxyForm, schOGRequest: schOGForm, schPreviewRequest: schPreviewForm} {
		js, form := s.components.Schemas[jsonName].Value, s.components.Schemas[formName].Value
		if !slices.Equal(sortedKeys(js.Properties), sortedKeys(form.Properties)) {
			t.Errorf("%s and %s differ in fields", jsonName, formName)
		}
		for name, p := range form.Properties {
			if p.Value.Type.Includes(openapi3.TypeObject) || p.Value.Type.IncludesNull() || slices.Contains(p.Value.Enum, nil) {
				t.Errorf("%s.%s is %v in a form", formName, name, *p.Value.Type)
			}
			if p.Value.Type.Is(openapi3.TypeArray) && !p.Value.Items.Value.Type.Is(openapi3.TypeString) {
				t.Errorf("%s.%s is an array of %v in a form", formName, name, p.Value.Items.Value.Type)
			}
		}
	}
}

// TestOGDefaultOptions: default_options offers exactly what ogconfig takes.
func TestOGDefaultOptions(t *testing.T) {
	s := newSpec()
	s.define()
	for _, name := range []string{schOGOptions} {
		got := sortedKeys(s.components.Schemas[name].Value.Properties)
		if want := slices.Sorted(slices.Values(ogconfig.OptionNames)); !slices.Equal(got, want) {
			t.Errorf("%s offers %v, ogconfig takes %v", name, got, want)
		}
	}
}
