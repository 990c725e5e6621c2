package proxy

import (
	"errors"
	"net/http"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/resource"
)

// maxBody bounds a request: a hundred of the longest bypass hosts, every
// character \u-escaped, and room for the rest.
const maxBody = 256 << 10

// TimeFormat is how answers write timestamps: UTC, milliseconds (as every
// management resource).
const TimeFormat = resource.TimeFormat

// Handler serves /v1/proxies. Every route answers 403 first when the
// organization's plan has no delivery options (CheckPlan).
type Handler struct {
	Store   *Store
	Cursors cursor.Codec
	// AllowPrivate accepts url hosts that are loopback or private address
	// literals or local names (--allow-private-urls).
	AllowPrivate bool
}

// View is the JSON form of a proxy. It has no password field, and nothing
// in it depends on the password.
type View struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	URL         string   `json:"url"`
	Port        int      `json:"port"`
	BypassHosts []string `json:"bypass_hosts"`
	Username    *string  `json:"username"`
	Enabled     bool     `json:"enabled"`
	resource.Stamps
}

// NewView returns the public form of p: bypass_hosts never null, username
// null when there is none.
func NewView(p *Proxy) View {
	v := View{
		ID:          p.ID,
		Name:        p.Name,
		URL:         p.URL,
		Port:        p.Port,
		BypassHosts: p.BypassHosts,
		Enabled:     !p.Disabled,
		Stamps:      resource.NewStamps(p.CreatedAt, p.UpdatedAt),
	}
	if v.BypassHosts == nil {
		v.BypassHosts = []string{}
	}
	if p.Username != "" {
		u := p.Username
		v.Username = &u
	}
	return v
}

// routes are the proxies' routes in the resource kit. Every route answers
// 403 first when the organization's plan has no delivery options
// (CheckPlan).
var routes = resource.Routes[Proxy, View]{
	Name: "proxy", Check: CheckPlan, Errors: storeError, View: NewView,
	Scope: "proxies/", ID: func(x *Proxy) string { return x.ID },
}

// storeError maps the store's errors to answers.
func storeError(err error) error {
	var re *RetainError
	if errors.As(err, &re) {
		e := apierr.Field("authentication.retain_password", "%s", re.Problem)
		e.Cause = err
		return e
	}
	return resource.NotFound(err, ErrNotFound, "Proxy not found")
}

// parse reads and validates a create (current nil) or update request.
func (h *Handler) parse(w http.ResponseWriter, r *http.Request, current *Proxy) (Request, error) {
	o, err := field.DecodeAny(w, r, maxBody)
	if err != nil {
		return Request{}, err
	}
	return ParseRequest(o, Options{AllowPrivate: h.AllowPrivate, Current: current})
}

// Create handles POST /v1/proxies.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) error {
	return routes.Collection(w, r, func(p *auth.Principal) (*Proxy, error) {
		req, err := h.parse(w, r, nil)
		if err != nil {
			return nil, err
		}
		return h.Store.Create(r.Context(), p.Org.ID, req)
	})
}

// Get handles GET /v1/proxies/{id}.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) error {
	return routes.One(w, r, func(p *auth.Principal, id string) (*Proxy, error) {
		return h.Store.Get(r.Context(), p.Org.ID, id)
	})
}

// Update handles POST /v1/proxies/{id}: a full replacement. The proxy is
// read first (an unknown or foreign id is a 404 whatever the body), so that
// authentication.retain_password is judged with the other fields.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) error {
	return routes.One(w, r, func(p *auth.Principal, id string) (*Proxy, error) {
		current, err := h.Store.Get(r.Context(), p.Org.ID, id)
		if err != nil {
			return nil, err
		}
		req, err := h.parse(w, r, current)
		if err != nil {
			return nil, err
		}
		return h.Store.Update(r.Context(), p.Org.ID, id, req)
	})
}

// Delete handles DELETE /v1/proxies/{id}.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) error {
	return routes.Remove(w, r, func(p *auth.Principal, id string) error {
		return h.Store.Delete(r.Context(), p.Org.ID, id)
	})
}

// List handles GET /v1/proxies: newest first, disabled ones included.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) error {
	return routes.List(w, r, h.Cursors, h.Store.List)
}
