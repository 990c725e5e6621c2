package openapi

import (
	"encoding/json"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/jsonschema-go/jsonschema"
)

// Schema helpers. Objects are closed (additionalProperties: false) unless
// opened with open: responses are exactly what the handlers write, and
// request bodies, whose unknown fields the API ignores, are opened.

func typed(t, description string) *openapi3.Schema {
	return &openapi3.Schema{Type: &openapi3.Types{t}, Description: description}
}

func str(description string) *openapi3.Schema { return typed(openapi3.TypeString, description) }

func boolean(description string) *openapi3.Schema { return typed(openapi3.TypeBoolean, description) }

func integer(min, max int64, description string) *openapi3.Schema {
	s := typed(openapi3.TypeInteger, description)
	lo, hi := float64(min), float64(max)
	s.Min, s.Max = &lo, &hi
	return s
}

// count is an integer without bounds: a number the server counts.
func count(description string) *openapi3.Schema {
	s := typed(openapi3.TypeInteger, description)
	zero := 0.0
	s.Min = &zero
	return s
}

func enum(description string, values ...string) *openapi3.Schema {
	s := str(description)
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

func timestamp(description string) *openapi3.Schema {
	return formatted("date-time", description+" (RFC 3339, UTC, milliseconds).")
}

func uuidString(description string) *openapi3.Schema {
	return formatted("uuid", description)
}

func uri(description string) *openapi3.Schema { return formatted("uri", description) }

// formatted is a string of the format.
func formatted(format, description string) *openapi3.Schema {
	s := str(description)
	s.Format = format
	return s
}

func withPattern(pattern string, s *openapi3.Schema) *openapi3.Schema {
	s.Pattern = pattern
	return s
}

func withLength(min, max uint64, s *openapi3.Schema) *openapi3.Schema {
	s.MinLength, s.MaxLength = bounds(min, max)
	return s
}

// bounds are a minimum and a maximum: no maximum when max is 0.
func bounds(min, max uint64) (uint64, *uint64) {
	if max == 0 {
		return min, nil
	}
	return min, &max
}

func withDefault(v any, s *openapi3.Schema) *openapi3.Schema {
	s.Default = v
	return s
}

func withExamples(s *openapi3.Schema, examples ...any) *openapi3.Schema {
	s.Examples = append(s.Examples, examples...)
	return s
}

func array(description string, items *openapi3.Schema) *openapi3.Schema {
	s := typed(openapi3.TypeArray, description)
	s.Items = openapi3.NewSchemaRef("", items)
	return s
}

func arrayOf(description string, items *openapi3.SchemaRef) *openapi3.Schema {
	s := typed(openapi3.TypeArray, description)
	s.Items = items
	return s
}

func withItems(min, max uint64, s *openapi3.Schema) *openapi3.Schema {
	s.MinItems, s.MaxItems = bounds(min, max)
	return s
}

// stringMap is an object of string values.
func stringMap(description string) *openapi3.Schema {
	s := typed(openapi3.TypeObject, description)
	s.AdditionalProperties = openapi3.AdditionalProperties{Schema: openapi3.NewSchemaRef("", str(""))}
	return s
}

// nullable adds null to the values s allows.
func nullable(s *openapi3.Schema) *openapi3.Schema {
	if !s.Type.Includes(openapi3.TypeNull) {
		types := append(openapi3.Types{}, (*s.Type)...)
		types = append(types, openapi3.TypeNull)
		s.Type = &types
	}
	if s.Enum != nil {
		s.Enum = append(s.Enum, nil)
	}
	return s
}

// member is a property of an object.
type member struct {
	name     string
	schema   *openapi3.SchemaRef
	required bool
}

func req(name string, s *openapi3.Schema) member {
	return member{name, openapi3.NewSchemaRef("", s), true}
}
func opt(name string, s *openapi3.Schema) member {
	return member{name, openapi3.NewSchemaRef("", s), false}
}
func reqRef(name string, r *openapi3.SchemaRef) member {
	return member{name, r, true}
}
func optRef(name string, r *openapi3.SchemaRef) member {
	return member{name, r, false}
}

// object is a closed object of the members.
func object(description string, members ...member) *openapi3.Schema {
	s := typed(openapi3.TypeObject, description)
	s.Properties = openapi3.Schemas{}
	for _, m := range members {
		if _, dup := s.Properties[m.name]; dup {
			panic("openapi: property " + m.name + " twice")
		}
		s.Properties[m.name] = m.schema
		if m.required {
			s.Required = append(s.Required, m.name)
		}
	}
	no := false
	s.AdditionalProperties = openapi3.AdditionalProperties{Has: &no}
	return s
}

// open lets s hold properties it does not list (the API ignores them).
func open(s *openapi3.Schema) *openapi3.Schema {
	s.AdditionalProperties = openapi3.AdditionalProperties{}
	return s
}

// fromJSONSchema converts a schema of the shared parameter table.
func fromJSONSchema(js *jsonschema.Schema) *openapi3.Schema {
	b, err := json.Marshal(js)
	if err != nil {
		panic(fmt.Sprintf("openapi: marshal parameter schema: %v", err))
	}
	s := openapi3.NewSchema()
	if err := json.Unmarshal(b, s); err != nil {
		panic(fmt.Sprintf("openapi: convert parameter schema: %v", err))
	}
	return s
}

// formSchema is the form-encoded twin of an object schema of a JSON body:
// every value is text. Numbers and booleans keep their schema (a form
// writes them as text, which validators read by the schema); arrays of
// scalars are repeated fields; objects, and arrays of objects, are
// JSON-encoded strings. Null is not a form value.
func formSchema(js *openapi3.Schema, description string) *openapi3.Schema {
	s := *js
	s.Description = description
	s.Properties = openapi3.Schemas{}
	for name, p := range js.Properties {
		s.Properties[name] = openapi3.NewSchemaRef("", formValue(p.Value))
	}
	s.Examples = nil
	return &s
}

func formValue(v *openapi3.Schema) *openapi3.Schema {
	c := *v
	if c.Type != nil && c.Type.Includes(openapi3.TypeNull) {
		c.Type = &openapi3.Types{}
		for _, t := range *v.Type {
			if t != openapi3.TypeNull {
				*c.Type = append(*c.Type, t)
			}
		}
		var values []any
		for _, e := range v.Enum {
			if e != nil {
				values = append(values, e)
			}
		}
		c.Enum = values
	}
	isObject := c.Type.Is(openapi3.TypeObject)
	objectItems := c.Type.Is(openapi3.TypeArray) && c.Items != nil && c.Items.Value != nil && c.Items.Value.Type.Is(openapi3.TypeObject)
	if !isObject && !objectItems {
		return &c
	}
	enc := str(v.Description + " In a form: JSON-encoded.")
	enc.ContentMediaType = "application/json"
	for _, e := range v.Examples {
		b, err := json.Marshal(e)
		if err != nil {
			panic(err)
		}
		enc.Examples = append(enc.Examples, string(b))
	}
	return enc
}
