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
