package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/pictorhq/pictor/origin/imageparams/schema"
	"github.com/pictorhq/pictor/origin/perm"
)

// The templates pages: a list, a creation form, and each template's
// editor with its version history, a values form (one field a variable
// of the template, and the raw JSON of the same values), the signed URL
// for those values and the live preview's panel. Every action is its
// REST route: POST /v1/template, POST /v1/template/{id} (an edit, and a
// restore: an old version's content saved again), DELETE
// /v1/template/{id}, POST /v1/template/{id}/signed-url.

// templatesPerPage is how many templates a page of the list shows.
const templatesPerPage = 20

// templateView is a template version as the REST routes answer it.
type templateView struct {
	ID          string                     `json:"id"`
	Version     int                        `json:"version"`
	Name        string                     `json:"name"`
	Description string                     `json:"description"`
	HTML        string                     `json:"html"`
	CSS         string                     `json:"css"`
	RenderCount int64                      `json:"render_count"`
	Defaults    map[string]json.RawMessage `json:"render_defaults"`
	CreatedAt   string                     `json:"created_at"`
	UpdatedAt   string                     `json:"updated_at"`
}

// templatePage is a page of GET /v1/template (and every version of one,
// GET /v1/template/{id}).
type templatePage struct {
	Data       []templateView `json:"data"`
	Pagination struct {
		Next *string `json:"next_page_start"`
	} `json:"pagination"`
}

// can is an action the key may take, or the reason it may not.
type can struct {
	OK    bool
	Needs string
}

func canDo(st *state, p perm.Permission) can {
	if st.principal.Grant.Has(p) {
		return can{OK: true}
	}
	return can{Needs: lacks(p)}
}

type templateListData struct {
	Templates []templateView
	Denied    string
	Create    can
	Next      string
	First     bool
}

// listTemplates lists the organization's templates newest first, a page
// at a time, through GET /v1/template.
func (c *Console) listTemplates(w http.ResponseWriter, r *http.Request, st *state) {
	l := newListPage(r, templatesPerPage, "page_start")
	d := templateListData{Create: canDo(st, perm.TemplatesCreateUpdate), First: l.First}
	var list templatePage
	switch err := c.call(r, st, http.MethodGet, "/v1/template?"+l.Query.Encode(), nil, &list); {
	case isStatus(err, http.StatusForbidden):
		d.Denied = lacks(perm.TemplatesRead)
	case err != nil:
		c.failed(w, r, st, err)
		return
	default:
		d.Templates = list.Data
		d.Next = l.next("/console/templates", list.Pagination.Next)
	}
	c.render(w, r, http.StatusOK, "templates", page{Title: "Templates", Data: d, state: st})
}

// templateForm is the editor's form as shown: a version's content, or
// what was sent, with the REST validation messages by field.
type templateForm struct {
	Name, Description, HTML, CSS string
	Errors                       map[string]string
	Err                          string
	Options                      []option
}

// Error is the message of a field of the form, "" when it has none.
func (f templateForm) Error(name string) string { return f.Errors[name] }

// valueField is one variable of the values form.
type valueField struct {
	Name, Value string
	N           int
}

type templateData struct {
	ID        string // "" on the creation form
	Form      templateForm
	Save      can
	Delete    can
	Sign      can
	Versions  []templateView
	Latest    *templateView
	Viewing   *templateView // an old version, shown read-only
	Variables []valueField
	Values    string // the values' JSON
	ValuesErr string
	Format    string
	Pin       bool
	SignedURL string
	Saved     string // what the last action did
}

// Formats are the signed URL's formats.
func (templateData) Formats() []string { return []string{"png", "jpg", "webp", "pdf"} }

// ownFields are the editor's fields that are not render defaults.
var ownFields = map[string]bool{"html": true, "css": true, "name": true, "description": true}

// defaultOptions are the render defaults of the form, from the one
// parameter table (a template takes every option of schema.ForDefaults),
// valued from form. A boolean is a choice of default, true or false: a
// template's default may be either.
func defaultOptions(form map[string][]string, errs *apiError) []option {
	return formOptions(schema.ForDefaults, ownFields, true, form, errs)
}

// defaultsForm is a version's render defaults as the form's text.
func defaultsForm(defaults map[string]json.RawMessage) map[string][]string {
	out := map[string][]string{}
	for k, raw := range defaults {
		out[k] = []string{jsonText(raw)}
	}
	return out
}

