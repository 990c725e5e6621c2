package origin

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/oauth"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/resource"
	"github.com/pictorhq/pictor/origin/respond"
)

// oauthGrants serves /v1/oauth-grants: the organization's MCP connections
// (OAuth grants), each a delegation of one API key's permissions to an
// assistant. Reading them needs api_keys:read, revoking one api_keys:delete
// and authority over what it grants, as disabling a key does.
type oauthGrants struct {
	server  *oauth.Server // nil when MCP is off: no connection exists
	keys    *apikey.Store
	cursors cursor.Codec
}

// grantView is a connection in an answer: never a token or a secret.
type grantView struct {
	ID          string            `json:"id"`
	ClientID    string            `json:"client_id"`
	ClientName  *string           `json:"client_name"`
	Permissions []perm.Permission `json:"permissions"`
	KeyID       string            `json:"key_id"`
	APIID       *string           `json:"api_id"`
	KeyName     *string           `json:"key_name"`
	CreatedAt   string            `json:"created_at"`
	LastUsedAt  *string           `json:"last_used_at"`
}

var grantRoutes = resource.Routes[oauth.Grant, grantView]{Name: "connection"}

func grantScope(orgID string) string { return "oauth-grants/" + orgID }

// List handles GET /v1/oauth-grants: live connections, newest first.
func (h *oauthGrants) List(w http.ResponseWriter, r *http.Request) error {
	p, err := grantRoutes.Caller(r)
	if err != nil {
		return err
	}
	count, after, err := h.cursors.ParseList(r.URL.Query(), grantScope(p.Org.ID))
	if err != nil {
		return err
	}
	var grants []oauth.Grant
	var more bool
	if h.server != nil {
		if grants, more, err = h.server.Grants(r.Context(), p.Org.ID, after, count); err != nil {
			return err
		}
	}
	keys := map[string]*apikey.Key{}
	for _, g := range grants {
		if _, ok := keys[g.KeyID]; ok {
			continue
		}
		k, err := h.keys.Get(r.Context(), p.Org.ID, g.KeyID)
		if err != nil && !errors.Is(err, apikey.ErrNotFound) {
			return err
		}
		keys[g.KeyID] = k
	}
	page := cursor.NewPage(h.cursors, grantScope(p.Org.ID), grants, more,
		func(g oauth.Grant) grantView { return newGrantView(g, keys[g.KeyID]) },
		func(g oauth.Grant) string { return g.ID })
	respond.JSON(w, r, http.StatusOK, page)
	return nil
}

func newGrantView(g oauth.Grant, k *apikey.Key) grantView {
	v := grantView{ID: g.ID, ClientID: g.ClientID, Permissions: g.Scopes, KeyID: g.KeyID,
		CreatedAt: g.Created.UTC().Format(resource.TimeFormat)}
	if v.Permissions == nil {
		v.Permissions = []perm.Permission{}
	}
	if g.ClientName != "" {
		v.ClientName = &g.ClientName
	}
	if k != nil {
		name := k.DisplayName()
		v.APIID, v.KeyName = &k.APIID, &name
	}
	if !g.LastUsed.IsZero() {
		at := g.LastUsed.UTC().Format(resource.TimeFormat)
		v.LastUsedAt = &at
	}
	return v
}

// Revoke handles DELETE /v1/oauth-grants/{id}: the connection's access
// and refresh tokens are refused from then on.
func (h *oauthGrants) Revoke(w http.ResponseWriter, r *http.Request) error {
	return grantRoutes.Remove(w, r, func(p *auth.Principal, id string) error {
		return h.revoke(r.Context(), p, id)
	})
}

func (h *oauthGrants) revoke(ctx context.Context, p *auth.Principal, id string) error {
	notFound := apierr.NotFound("Connection not found")
	if h.server == nil {
		return notFound
	}
	err := h.server.RevokeGrant(ctx, p.Org.ID, id, "revoked through the API by key "+p.KeyID, func(g oauth.Grant) error {
		ok, missing := p.Grant.Covers(perm.Grant{Permissions: g.Scopes})
		if ok {
			return nil
		}
		names := make([]string, len(missing))
		for i, m := range missing {
			names[i] = string(m)
		}
		return apierr.Forbidden("Insufficient authority: the connection grants permissions this key does not hold: %s", strings.Join(names, ", "))
	})
	if errors.Is(err, oauth.ErrGrantNotFound) {
		return notFound
	}
	return err
}
