package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
)

// Principal is the authenticated caller.
type Principal struct {
	Org   *org.Org
	KeyID string
	APIID string
	Grant perm.Grant
}

// Authenticator checks a key's credentials.
type Authenticator interface {
	// Authenticate returns the principal of the enabled key with the api_id
	// and secret, or one of ErrInvalid, ErrDisabled, ErrSuspended. It must
	// take about the same time whether or not the api_id exists.
	Authenticate(ctx context.Context, apiID, secret string) (*Principal, error)
}

type ctxKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the request's principal; nil on public routes.
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxKey{}).(*Principal)
	return p
}

// maxCredential bounds the Authorization header we are willing to decode.
const maxCredential = 1024

// Authenticate reads Basic credentials from r and checks them.
func Authenticate(a Authenticator, r *http.Request) (*Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, apierr.Unauthorized("Missing credentials: use HTTP Basic authentication with api_id:api_key")
	}
	apiID, secret, ok := parseBasic(h)
	if !ok {
		return nil, apierr.Unauthorized("Malformed credentials: use HTTP Basic authentication with api_id:api_key")
	}
	p, err := a.Authenticate(r.Context(), apiID, secret)
	switch {
	case err == nil:
		return p, nil
	case errors.Is(err, ErrInvalid):
		return nil, apierr.Unauthorized("Invalid credentials")
	case errors.Is(err, ErrDisabled):
		return nil, apierr.Unauthorized("API key is disabled")
	case errors.Is(err, ErrSuspended):
		return nil, apierr.Unauthorized("Organization is suspended")
	}
	return nil, apierr.Internal(err)
}

func parseBasic(h string) (user, pass string, ok bool) {
	scheme, payload, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Basic") || len(payload) > maxCredential {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
	if err != nil {
		return "", "", false
	}
	user, pass, found = strings.Cut(string(raw), ":")
	if !found || user == "" || pass == "" {
		return "", "", false
	}
	return user, pass, true
}
