package ogconfig

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/resource"
	"github.com/pictorhq/pictor/origin/respond"
)

// maxBody bounds a request: the largest default_options.css plus room for
// every other field.
const maxBody = imageparams.MaxCSSBytes + 1<<20

// TimeFormat is how answers write timestamps: UTC, milliseconds (as every
// management resource).
const TimeFormat = resource.TimeFormat

// Templates checks that an organization holds a template.
type Templates interface {
	// Exists returns nil when the organization has the template and, when
	// version is not 0, that version of it; else an error wrapping
	// ErrTemplateNotFound (or any other failure).
	Exists(orgID, templateID string, version int) error
}

// TemplatesFunc adapts a function to Templates.
type TemplatesFunc func(orgID, templateID string, version int) error

// Exists implements Templates.
func (f TemplatesFunc) Exists(orgID, templateID string, version int) error {
	return f(orgID, templateID, version)
}

var _ Templates = TemplatesFunc(nil)

// Handler serves /v1/og-configs.
type Handler struct {
	Store   *Store
	Cursors cursor.Codec
	// Templates checks the template of templated configurations; nil
	// refuses them (404).
	Templates Templates
	// AllowPrivate accepts base_url hosts that are loopback or private
	// address literals (--allow-private-urls).
	AllowPrivate bool
	// OnChange runs after an update and after a deletion, before the
	// answer: the edges drop the configuration's OG images
	// (contract.OGConfigTag). If it fails the change is kept and the
	// request answers 500, as for templates.
	OnChange func(ctx context.Context, cfg *Config) error
	// Refresher reads a page again on demand (POST .../refresh with a
	// path); nil answers such a refresh 404.
	Refresher Refresher
	// OnRefresh runs after a refresh, before the answer, when the edges
	// must drop what they hold: the page's OG images when its identity
	// changed (path set), or every OG image of the configuration (path
	// ""). If it fails the refresh stands and the answer is 500, as for
	// OnChange.
	OnRefresh func(ctx context.Context, cfg *Config, path string) error
	// PublicURL is the base of the OG image URL a refresh answers.
	PublicURL string
	// Previewer reads a page for a preview (GET .../preview); nil answers
	// a preview 404.
	Previewer Previewer
}

// MappingView is a template_values_mapping entry in answers.
type MappingView struct {
	TemplateKey string `json:"template_key"`
	MetaKey     string `json:"meta_key,omitempty"`
	Fallback    string `json:"fallback,omitempty"`
}

// View is the JSON form of a configuration.
type View struct {
	ID                      string                     `json:"id"`
	DomainID                string                     `json:"domain_id"`
	ConfigType              ConfigType                 `json:"config_type"`
	Name                    string                     `json:"name"`
	Description             string                     `json:"description"`
	BaseURL                 string                     `json:"base_url"`
	Enabled                 bool                       `json:"enabled"`
	RefreshIntervalS        int64                      `json:"refresh_interval_s"`
	OptimizationMode        OptimizationMode           `json:"optimization_mode"`
	ExtractValues           bool                       `json:"extract_values"`
	DefaultOptions          map[string]json.RawMessage `json:"default_options"`
	TemplateID              *string                    `json:"template_id"`
	TemplateVersion         *int                       `json:"template_version"`
	TemplateValuesMapping   []MappingView              `json:"template_values_mapping"`
	Headers                 map[string]string          `json:"headers"`
	AdditionalHeaderOrigins []string                   `json:"additional_header_origins"`
	MaxNewImagesPerDay      *int64                     `json:"max_new_images_per_day"`
	MaxNewImagesPerPeriod   *int64                     `json:"max_new_images_per_period"`
	Limits                  LimitsView                 `json:"limits"`
	resource.Stamps
}

// LimitsView is the read-only "limits" of an answer: the caps in force on
// new images (max_new_images_* when set, else the plan's defaults) and
// what was counted against them, with the organization's OG share.
type LimitsView struct {
	NewImagesPerDay                     int64 `json:"new_images_per_day"`
	NewImagesPerPeriod                  int64 `json:"new_images_per_period"`
	UsedToday                           int64 `json:"used_today"`
	UsedThisPeriod                      int64 `json:"used_this_period"`
	OrganizationOGCreditsPerPeriod      int64 `json:"organization_og_credits_per_period"`
	OrganizationOGCreditsUsedThisPeriod int64 `json:"organization_og_credits_used_this_period"`
}

// NewLimitsView returns the public form of a configuration's usage.
func NewLimitsView(u Usage) LimitsView {
	return LimitsView{NewImagesPerDay: u.PerDay, NewImagesPerPeriod: u.PerPeriod, UsedToday: u.Today, UsedThisPeriod: u.ThisPeriod,
		OrganizationOGCreditsPerPeriod: u.OrgShare, OrganizationOGCreditsUsedThisPeriod: u.OrgShareUsed}
}

