package template

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/resource"
	"github.com/pictorhq/pictor/origin/respond"
	"github.com/pictorhq/pictor/wasm"
)

// Field limits of compat.md.
const (
	MaxName        = 64
	MaxDescription = 1024
	maxBody        = imageparams.MaxHTMLBytes + imageparams.MaxCSSBytes + 1<<20
)

// own are the template fields that are not render defaults.
var own = map[string]bool{"html": true, "css": true, "name": true, "description": true, "template_id": true, "template_values": true}

// Handler serves /v1/template and expands templates for image creation.
type Handler struct {
	Store   *Store
	Engine  *wasm.Engine
	Cursors cursor.Codec
	// OnChange runs after a template got a new version or was deleted:
	// edges drop images of its signed URLs, which name no version.
	OnChange func(ctx context.Context, id string) error
}

// Saved is the answer to a save.
type Saved struct {
	TemplateID      string `json:"template_id"`
	TemplateVersion int    `json:"template_version"`
}

// parseVersion validates a save request into a Version.
func (h *Handler) parseVersion(ctx context.Context, o *field.Object) (Version, error) {
	var errs field.Errors
	var v Version
	html, ok := o.String(&errs, "html")
	if !ok && !errs.Any() {
		errs.Add("html", "is required")
	}
	v.HTML = html
	v.CSS, _ = o.String(&errs, "css")
	if name, ok := o.String(&errs, "name"); ok {
		if n := utf8.RuneCountInString(name); n > MaxName {
			errs.Add("name", "must be at most %d characters", MaxName)
		}
		v.Name = name
	}
	if desc, ok := o.String(&errs, "description"); ok {
		if n := utf8.RuneCountInString(desc); n > MaxDescription {
			errs.Add("description", "must be at most %d characters", MaxDescription)
		}
		v.Description = desc
	}
	if len(v.HTML) > imageparams.MaxHTMLBytes {
		errs.Add("html", "must be at most %d bytes", imageparams.MaxHTMLBytes)
	}
	// Render defaults: every other field, validated as creation parameters.
	defaults := map[string]json.RawMessage{}
	for _, k := range o.Keys() {
		if own[k] {
			continue
		}
		if raw, ok := o.Raw(k); ok {
			defaults[k] = raw
		}
	}
	do := field.FromJSON(defaults)
	if o.IsForm() {
		do = field.FromForm(formSubset(o))
	}
	if _, err := imageparams.Parse(do, imageparams.Options{}); err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			for _, f := range ae.Fields {
				errs.Add(f.Path, "%s", f.Message)
			}
		}
	}
	if errs.Any() {
		return v, errs.Err()
	}
	v.Defaults, _ = json.Marshal(defaults)
	for _, part := range []struct{ name, text string }{{"html", v.HTML}, {"css", v.CSS}} {
		if part.text == "" {
			continue
		}
		if err := h.Engine.Check(ctx, part.text); err != nil {
			return v, templateError(part.name, err)
		}
		// Parsed again in the host, now that the sandbox has bounded it,
		// for the helpers it calls: one the sandbox lacks would fail
		// every render that reaches it.
		out, err := h.Engine.Outline(part.text)
		if err != nil {
			return v, templateError(part.name, err)
		}
		if len(out.UnknownHelpers) > 0 {
			errs.Add(part.name, "%s", unknownHelpers(out.UnknownHelpers))
		}
	}
	return v, errs.Err()
}

// maxNamedHelpers bounds the unknown helpers a refusal names.
const maxNamedHelpers = 3

// unknownHelpers says which helpers a template calls that the sandbox
// does not provide, each at its first call, and which it provides.
func unknownHelpers(calls []wasm.HelperCall) string {
	seen := map[string]bool{}
	var named []string
	more := 0
	for _, c := range calls {
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		if len(named) == maxNamedHelpers {
			more++
			continue
		}
		named = append(named, fmt.Sprintf("unknown helper %q on line %d, column %d", c.Name, c.Line, c.Column))
	}
	msg := strings.Join(named, "; ")
	if more > 0 {
		msg += fmt.Sprintf(" (and %d more)", more)
	}
	return msg + ": templates have only the built-in Handlebars helpers (" + strings.Join(wasm.Helpers(), ", ") + ")"
}