// jsonText is a JSON value as a field shows it: a string as it is,
// anything else as its JSON.
func jsonText(raw json.RawMessage) string {
	var s string
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' && json.Unmarshal(t, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// formOf is the editor's form showing version v.
func formOf(v *templateView) templateForm {
	return templateForm{Name: v.Name, Description: v.Description, HTML: v.HTML, CSS: v.CSS, Options: defaultOptions(defaultsForm(v.Defaults), nil)}
}

// templateBody is the save request the form makes: its content and every
// render default set; a default that does not read as its kind is
// refused by the form itself, by field.
func templateBody(form map[string][]string) (map[string]any, *apiError) {
	body := map[string]any{}
	for _, f := range []string{"name", "description", "html", "css"} {
		body[f] = first(form, f)
	}
	if bad := setOptions(body, defaultOptions(form, nil), true); len(bad) > 0 {
		return nil, &apiError{Status: http.StatusBadRequest, Message: "Some render defaults are not valid.", Fields: bad}
	}
	return body, nil
}

// formError is the form showing the REST refusal e of what was sent.
func formError(form map[string][]string, e *apiError) templateForm {
	f := templateForm{Name: first(form, "name"), Description: first(form, "description"), HTML: first(form, "html"), CSS: first(form, "css"),
		Errors: map[string]string{}, Options: defaultOptions(form, e)}
	named := false
	for _, name := range []string{"name", "description", "html", "css"} {
		if m := e.field(name); m != "" {
			f.Errors[name], named = m, true
		}
	}
	for _, o := range f.Options {
		named = named || o.Error != ""
	}
	if !named {
		f.Err = e.Message
	}
	return f
}

// newTemplate is the creation form.
func (c *Console) newTemplate(w http.ResponseWriter, r *http.Request, st *state) {
	d := templateData{Form: templateForm{Options: defaultOptions(nil, nil)}, Save: canDo(st, perm.TemplatesCreateUpdate)}
	c.render(w, r, http.StatusOK, "template", page{Title: "New template", Data: d, state: st})
}

// createTemplate sends the form as POST /v1/template and opens the new
// template's editor.
func (c *Console) createTemplate(w http.ResponseWriter, r *http.Request, st *state) {
	body, ae := templateBody(r.PostForm)
	var saved struct {
		ID      string `json:"template_id"`
		Version int    `json:"template_version"`
	}
	var err error = ae
	if ae == nil {
		raw, _ := json.Marshal(body)
		err = c.call(r, st, http.MethodPost, "/v1/template", bytes.NewReader(raw), &saved)
	}
	if errors.As(err, &ae) && ae.Status < 500 && ae.Status != http.StatusForbidden {
		d := templateData{Form: formError(r.PostForm, ae), Save: canDo(st, perm.TemplatesCreateUpdate)}
		c.render(w, r, ae.Status, "template", page{Title: "New template", Data: d, state: st})
		return
	}
	if err != nil {
		c.failed(w, r, st, err)
		return
	}
	http.Redirect(w, r, "/console/templates/"+url.PathEscape(saved.ID)+"?saved="+strconv.Itoa(saved.Version), http.StatusSeeOther)
}

// loadTemplate fills d with the template's versions (GET
// /v1/template/{id}), its latest version and, when version is another
// one, that version to view; and the values form from the latest
// version's variables.
func (c *Console) loadTemplate(r *http.Request, st *state, id string, version int, d *templateData) error {
	var versions templatePage
	if err := c.call(r, st, http.MethodGet, "/v1/template/"+url.PathEscape(id), nil, &versions); err != nil {
		return err
	}
	if len(versions.Data) == 0 {
		return &apiError{Status: http.StatusNotFound, Message: "Template " + id + " not found"}
	}
	d.ID, d.Versions, d.Latest = id, versions.Data, &versions.Data[0]
	d.Save, d.Delete, d.Sign = canDo(st, perm.TemplatesCreateUpdate), canDo(st, perm.TemplatesDelete), canDo(st, perm.ImagesCreate)
	if version != 0 && version != d.Latest.Version {
		for i := range versions.Data {
			if versions.Data[i].Version == version {
				d.Viewing = &versions.Data[i]
			}
		}
		if d.Viewing == nil {
			return &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf("Template %s has no version %d", id, version)}
		}
	}
	var names []string
	if c.cfg.Variables != nil {
		var err error
		names, err = c.cfg.Variables(r.Context(), st.principal.Org.ID, id, d.Latest.Version)
		if err != nil {
			c.cfg.Logger.DebugContext(r.Context(), "console template variables not found", "template", id, "error", err)
		}
	}
	for i, n := range names {
		d.Variables = append(d.Variables, valueField{Name: n, N: i})
	}
	if d.Values == "" {
		seed := map[string]string{}
		for _, n := range names {
			seed[n] = ""
		}
		raw, _ := json.MarshalIndent(seed, "", "  ")
		d.Values = string(raw)
	}
	c.fillVariables(d)
	return nil
}

