package template

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
)

// DraftField is the field of a preview request (POST /v1/image/preview)
// that holds a template not saved: what POST /v1/template takes.
const DraftField = "template"

// ExpandDraft turns a request whose DraftField holds a template not saved
// into a plain HTML request, as Expand does for a saved version: the
// draft is validated as a save is (its errors name template.<field>),
// evaluated with template_values in the sandbox, and laid under the
// request's options. It also returns the names the draft reads from
// template_values (as Variables does for a saved version). Nothing is
// stored.
func (h *Handler) ExpandDraft(ctx context.Context, obj *field.Object) (*field.Object, []string, error) {
	path := obj.Path(DraftField)
	for _, k := range []string{"template_id", "template_version", "html", "url"} {
		if obj.Present(k) {
			return nil, nil, apierr.Field(path, "cannot be combined with %s: a draft template holds its own html (template.html)", k)
		}
	}
	raw, ok := obj.Raw(DraftField)
	if ok && obj.IsForm() {
		vals := obj.FormValues(DraftField)
		raw = json.RawMessage(vals[len(vals)-1])
	}
	var m map[string]json.RawMessage
	if !ok || json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, nil, apierr.Field(path, "must be an object: the html, css and render defaults of a template, as POST /v1/template takes them")
	}
	var errs field.Errors
	values := templateValues(&errs, obj)
	v, err := h.parseVersion(ctx, field.FromJSON(m))
	if err != nil {
		var ae *apierr.Error
		if !errors.As(err, &ae) || len(ae.Fields) == 0 {
			return nil, nil, err
		}
		for _, f := range ae.Fields {
			errs.Add(path+"."+f.Path, "%s", f.Message)
		}
	}
	if err := errs.Err(); err != nil {
		return nil, nil, err
	}
	out, err := h.evaluate(ctx, obj, &v, values)
	if err != nil {
		return nil, nil, err
	}
	return out, h.variables(&v), nil
}
