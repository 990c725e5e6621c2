package images

import (
	"context"
	"slices"
	"sync"

	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/imageparams/schema"
)

// requestFields are the fields a template render reads at its top level:
// the image creation parameters, and template_version.
var requestFields = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{"template_version": true}
	for _, p := range schema.Params() {
		m[p.Name] = true
	}
	return m
})

// checkTemplateFields refuses a template render (obj as the caller sent
// it, rendered from ref) with a top-level field that is no parameter but
// a variable of the template: its value belongs in template_values, and
// the render would leave the variable blank. Other unknown fields are
// ignored, as in any creation request.
func (h *Handler) checkTemplateFields(ctx context.Context, orgID string, obj *field.Object, ref *templateRef) error {
	if h.Templates == nil || ref == nil {
		return nil
	}
	stray := strayFields(obj)
	if len(stray) == 0 {
		return nil // the template is not parsed again
	}
	vars, err := h.Templates.Variables(ctx, orgID, ref.id, ref.version)
	if err != nil {
		return err
	}
	return variableFields(obj, stray, vars)
}

// strayFields are the top-level fields of obj a template render does not
// read.
func strayFields(obj *field.Object) []string {
	var stray []string
	for _, k := range obj.Keys() {
		if !requestFields()[k] {
			stray = append(stray, k)
		}
	}
	return stray
}

// variableFields refuses the stray fields of obj that are among vars, the
// sorted variables of the template it renders.
func variableFields(obj *field.Object, stray, vars []string) error {
	var errs field.Errors
	for _, k := range stray {
		if _, found := slices.BinarySearch(vars, k); found {
			errs.Add(obj.Path(k), "is a variable of this template: put it in template_values")
		}
	}
	return errs.Err()
}