// fillVariables shows in each variable's field its value in d.Values.
func (c *Console) fillVariables(d *templateData) {
	var values map[string]json.RawMessage
	if json.Unmarshal([]byte(d.Values), &values) != nil {
		return
	}
	for i, v := range d.Variables {
		if raw, ok := values[v.Name]; ok {
			d.Variables[i].Value = jsonText(raw)
		}
	}
}

// showTemplate is a template's editor: its latest version, or
// ?version=N read-only.
func (c *Console) showTemplate(w http.ResponseWriter, r *http.Request, st *state) {
	version := 0
	if v := r.URL.Query().Get("version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			c.message(w, r, st, http.StatusBadRequest, "Bad Request", "The version is a positive integer.")
			return
		}
		version = n
	}
	var d templateData
	if err := c.loadTemplate(r, st, r.PathValue("id"), version, &d); err != nil {
		c.failed(w, r, st, err)
		return
	}
	q := r.URL.Query()
	if n := q.Get("saved"); n != "" {
		d.Saved = "Saved as version " + n + "."
		if from := q.Get("restored"); from != "" {
			d.Saved = "Version " + from + " restored as version " + n + "."
		}
	}
	d.Form = formOf(d.Latest)
	c.renderTemplate(w, r, st, http.StatusOK, &d)
}

func (c *Console) renderTemplate(w http.ResponseWriter, r *http.Request, st *state, status int, d *templateData) {
	title := d.Latest.Name
	if title == "" {
		title = "Template " + d.ID
	}
	c.render(w, r, status, "template", page{Title: title, Data: d, state: st})
}

// updateTemplate saves the editor through POST /v1/template/{id}.
func (c *Console) updateTemplate(w http.ResponseWriter, r *http.Request, st *state) {
	id := r.PathValue("id")
	body, ae := templateBody(r.PostForm)
	var saved struct {
		Version int `json:"template_version"`
	}
	var err error = ae
	if ae == nil {
		raw, _ := json.Marshal(body)
		err = c.call(r, st, http.MethodPost, "/v1/template/"+url.PathEscape(id), bytes.NewReader(raw), &saved)
	}
	if errors.As(err, &ae) && ae.Status < 500 && ae.Status != http.StatusForbidden && ae.Status != http.StatusNotFound {
		d := templateData{Values: r.PostFormValue("template_values")}
		if err := c.loadTemplate(r, st, id, 0, &d); err != nil {
			c.failed(w, r, st, err)
			return
		}
		d.Form = formError(r.PostForm, ae)
		c.renderTemplate(w, r, st, ae.Status, &d)
		return
	}
	if err != nil {
		c.failed(w, r, st, err)
		return
	}
	http.Redirect(w, r, "/console/templates/"+url.PathEscape(id)+"?saved="+strconv.Itoa(saved.Version), http.StatusSeeOther)
}

