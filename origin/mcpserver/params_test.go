package mcpserver

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/ogconfig"
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

// TestImageSchemaNamesParse: every property of the parameter table (and
// of pdf_options) is one imageparams.Parse reads: a value of the wrong type
// under that name is refused naming it.
func TestImageSchemaNamesParse(t *testing.T) {
	for _, p := range imageParams {
		t.Run(p.name, func(t *testing.T) {
			_, fields := parse(t, map[string]any{p.name: wrongType(p.schema)})
			if !slices.ContainsFunc(fields, func(f apierr.FieldError) bool { return f.Path == p.name }) {
				t.Fatalf("Parse does not read %s: errors %v", p.name, fields)
			}
			for name, sub := range p.schema.Properties {
				_, fields := parse(t, map[string]any{p.name: map[string]any{name: wrongType(sub)}})
				path := p.name + "." + name
				if !slices.ContainsFunc(fields, func(f apierr.FieldError) bool { return f.Path == path }) {
					t.Fatalf("Parse does not read %s: errors %v", path, fields)
				}
			}
		})
	}
}

// TestImageSchemaCoversParams: a request made of the table's examples
// parses, and sets every field of imageparams.Params: a parameter that
// Parse learns is missing from the table until it has a row here.
func TestImageSchemaCoversParams(t *testing.T) {
	body := map[string]any{}
	for _, p := range imageParams {
		if len(p.schema.Examples) > 0 {
			body[p.name] = p.schema.Examples[0]
			continue
		}
		switch p.schema.Type {
		case "boolean":
			body[p.name] = true
		case "string":
			body[p.name] = p.schema.Enum[len(p.schema.Enum)-1]
		default:
			t.Fatalf("%s has neither an example nor a default sample", p.name)
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

// TestImageToolSchemas: the image tools offer the table's parameters, and
// between them every one.
func TestImageToolSchemas(t *testing.T) {
	byName := map[string]*tool{}
	for _, tl := range tools() {
		byName[tl.name] = tl
	}
	offered := map[string]bool{}
	own := []string{"include_image", "template_version"}
	check := func(where string, s *jsonschema.Schema) {
		for name := range s.Properties {
			if slices.Contains(own, name) {
				continue
			}
			if !slices.ContainsFunc(imageParams, func(p param) bool { return p.name == name }) {
				t.Errorf("%s offers %s, which is not in the parameter table", where, name)
			}
			offered[name] = true
		}
		if len(s.PropertyOrder) != len(s.Properties) {
			t.Errorf("%s: property order %v does not list every property", where, s.PropertyOrder)
		}
	}
	for _, name := range []string{"create_image", "create_url_image", "create_templated_image"} {
		check(name, byName[name].input)
	}
	batch := byName["create_batch_images"].input
	check("create_batch_images default_options", batch.Properties["default_options"])
	check("create_batch_images variations", batch.Properties["variations"].Items)
	for _, p := range imageParams {
		if !offered[p.name] {
			t.Errorf("no image tool offers %s", p.name)
		}
	}
	if got := byName["create_image"].input.Required; !slices.Equal(got, []string{"html"}) {
		t.Errorf("create_image requires %v", got)
	}
	if got := byName["create_url_image"].input.Required; !slices.Equal(got, []string{"url"}) {
		t.Errorf("create_url_image requires %v", got)
	}
	// OG default_options take exactly the options ogconfig accepts.
	og := byName["create_og_config"].input.Properties["content"].Properties["default_options"]
	var names []string
	for name := range og.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(ogconfig.OptionNames))
	if !slices.Equal(names, want) {
		t.Errorf("OG default_options offer %v, ogconfig accepts %v", names, want)
	}
	// Every schema marshals (jsonschema checks its own rules).
	for _, tl := range tools() {
		if _, err := json.Marshal(tl.mcpTool()); err != nil {
			t.Errorf("%s: %v", tl.name, err)
		}
		if !strings.Contains(tl.description, "Needs "+string(tl.permission)) {
			t.Errorf("%s: the description does not say it needs %s", tl.name, tl.permission)
		}
	}
}