// Variables returns the names a template version's html and css read
// from the top level of template_values (wasm.Outline), sorted. A part
// the host cannot outline (saved under another parser) adds none: it
// renders as it did.
func (h *Handler) Variables(ctx context.Context, orgID, id string, version int) ([]string, error) {
	_, v, err := h.Store.Version(ctx, orgID, id, version)
	if err != nil {
		return nil, notFound(id, err)
	}
	return h.variables(v), nil
}

// variables are the names v's html and css read from the top level of
// template_values, sorted (Variables).
func (h *Handler) variables(v *Version) []string {
	var names []string
	for _, text := range []string{v.HTML, v.CSS} {
		if text == "" {
			continue
		}
		out, err := h.Engine.Outline(text)
		if err != nil {
			slog.Debug("template not outlined", "template", v.TemplateID, "version", v.Version, "error", err)
			continue
		}
		names = append(names, out.Variables...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func formSubset(o *field.Object) map[string][]string {
	out := map[string][]string{}
	for _, k := range o.Keys() {
		if !own[k] {
			out[k] = o.FormValues(k)
		}
	}
	return out
}

// templateError maps a sandbox error to the answer: the template's fault
// is a 400 naming the field.
func templateError(path string, err error) error {
	var se *wasm.SyntaxError
	switch {
	case errors.As(err, &se):
		return apierr.Field(path, "line %d, column %d: %s", se.Line, se.Column, se.Message)
	case errors.Is(err, wasm.ErrGuest), errors.Is(err, wasm.ErrClosed):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return apierr.Field(path, "%v", err)
}

// parse reads and validates a save request.
func (h *Handler) parse(w http.ResponseWriter, r *http.Request) (Version, error) {
	o, err := field.DecodeAny(w, r, maxBody)
	if err != nil {
		return Version{}, err
	}
	return h.parseVersion(r.Context(), o)
}

// Create handles POST /v1/template.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	v, err := h.parse(w, r)
	if err != nil {
		return err
	}
	plan := p.Org.PlanInfo()
	t, saved, err := h.Store.Create(r.Context(), p.Org.ID, plan.Templates, v)
	if errors.Is(err, ErrLimit) {
		s := ""
		if plan.Templates != 1 {
			s = "s"
		}
		e := apierr.New(http.StatusTooManyRequests, "The %s plan is limited to %d template%s", plan.Name, plan.Templates, s)
		e.Title = "Plan limit exceeded"
		err = e
	}
	if err != nil {
		return err
	}
	respond.JSON(w, r, http.StatusCreated, Saved{TemplateID: t.ID, TemplateVersion: saved.Version})
	return nil
}

// Update handles POST /v1/template/{id}: a new version, or the unrendered
// latest version replaced.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	id := r.PathValue("id")
	v, err := h.parse(w, r)
	if err != nil {
		return err
	}
	saved, err := h.Store.Update(r.Context(), p.Org.ID, id, v)
	if err == nil {
		err = resource.Notify(r.Context(), h.OnChange, id)
	}
	if err != nil {
		return notFound(id, err)
	}
	respond.JSON(w, r, http.StatusOK, Saved{TemplateID: id, TemplateVersion: saved.Version})
	return nil
}

func notFound(id string, err error) error {
	if errors.Is(err, ErrNotFound) {
		return apierr.NotFound("Template %s not found", id)
	}
	return err
}

// View is a template version in API answers.
type View struct {
	ID                   string   `json:"id"`
	Version              int      `json:"version"`
	Name                 string   `json:"name"`
	Description          string   `json:"description"`
	HTML                 string   `json:"html"`
	CSS                  string   `json:"css"`
	DeviceScale          *float64 `json:"device_scale"`
	GoogleFonts          *string  `json:"google_fonts"`
	MsDelay              *int64   `json:"ms_delay"`
	MaxWaitMs            *int64   `json:"max_wait_ms"`
	RenderWhenReady      bool     `json:"render_when_ready"`
	ViewportWidth        *int64   `json:"viewport_width"`
	ViewportHeight       *int64   `json:"viewport_height"`
	ColorScheme          *string  `json:"color_scheme"`
	Timezone             *string  `json:"timezone"`
	StorageDestinationID *string  `json:"storage_destination_id"`
	RenderCount          int64    `json:"render_count"`
	// RenderDefaults are every render default as saved: the fields above
	// show some of them; a client that saves a version again (the
	// console's editor, a restore) keeps the others with this.
	RenderDefaults json.RawMessage `json:"render_defaults"`
	resource.Stamps
}

func view(v *Version) View {
	out := View{ID: v.TemplateID, Version: v.Version, Name: v.Name, Description: v.Description, HTML: v.HTML, CSS: v.CSS,
		RenderCount: v.RenderCount, RenderDefaults: json.RawMessage("{}"), Stamps: resource.NewStamps(v.CreatedAt, v.UpdatedAt)}
	var errs field.Errors
	o := field.FromJSON(nil)
	var m map[string]json.RawMessage
	if json.Unmarshal(v.Defaults, &m) == nil && m != nil {
		o = field.FromJSON(m)
		out.RenderDefaults = v.Defaults
	}
	o.Lenient = true
	if f, ok := o.Float(&errs, "device_scale", 0, 100); ok {
		out.DeviceScale = &f
	}
	if s, ok := o.String(&errs, "google_fonts"); ok {
		out.GoogleFonts = &s
	}
	if n, ok := o.Int(&errs, "ms_delay", 0, 1<<40); ok {
		out.MsDelay = &n
	}
	if n, ok := o.Int(&errs, "max_wait_ms", 0, 1<<40); ok {
		out.MaxWaitMs = &n
	}
	out.RenderWhenReady, _ = o.Bool(&errs, "render_when_ready")
	if n, ok := o.Int(&errs, "viewport_width", 0, 1<<40); ok {
		out.ViewportWidth = &n
	}
	if n, ok := o.Int(&errs, "viewport_height", 0, 1<<40); ok {
		out.ViewportHeight = &n
	}
	if s, ok := o.String(&errs, "color_scheme"); ok {
		out.ColorScheme = &s
	}
	if s, ok := o.String(&errs, "timezone"); ok {
		out.Timezone = &s
	}
	if s, ok := o.String(&errs, "storage_destination_id"); ok {
		out.StorageDestinationID = &s
	}
	return out
}

// List handles GET /v1/template.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	q := r.URL.Query()
	var errs field.Errors
	count := 10
	if vs, ok := q["count"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(vs[len(vs)-1]))
		if err != nil || n < 1 || n > 100 {
			errs.Add("count", "must be an integer between 1 and 100")
		}
		count = n
	}
	after := ""
	scope := "templates/" + p.Org.ID
	if tok := q.Get("page_start"); tok != "" {
		pos, err := h.Cursors.Decode(scope, tok)
		if err != nil {
			errs.Add("page_start", "is not a cursor issued by this API")
		}
		after = pos
	}
	if err := errs.Err(); err != nil {
		return err
	}
	versions, more, err := h.Store.List(r.Context(), p.Org.ID, after, count)
	if err != nil {
		return err
	}
	respond.JSON(w, r, http.StatusOK, cursor.NewPage(h.Cursors, scope, versions, more, view,
		func(v *Version) string { return v.TemplateID }))
	return nil
}

