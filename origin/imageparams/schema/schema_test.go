package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/imageparams"
)

// parse runs imageparams.Parse on a JSON object, as REST does.
func parse(t *testing.T, body map[string]any) (imageparams.Params, []apierr.FieldError) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	o, err := field.ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := imageparams.Parse(o, imageparams.Options{})
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return p, ae.Fields
	}
	if err != nil {
		t.Fatal(err)
	}
	return p, nil
}

// wrongType is a value of another JSON type than s allows.
func wrongType(s *jsonschema.Schema) any {
	if s.Type == "object" {
		return []any{}
	}
	return map[string]any{}
}

// TestNamesParse: every property of the table (and of pdf_options) is one
// imageparams.Parse reads: a value of the wrong type under that name is
// refused naming it.
func TestNamesParse(t *testing.T) {
	for _, p := range Params() {
		t.Run(p.Name, func(t *testing.T) {
			_, fields := parse(t, map[string]any{p.Name: wrongType(p.Schema)})
			if !slices.ContainsFunc(fields, func(f apierr.FieldError) bool { return f.Path == p.Name }) {
				t.Fatalf("Parse does not read %s: errors %v", p.Name, fields)
			}
			for name, sub := range p.Schema.Properties {
				_, fields := parse(t, map[string]any{p.Name: map[string]any{name: wrongType(sub)}})
				path := p.Name + "." + name
				if !slices.ContainsFunc(fields, func(f apierr.FieldError) bool { return f.Path == path }) {
					t.Fatalf("Parse does not read %s: errors %v", path, fields)
				}
			}
		})
	}
}

// TestEnumsParse: every value of an enumeration parses.
func TestEnumsParse(t *testing.T) {
	for _, p := range Params() {
		for _, v := range p.Schema.Enum {
			if _, fields := parse(t, map[string]any{"html": "<p>x</p>", p.Name: v}); len(fields) > 0 {
				t.Errorf("%s: %v is refused: %v", p.Name, v, fields)
			}
		}
	}
}

// TestBoundsParse: the minimum and maximum of every number are accepted,
// and a value just outside them is refused naming the parameter.
func TestBoundsParse(t *testing.T) {
	others := map[string]string{"viewport_width": "viewport_height", "viewport_height": "viewport_width",
		"jumbo_max_width": "jumbo_max_height", "jumbo_max_height": "jumbo_max_width"}
	for _, p := range Params() {
		if p.Schema.Minimum == nil || p.Schema.Maximum == nil {
			continue
		}
		step := 1.0
		if p.Schema.Type == "number" {
			step = 0.01
		}
		for _, c := range []struct {
			v     float64
			valid bool
		}{{*p.Schema.Minimum, true}, {*p.Schema.Maximum, true}, {*p.Schema.Minimum - step, false}, {*p.Schema.Maximum + step, false}} {
			body := map[string]any{"html": "<p>x</p>", p.Name: c.v}
			if o, ok := others[p.Name]; ok {
				body[o] = 100
			}
			_, fields := parse(t, body)
			refused := slices.ContainsFunc(fields, func(f apierr.FieldError) bool { return f.Path == p.Name })
			if refused == c.valid {
				t.Errorf("%s = %v: refused %v, want %v (errors %v)", p.Name, c.v, refused, !c.valid, fields)
			}
		}
	}
}

// TestCoversParams: a request made of the table's examples parses, and
// sets every field of imageparams.Params: a parameter that Parse learns is
// missing from the table until it has a row here.
func TestCoversParams(t *testing.T) {
	body := map[string]any{}
	for _, p := range Params() {
		if len(p.Schema.Examples) > 0 {
			body[p.Name] = p.Schema.Examples[0]
			continue
		}
		switch p.Schema.Type {
		case "boolean":
			body[p.Name] = true
		case "string":
			body[p.Name] = p.Schema.Enum[len(p.Schema.Enum)-1]
		default:
			t.Fatalf("%s has neither an example nor a default sample", p.Name)
		}
	}
	// The sources exclude one another: html, then url, then a template.
	sources := []string{"html", "url", "template_id"}
	wantSource := map[string]string{"html": "HTML", "url": "URL", "template_id": "TemplateID"}
	for _, source := range sources {
		t.Run(source, func(t *testing.T) {
			req := map[string]any{}
			for k, v := range body {
				if !slices.Contains(sources, k) || k == source {
					req[k] = v
				}
			}
			params, fields := parse(t, req)
			if len(fields) > 0 {
				t.Fatalf("the table's examples do not parse: %v", fields)
			}
			v := reflect.ValueOf(params)
			for i := range v.NumField() {
				name := v.Type().Field(i).Name
				isSource := slices.Contains([]string{"HTML", "URL", "TemplateID"}, name)
				if isSource && name != wantSource[source] {
					continue
				}
				if v.Field(i).IsZero() {
					t.Errorf("imageparams.Params.%s is not set by any parameter of the table", name)
				}
			}
		})
	}
}

// TestCopies: what the package hands out is the caller's to change.
func TestCopies(t *testing.T) {
	s := Lookup("pdf_options")
	s.Description = "changed"
	s.Properties["scale"].Description = "changed"
	props, order := Properties(Everywhere)
	props["css"].Description = "changed"
	if Lookup("pdf_options").Description == "changed" || Lookup("pdf_options").Properties["scale"].Description == "changed" ||
		Lookup("css").Description == "changed" {
		t.Error("a change to a returned schema reached the table")
	}
	if len(order) != len(props) {
		t.Errorf("Properties: %d names for %d schemas", len(order), len(props))
	}
	defer func() {
		if recover() == nil {
			t.Error("Lookup of an unknown name did not panic")
		}
	}()
	Lookup("no_such_parameter")
}