// restoreTemplate saves an old version's content (its name, description,
// html, css and every render default) again through POST
// /v1/template/{id}: the REST route makes it a new version (or replaces
// the latest one, when no image was made from it yet).
func (c *Console) restoreTemplate(w http.ResponseWriter, r *http.Request, st *state) {
	id := r.PathValue("id")
	version, err := strconv.Atoi(r.PostFormValue("version"))
	if err != nil || version < 1 {
		c.message(w, r, st, http.StatusBadRequest, "Bad Request", "Choose a version to restore.")
		return
	}
	var d templateData
	if err := c.loadTemplate(r, st, id, version, &d); err != nil {
		c.failed(w, r, st, err)
		return
	}
	old := d.Viewing
	if old == nil {
		old = d.Latest
	}
	body := map[string]any{"name": old.Name, "description": old.Description, "html": old.HTML, "css": old.CSS}
	for k, raw := range old.Defaults {
		body[k] = raw
	}
	raw, _ := json.Marshal(body)
	var saved struct {
		Version int `json:"template_version"`
	}
	if err := c.call(r, st, http.MethodPost, "/v1/template/"+url.PathEscape(id), bytes.NewReader(raw), &saved); err != nil {
		c.failed(w, r, st, err)
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/console/templates/%s?saved=%d&restored=%d", url.PathEscape(id), saved.Version, version), http.StatusSeeOther)
}

// deleteTemplate deletes the template through DELETE /v1/template/{id}.
func (c *Console) deleteTemplate(w http.ResponseWriter, r *http.Request, st *state) {
	if err := c.call(r, st, http.MethodDelete, "/v1/template/"+url.PathEscape(r.PathValue("id")), nil, nil); err != nil {
		c.failed(w, r, st, err)
		return
	}
	http.Redirect(w, r, "/console/templates", http.StatusSeeOther)
}

// formValues are the template values the editor's values form sends:
// the raw JSON (template_values), where a variable's field changed from
// what the JSON holds for it wins, as a string (or as the JSON object or
// array its text is). The form's script keeps both in step as the person
// types; without it, this rule decides.
func formValues(form url.Values) (map[string]json.RawMessage, string) {
	values := map[string]json.RawMessage{}
	if text := strings.TrimSpace(first(form, "template_values")); text != "" {
		if json.Unmarshal([]byte(text), &values) != nil || values == nil {
			return nil, "is not a JSON object"
		}
	}
	for key, vs := range form {
		name, ok := strings.CutPrefix(key, "value.")
		if !ok || len(vs) == 0 {
			continue
		}
		text := vs[len(vs)-1]
		if raw, held := values[name]; held && jsonText(raw) == text {
			continue
		}
		if !(text == "" && values[name] == nil) {
			values[name] = fieldValue(text)
		}
	}
	return values, ""
}

// fieldValue is a variable field's text as a value: a JSON object or
// array when it is one, else a string.
func fieldValue(text string) json.RawMessage {
	if t := strings.TrimSpace(text); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	raw, _ := json.Marshal(text)
	return raw
}

// signTemplate makes the signed URL of the saved template for the values
// form's values, through POST /v1/template/{id}/signed-url, and shows the
// editor again with it (and with what the person had typed).
func (c *Console) signTemplate(w http.ResponseWriter, r *http.Request, st *state) {
	id := r.PathValue("id")
	values, bad := formValues(r.PostForm)
	pretty, _ := json.MarshalIndent(values, "", "  ")
	d := templateData{Values: string(pretty), Format: r.PostFormValue("signed_format"), Pin: r.PostFormValue("signed_pin") != ""}
	if bad != "" {
		d.Values = r.PostFormValue("template_values")
	}
	if err := c.loadTemplate(r, st, id, 0, &d); err != nil {
		c.failed(w, r, st, err)
		return
	}
	d.Form = templateForm{Name: r.PostFormValue("name"), Description: r.PostFormValue("description"), HTML: r.PostFormValue("html"), CSS: r.PostFormValue("css"),
		Options: defaultOptions(r.PostForm, nil)}
	status := http.StatusOK
	if bad != "" {
		d.ValuesErr, status = bad, http.StatusBadRequest
		c.renderTemplate(w, r, st, status, &d)
		return
	}
	req := map[string]any{"template_values": values}
	if d.Format != "" {
		req["format"] = d.Format
	}
	if d.Pin {
		req["template_version"] = d.Latest.Version
	}
	raw, _ := json.Marshal(req)
	var signed struct {
		URL string `json:"url"`
	}
	err := c.call(r, st, http.MethodPost, "/v1/template/"+url.PathEscape(id)+"/signed-url", bytes.NewReader(raw), &signed)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status < 500 && ae.Status != http.StatusNotFound:
		d.ValuesErr, status = ae.Message, ae.Status
		for _, f := range ae.Fields {
			if f.Path == "template_values" || strings.HasPrefix(f.Path, "template_values.") {
				d.ValuesErr = f.Path + " " + f.Message
			}
		}
	case err != nil:
		c.failed(w, r, st, err)
		return
	default:
		d.SignedURL = signed.URL
	}
	c.renderTemplate(w, r, st, status, &d)
}

// Variables names a template version's variables (the names its html and
// css read from template_values): the template handler's Variables.
type Variables func(ctx context.Context, orgID, id string, version int) ([]string, error)
