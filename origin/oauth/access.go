package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/perm"
)

// accessTokenType is the JWT "typ" of access tokens (RFC 9068).
const accessTokenType = "at+jwt"

// maxAccessToken bounds a presented access token; Pictor's are well under.
const maxAccessToken = 4096

// accessClaims are an access token's claims.
type accessClaims struct {
	jwt.RegisteredClaims
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
	GrantID  string `json:"gid"`
	Org      string `json:"org"`
}

// issueAccess signs an access token of grant g carrying scopes.
func (s *Server) issueAccess(g *grant, scopes []perm.Permission, now time.Time) (string, error) {
	jti := make([]byte, 16)
	rand.Read(jti)
	claims := &accessClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    s.issuer,
			Subject:   g.KeyID,
			Audience:  jwt.ClaimStrings{g.Resource},
			ExpiresAt: jwt.NewNumericDate(now.Add(s.cfg.AccessTTL)),
			NotBefore: jwt.NewNumericDate(now),
			IssuedAt:  jwt.NewNumericDate(now),
			ID:        base64.RawURLEncoding.EncodeToString(jti),
		},
		ClientID: g.ClientID,
		Scope:    joinScopes(scopes),
		GrantID:  g.ID,
		Org:      g.OrgID,
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	t.Header["kid"] = s.jwk.Kid
	t.Header["typ"] = accessTokenType
	signed, err := t.SignedString(s.key)
	if err != nil {
		return "", fmt.Errorf("sign access token: %w", err)
	}
	return signed, nil
}

// parseAccess checks an access token's signature, type and, unless
// skipClaims, its issuer, audience and times.
func (s *Server) parseAccess(token string, skipClaims bool) (*accessClaims, error) {
	if token == "" || len(token) > maxAccessToken {
		return nil, invalidToken("malformed token")
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithIssuer(s.issuer),
		jwt.WithAudience(s.cfg.Resource),
		jwt.WithTimeFunc(s.now),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
	}
	if skipClaims {
		opts = append(opts, jwt.WithoutClaimsValidation())
	}
	var claims accessClaims
	_, err := jwt.NewParser(opts...).ParseWithClaims(token, &claims, func(t *jwt.Token) (any, error) {
		if typ, _ := t.Header["typ"].(string); !strings.EqualFold(typ, accessTokenType) {
			return nil, errors.New("not an access token")
		}
		kid, _ := t.Header["kid"].(string)
		if kid == s.jwk.Kid {
			return s.key.Public(), nil
		}
		if pub, ok := s.previousKeys[kid]; ok {
			return pub, nil
		}
		return nil, errors.New("unknown key id")
	})
	if err != nil {
		return nil, invalidToken(reason(err))
	}
	if claims.Subject == "" || claims.GrantID == "" || claims.ClientID == "" {
		return nil, invalidToken("missing claim")
	}
	return &claims, nil
}

// reason is the public reason a JWT was refused.
func reason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed token"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "bad signature or algorithm"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "unknown signing key or token type"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "token expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "token not yet valid"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "wrong audience"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "wrong issuer"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "missing claim"
	}
	return "invalid token"
}

// Verify checks an access token and returns the principal it acts for. Its
// grant is what the person approved, narrowed to what the approving key holds
// now. A key that was deleted or disabled, or whose organization was
// suspended, revokes the grant for good. Refused tokens give errors matching
// ErrInvalidToken; a failing store gives other errors.
func (s *Server) Verify(ctx context.Context, token string) (*auth.Principal, error) {
	claims, err := s.parseAccess(token, false)
	if err != nil {
		return nil, err
	}
	var g grant
	found, err := getJSON(ctx, s.cfg.Store, grantKey(claims.GrantID), &g)
	if err != nil {
		return nil, err
	}
	if !found || g.Revoked || g.KeyID != claims.Subject || g.ClientID != claims.ClientID {
		return nil, invalidToken("token revoked")
	}
	pr, err := s.keyPrincipal(ctx, &g)
	if err != nil {
		return nil, err
	}
	s.useGrant(ctx, &g, s.now())
	var scopes []perm.Permission
	for _, name := range strings.Fields(claims.Scope) {
		if p := perm.Permission(name); containsPerm(g.Scopes, p) {
			scopes = append(scopes, p)
		}
	}
	return &auth.Principal{
		Org:   pr.Org,
		KeyID: pr.KeyID,
		APIID: pr.APIID,
		Grant: perm.Grant{Permissions: s.within(scopes, pr.Grant)},
	}, nil
}

// keyRefusal is one way auth refuses an API key.
type keyRefusal struct {
	err     error
	revoked string // why a grant on the key is revoked
	signIn  string // what the consent page's sign-in step says
}

var keyRefusals = []keyRefusal{
	{auth.ErrInvalid, "API key deleted", "Wrong API ID or API key."},
	{auth.ErrDisabled, "API key disabled", "This API key is disabled."},
	{auth.ErrSuspended, "organization suspended", "Your organization is suspended."},
}

// keyRefusalOf returns the refusal err is, nil for another error.
func keyRefusalOf(err error) *keyRefusal {
	for i := range keyRefusals {
		if errors.Is(err, keyRefusals[i].err) {
			return &keyRefusals[i]
		}
	}
	return nil
}

// keyPrincipal returns the current principal of the grant's key. When the key
// is gone, disabled, or its organization suspended, it revokes the grant and
// returns an invalid token error.
func (s *Server) keyPrincipal(ctx context.Context, g *grant) (*auth.Principal, error) {
	pr, err := s.cfg.Keys.Principal(ctx, g.KeyID)
	var why string
	switch refused := keyRefusalOf(err); {
	case err == nil && (pr.Org == nil || pr.Org.ID != g.OrgID):
		why = "API key moved to another organization"
	case err == nil:
		return pr, nil
	case refused != nil:
		why = refused.revoked
	default:
		return nil, fmt.Errorf("load API key %s: %w", g.KeyID, err)
	}
	if err := s.revokeGrant(ctx, g.ID, why); err != nil {
		// Refused all the same; the next use tries to record it again.
		s.log.ErrorContext(ctx, "oauth grant revocation failed", "grant_id", g.ID, "error", err)
	}
	return nil, invalidToken("token revoked")
}

// Challenge returns the WWW-Authenticate value of a request to the protected
// resource refused with err: nil when it presented no token (RFC 6750 §3),
// else the error from Verify.
func (s *Server) Challenge(err error) string {
	v := `Bearer resource_metadata="` + s.ResourceMetadataURL() + `", scope="` + joinScopes(s.scopes) + `"`
	var te *tokenError
	if errors.As(err, &te) {
		v += `, error="invalid_token", error_description="` + te.reason + `"`
	}
	return v
}
