package apikey

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/resource"
	"github.com/pictorhq/pictor/origin/respond"
)

// maxBody bounds a key request body.
const maxBody = 64 << 10

// View is the JSON form of a key. APIKey is set only in the create response.
type View struct {
	ID          string            `json:"id"`
	APIID       string            `json:"api_id"`
	APIKey      string            `json:"api_key,omitempty"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Enabled     bool              `json:"enabled"`
	Permissions []perm.Permission `json:"permissions"`
	AllFuture   bool              `json:"all_future_permissions"`
	resource.Stamps
}

// TimeFormat is how API responses write timestamps: UTC, milliseconds.
const TimeFormat = resource.TimeFormat

// NewView returns the public form of k; secret is "" except on create.
// An all-future key lists every permission it holds today.
func NewView(k *Key, secret string) View {
	return View{
		ID:          k.ID,
		APIID:       k.APIID,
		APIKey:      secret,
		Name:        k.DisplayName(),
		Description: k.Description,
		Enabled:     !k.Disabled,
		Permissions: k.Grant().Effective(),
		AllFuture:   k.AllFuture,
		Stamps:      resource.NewStamps(k.CreatedAt, k.UpdatedAt),
	}
}

// Handler serves /v1/api-keys.
type Handler struct {
	Store   *Store
	Cursors cursor.Codec
	// OnDisable runs before the answer to a change after which a key cannot
	// sign URLs (it is disabled, or lost images:create): the edges drop
	// what its signed URLs produced there.
	OnDisable func(ctx context.Context, apiID string) error
}

func (h *Handler) disabled(ctx context.Context, k *Key) error {
	if !k.Disabled && k.Grant().Has(perm.ImagesCreate) {
		return nil
	}
	return resource.Notify(ctx, h.OnDisable, k.APIID)
}

// routes are the keys' routes in the resource kit; only a creation's
// answer holds the secret.
var routes = resource.Routes[Key, View]{
	Name: "API key", Errors: notFound,
	View: func(k *Key) View { return NewView(k, "") },
}

// authority returns an error unless the caller's grant covers g.
func authority(caller perm.Grant, g perm.Grant, what string) error {
	ok, missing := caller.Covers(g)
	if ok {
		return nil
	}
	if g.AllFuture && !caller.AllFuture {
		return apierr.Forbidden("Insufficient authority: %s all_future_permissions, which this key does not hold", what)
	}
	names := make([]string, len(missing))
	for i, p := range missing {
		names[i] = string(p)
	}
	return apierr.Forbidden("Insufficient authority: %s permissions this key does not hold: %s", what, strings.Join(names, ", "))
}

func (h *Handler) parse(w http.ResponseWriter, r *http.Request) (Request, error) {
	o, err := field.DecodeJSON(w, r, maxBody)
	if err != nil {
		return Request{}, err
	}
	return ParseRequest(o)
}

// Create handles POST /v1/api-keys.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) error {
	p, err := routes.Caller(r)
	if err != nil {
		return err
	}
	req, err := h.parse(w, r)
	if err != nil {
		return err
	}
	k, secret, err := h.Store.CreateContext(r.Context(), p.Org.ID, req, func() error {
		return authority(p.Grant, req.Grant, "the request grants")
	})
	if errors.Is(err, ErrLimit) {
		err = apierr.Forbidden("API key limit reached: %v", ErrLimit)
	}
	if err != nil {
		return err
	}
	respond.JSON(w, r, http.StatusOK, NewView(k, secret))
	return nil
}

// Get handles GET /v1/api-keys/{id}.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) error {
	return routes.One(w, r, func(p *auth.Principal, id string) (*Key, error) {
		return h.Store.Get(r.Context(), p.Org.ID, id)
	})
}

func notFound(err error) error { return resource.NotFound(err, ErrNotFound, "API key not found") }

// Update handles POST /v1/api-keys/{id}.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) error {
	return routes.One(w, r, func(p *auth.Principal, id string) (*Key, error) {
		req, err := h.parse(w, r)
		if err != nil {
			return nil, err
		}
		k, err := h.Store.Update(r.Context(), p.Org.ID, id, req, func(existing *Key) error {
			if err := authority(p.Grant, existing.Grant(), "the key holds"); err != nil {
				return err
			}
			return authority(p.Grant, req.Grant, "the request grants")
		})
		if err != nil {
			return nil, err
		}
		return k, h.disabled(r.Context(), k)
	})
}

// Delete handles DELETE /v1/api-keys/{id}: the key is disabled, not removed.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) error {
	return routes.Remove(w, r, func(p *auth.Principal, id string) error {
		k, err := h.Store.Disable(r.Context(), p.Org.ID, id, func(existing *Key) error {
			return authority(p.Grant, existing.Grant(), "the key holds")
		})
		if err != nil {
			return err
		}
		return h.disabled(r.Context(), k)
	})
}

// ListQuery is a validated list query.
type ListQuery struct {
	Count  int
	After  string
	Filter Filter
}

// ParseListQuery validates the list query of spec §4.2.
func (h *Handler) ParseListQuery(orgID string, q map[string][]string) (ListQuery, error) {
	var errs field.Errors
	var lq ListQuery
	var err error
	lq.Count, lq.After, err = h.Cursors.ParseList(q, scope(orgID))
	if ae := (*apierr.Error)(nil); errors.As(err, &ae) {
		for _, f := range ae.Fields {
			errs.Add(f.Path, "%s", f.Message)
		}
	}
	if vs, ok := q["include_disabled"]; ok {
		switch strings.ToLower(vs[len(vs)-1]) {
		case "true", "1":
			lq.Filter.IncludeDisabled = true
		case "false", "0", "":
		default:
			errs.Add("include_disabled", "must be true or false")
		}
	}
	for i, name := range q["with_permission"] {
		p := perm.Permission(name)
		if !perm.Valid(p) {
			errs.Add(fmt.Sprintf("with_permission[%d]", i), "unknown permission %q", name)
			continue
		}
		lq.Filter.WithPermissions = append(lq.Filter.WithPermissions, p)
	}
	return lq, errs.Err()
}

func scope(orgID string) string { return "api-keys/" + orgID }

// List handles GET /v1/api-keys.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) error {
	p, err := routes.Caller(r)
	if err != nil {
		return err
	}
	lq, err := h.ParseListQuery(p.Org.ID, r.URL.Query())
	if err != nil {
		return err
	}
	keys, more, err := h.Store.List(r.Context(), p.Org.ID, lq.After, lq.Count, lq.Filter)
	if err != nil {
		return err
	}
	respond.JSON(w, r, http.StatusOK, cursor.NewPage(h.Cursors, scope(p.Org.ID), keys, more,
		func(k *Key) View { return NewView(k, "") }, func(k *Key) string { return k.ID }))
	return nil
}
