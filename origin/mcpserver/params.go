package mcpserver

import (
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pictorhq/pictor/origin/imageparams/schema"
)

// use says which parameter sets an image creation parameter belongs to:
// the sets of the shared table (origin/imageparams/schema), named for the
// tools that offer them.
type use = schema.Use

const (
	forHTML     = schema.ForHTML     // create_image
	forURL      = schema.ForURL      // create_url_image
	forTemplate = schema.ForTemplate // create_templated_image (overrides of the template's defaults)
	forBatch    = schema.ForBatch    // create_batch_images: default_options and each variation
	forDefaults = schema.ForDefaults // create_template, update_template: render defaults
)

// imageProperties returns the properties of the parameters in u, in the
// table's order.
func imageProperties(u use) (map[string]*jsonschema.Schema, []string) {
	return schema.Properties(u)
}

// imageParam returns the table's schema of a parameter.
func imageParam(name string) *jsonschema.Schema { return schema.Lookup(name) }

// Schema helpers.

func str(description string, example any) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: description, Examples: examples(example)}
}

func integer(min, max int64, description string, example any) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Description: description, Minimum: jsonschema.Ptr(float64(min)),
		Maximum: jsonschema.Ptr(float64(max)), Examples: examples(example)}
}

func boolean(description string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: description}
}

func enum(description string, values ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Description: description}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

func stringArray(description string, example any) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Description: description, Items: &jsonschema.Schema{Type: "string"},
		Examples: examples(example)}
}

func nullable(s *jsonschema.Schema) *jsonschema.Schema {
	s.Types, s.Type = []string{s.Type, "null"}, ""
	return s
}

func withFormat(format string, s *jsonschema.Schema) *jsonschema.Schema {
	s.Format = format
	return s
}

func withPattern(pattern string, s *jsonschema.Schema) *jsonschema.Schema {
	s.Pattern = pattern
	return s
}

func withMaxLength(n int, s *jsonschema.Schema) *jsonschema.Schema {
	s.MaxLength = jsonschema.Ptr(n)
	return s
}

func examples(v any) []any {
	if v == nil {
		return nil
	}
	return []any{v}
}