// NewView returns the public form of c with its limits. Collections are
// never null; template_id, template_version and the max_new_images_*
// fields are null when not set.
func NewView(c *Config, u Usage) View {
	v := View{
		ID:                      c.ID,
		DomainID:                c.DomainID,
		ConfigType:              c.ConfigType,
		Name:                    c.Name,
		Description:             c.Description,
		BaseURL:                 c.BaseURL,
		Enabled:                 !c.Disabled,
		RefreshIntervalS:        int64(c.RefreshInterval / time.Second),
		OptimizationMode:        c.OptimizationMode,
		ExtractValues:           c.ExtractValues,
		DefaultOptions:          c.DefaultOptions,
		TemplateValuesMapping:   make([]MappingView, len(c.Mapping)),
		Headers:                 c.Headers,
		AdditionalHeaderOrigins: c.AdditionalHeaderOrigins,
		MaxNewImagesPerDay:      c.MaxNewImagesPerDay,
		MaxNewImagesPerPeriod:   c.MaxNewImagesPerPeriod,
		Limits:                  NewLimitsView(u),
		Stamps:                  resource.NewStamps(c.CreatedAt, c.UpdatedAt),
	}
	if v.DefaultOptions == nil {
		v.DefaultOptions = map[string]json.RawMessage{}
	}
	if v.Headers == nil {
		v.Headers = map[string]string{}
	}
	if v.AdditionalHeaderOrigins == nil {
		v.AdditionalHeaderOrigins = []string{}
	}
	if c.TemplateID != "" {
		id := c.TemplateID
		v.TemplateID = &id
	}
	if c.TemplateVersion != 0 {
		n := c.TemplateVersion
		v.TemplateVersion = &n
	}
	for i, m := range c.Mapping {
		v.TemplateValuesMapping[i] = MappingView{TemplateKey: m.TemplateKey, MetaKey: m.MetaKey, Fallback: string(m.Fallback)}
	}
	return v
}

// routes are the configurations' routes in the resource kit; an answer
// holds the configuration's limits (answer).
var routes = resource.Routes[Config, View]{Name: "OG configuration", Errors: storeError}

// parse reads and validates a create or update request by p, the template
// it names included.
func (h *Handler) parse(w http.ResponseWriter, r *http.Request, p *auth.Principal) (Request, error) {
	o, err := field.DecodeAny(w, r, maxBody)
	if err != nil {
		return Request{}, err
	}
	plan := p.Org.PlanInfo()
	req, err := ParseRequest(o, Options{MaxWaitCap: plan.MaxWaitCap, AllowPrivate: h.AllowPrivate, PlanCredits: plan.Credits})
	if err != nil {
		return req, err
	}
	return req, h.checkTemplate(p.Org.ID, req)
}

// checkTemplate answers 404 unless the organization holds the template
// (and version) a templated configuration names.
func (h *Handler) checkTemplate(orgID string, req Request) error {
	if req.ConfigType != Templated {
		return nil
	}
	if h.Templates == nil {
		return apierr.NotFound("Templates are not available")
	}
	err := h.Templates.Exists(orgID, req.TemplateID, req.TemplateVersion)
	if !errors.Is(err, ErrTemplateNotFound) {
		return err
	}
	if req.TemplateVersion != 0 && h.Templates.Exists(orgID, req.TemplateID, 0) == nil {
		return apierr.NotFound("Template %s has no version %d", req.TemplateID, req.TemplateVersion)
	}
	return apierr.NotFound("Template %s not found", req.TemplateID)
}

// storeError maps the store's errors to answers.
func storeError(err error) error {
	var ce *ConflictError
	if errors.As(err, &ce) {
		e := apierr.New(http.StatusConflict, "Conflicting OG configuration: %s is already enabled for %s in this organization; disable it or change its base_url first",
			ce.ExistingID, ce.BaseURL)
		e.Cause = err
		return e
	}
	return resource.NotFound(err, ErrNotFound, "OG configuration not found")
}

// Create handles POST /v1/og-configs.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) error {
	p, err := routes.Caller(r)
	if err != nil {
		return err
	}
	req, err := h.parse(w, r, p)
	if err != nil {
		return err
	}
	c, err := h.Store.Create(r.Context(), p.Org.ID, req)
	return h.answer(w, r, p.Org, c, err)
}

// Get handles GET /v1/og-configs/{id}.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) error {
	p, id, err := routes.Target(r)
	if err != nil {
		return err
	}
	c, err := h.Store.Get(r.Context(), p.Org.ID, id)
	return h.answer(w, r, p.Org, c, err)
}

// Update handles POST /v1/og-configs/{id}: a full replacement.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) error {
	p, id, err := routes.Target(r)
	if err != nil {
		return err
	}
	req, err := h.parse(w, r, p)
	if err != nil {
		return err
	}
	c, err := h.Store.Update(r.Context(), p.Org.ID, id, req)
	if err == nil {
		err = resource.Notify(r.Context(), h.OnChange, c)
	}
	return h.answer(w, r, p.Org, c, err)
}

// Delete handles DELETE /v1/og-configs/{id}.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) error {
	return routes.Remove(w, r, func(p *auth.Principal, id string) error {
		c, err := h.Store.Delete(r.Context(), p.Org.ID, id)
		if err != nil {
			return err
		}
		return resource.Notify(r.Context(), h.OnChange, c)
	})
}

func scope(orgID string) string { return "og-configs/" + orgID }

// List handles GET /v1/og-configs: newest first, disabled ones included.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) error {
	p, err := routes.Caller(r)
	if err != nil {
		return err
	}
	list, more, err := resource.ListPage(r, h.Cursors, scope(p.Org.ID), func(after string, count int) ([]*Config, bool, error) {
		return h.Store.List(r.Context(), p.Org.ID, after, count)
	})
	if err != nil {
		return err
	}
	usages := make(map[string]Usage, len(list))
	for _, c := range list {
		if usages[c.ID], err = h.Store.Usage(r.Context(), c, p.Org); err != nil {
			return err
		}
	}
	respond.JSON(w, r, http.StatusOK, cursor.NewPage(h.Cursors, scope(p.Org.ID), list, more,
		func(c *Config) View { return NewView(c, usages[c.ID]) },
		func(x *Config) string { return x.ID }))
	return nil
}

// answer sends one configuration with its limits, or the store's error
// err when it is not nil.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, o *org.Org, c *Config, err error) error {
	if err != nil {
		return routes.Fail(err)
	}
	u, err := h.Store.Usage(r.Context(), c, o)
	if err != nil {
		return err
	}
	respond.JSON(w, r, http.StatusOK, NewView(c, u))
	return nil
}
