package imageparams

import (
	"encoding/json"
	"net/url"

	"github.com/pictorhq/pictor/origin/contract/field"
)

// Merge lays over on top of base, for a batch variation over
// default_options: a field sent in over replaces base's whole field (objects
// such as headers or pdf_options are replaced, not merged), and a JSON null
// or an empty form value in over removes base's field. The result carries
// over's Prefix, so errors name the variation even for values inherited from
// base; parse default_options on its own first (with Prefix
// "default_options.") to blame those on it.
//
// Two JSON objects merge into a JSON object, two forms into a form. When one
// side is a form, JSON values become form values: strings as they are, other
// values as their JSON text, which Parse reads the way a form sends them.
//
// A template_id taken from the request path can be laid over the body the
// same way: Merge(body, field.FromJSON(map[string]json.RawMessage{"template_id": quoted})).
func Merge(base, over *field.Object) *field.Object {
	switch {
	case base == nil && over == nil:
		return field.FromJSON(nil)
	case base == nil:
		c := *over
		return &c
	case over == nil:
		c := *base
		return &c
	}
	var out *field.Object
	if !base.IsForm() && !over.IsForm() {
		m := map[string]json.RawMessage{}
		for _, k := range base.Keys() {
			if raw, ok := base.Raw(k); ok {
				m[k] = raw
			}
		}
		for _, k := range over.Keys() {
			if raw, ok := over.Raw(k); ok {
				m[k] = raw
			} else {
				delete(m, k)
			}
		}
		out = field.FromJSON(m)
	} else {
		v := formValues(base)
		for k, vs := range formValues(over) {
			v[k] = vs
		}
		for _, k := range over.Keys() {
			if !over.Present(k) { // JSON null
				delete(v, k)
			}
		}
		out = field.FromForm(v)
	}
	out.Prefix = over.Prefix
	out.Lenient = true
	return out
}

// formValues returns o's fields as form values (copied).
func formValues(o *field.Object) url.Values {
	v := url.Values{}
	for _, k := range o.Keys() {
		if o.IsForm() {
			v[k] = append([]string(nil), o.FormValues(k)...)
			continue
		}
		raw, ok := o.Raw(k)
		if !ok {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			v.Set(k, s)
		} else {
			v.Set(k, string(raw))
		}
	}
	return v
}