// Versions handles GET /v1/template/{id}.
func (h *Handler) Versions(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	id := r.PathValue("id")
	versions, err := h.Store.Versions(r.Context(), p.Org.ID, id)
	if err != nil {
		return notFound(id, err)
	}
	respond.JSON(w, r, http.StatusOK, cursor.NewPage(h.Cursors, "", versions, false, view, nil))
	return nil
}

// Delete handles DELETE /v1/template/{id}.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	id := r.PathValue("id")
	err := h.Store.Delete(r.Context(), p.Org.ID, id)
	if err == nil {
		err = resource.Notify(r.Context(), h.OnChange, id)
	}
	if err != nil {
		return notFound(id, err)
	}
	respond.Empty(w, http.StatusNoContent)
	return nil
}

// Expand turns an image request that names a template into a plain HTML
// request: the version's render defaults under the request's options, and
// the html and css evaluated with template_values in the sandbox. pathID
// and pathVersion come from /v1/image/{template_id}[/{template_version}].
// It returns the expanded request and the version used.
func (h *Handler) Expand(ctx context.Context, orgID string, obj *field.Object, pathID string, pathVersion int) (*field.Object, string, int, error) {
	out, v, err := h.expand(ctx, orgID, obj, pathID, pathVersion)
	if err != nil {
		return nil, "", 0, err
	}
	return out, v.TemplateID, v.Version, nil
}

// CountRenders counts images made from a template version.
func (h *Handler) CountRenders(ctx context.Context, id string, version int, n int64) error {
	return h.Store.CountRenders(ctx, id, version, n)
}

// Owner returns the organization a template belongs to.
func (h *Handler) Owner(ctx context.Context, id string) (string, error) {
	t, err := h.Store.rs.Load(ctx, h.Store.kv, id)
	if err != nil {
		return "", err
	}
	return t.OrgID, nil
}

func (h *Handler) expand(ctx context.Context, orgID string, obj *field.Object, pathID string, pathVersion int) (*field.Object, *Version, error) {
	var errs field.Errors
	id := pathID
	if id == "" {
		id, _ = obj.String(&errs, "template_id")
	}
	version := pathVersion
	if version == 0 {
		if n, ok := obj.Int(&errs, "template_version", 1, 1<<31); ok {
			version = int(n)
		}
	}
	values := templateValues(&errs, obj)
	if err := errs.Err(); err != nil {
		return nil, nil, err
	}
	_, v, err := h.Store.Version(ctx, orgID, id, version)
	if err != nil {
		if version != 0 && errors.Is(err, ErrNotFound) {
			return nil, nil, apierr.NotFound("Template %s has no version %d", id, version)
		}
		return nil, nil, notFound(id, err)
	}
	out, err := h.evaluate(ctx, obj, v, values)
	return out, v, err
}

// evaluate renders version v with values in the sandbox and lays the
// result, under obj's options, over v's render defaults.
func (h *Handler) evaluate(ctx context.Context, obj *field.Object, v *Version, values []byte) (*field.Object, error) {
	html, err := h.Engine.Render(ctx, v.HTML, values)
	if err != nil {
		return nil, templateError(obj.Path("template_values"), err)
	}
	css := v.CSS
	if css != "" {
		if css, err = h.Engine.Render(ctx, v.CSS, values); err != nil {
			return nil, templateError(obj.Path("template_values"), err)
		}
	}
	var defaults map[string]json.RawMessage
	json.Unmarshal(v.Defaults, &defaults)
	base := field.FromJSON(defaults)
	merged := imageparams.Merge(base, stripTemplate(obj))
	set := map[string]json.RawMessage{}
	set["html"], _ = json.Marshal(html)
	if css != "" {
		set["css"], _ = json.Marshal(css)
	}
	out := imageparams.Merge(merged, field.FromJSON(set))
	out.Prefix = obj.Prefix
	return out, nil
}

// templateValues returns obj's template_values ({} when not sent), or
// adds its error to errs.
func templateValues(errs *field.Errors, obj *field.Object) []byte {
	values := []byte("{}")
	if raw, ok := obj.Raw("template_values"); ok {
		values = raw
		if obj.IsForm() {
			values = []byte(obj.FormValues("template_values")[len(obj.FormValues("template_values"))-1])
		}
		var m map[string]any
		if json.Unmarshal(values, &m) != nil || m == nil {
			errs.Add(obj.Path("template_values"), "must be a JSON object")
		}
	}
	return values
}

// stripTemplate drops the fields that select the template from a request.
// A JSON null stays (as an empty form value does): laid over the
// template's defaults by imageparams.Merge, it removes the default.
func stripTemplate(o *field.Object) *field.Object {
	if o.IsForm() {
		v := formSubset(o)
		delete(v, DraftField)
		for _, k := range []string{"html", "css", "name", "description"} {
			if vals := o.FormValues(k); vals != nil {
				v[k] = vals
			}
		}
		out := field.FromForm(v)
		out.Prefix = o.Prefix
		return out
	}
	m := map[string]json.RawMessage{}
	for _, k := range o.Keys() {
		if k == "template_id" || k == "template_values" || k == "template_version" || k == DraftField {
			continue
		}
		raw, ok := o.Raw(k) // not ok: null, since k is among the keys
		if !ok {
			raw = json.RawMessage("null")
		}
		m[k] = raw
	}
	out := field.FromJSON(m)
	out.Prefix = o.Prefix
	return out
}
