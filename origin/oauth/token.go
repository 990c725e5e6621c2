package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/respond"
)

// endpointError is an error answer of the token or revocation endpoint (RFC
// 6749 §5.2).
type endpointError struct {
	status      int
	code        string
	description string
	basic       bool // the client tried HTTP Basic authentication
}

func tokenFail(code, format string, args ...any) *endpointError {
	return &endpointError{status: http.StatusBadRequest, code: code, description: fmt.Sprintf(format, args...)}
}

var errServer = &endpointError{status: http.StatusInternalServerError, code: "server_error", description: "the request could not be completed"}

func (s *Server) endpointFail(w http.ResponseWriter, r *http.Request, e *endpointError) {
	if e.basic && e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="pictor", charset="UTF-8"`)
	}
	respond.JSON(w, r, e.status, map[string]string{"error": e.code, "error_description": e.description})
}

// noStore marks answers that carry tokens (RFC 6749 §5.1).
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

// tokenParams may appear once each in a token or revocation request.
var tokenParams = []string{"grant_type", "code", "redirect_uri", "code_verifier", "client_id", "client_secret", "refresh_token", "scope", "resource", "token", "token_type_hint"}

// readEndpointForm reads a token or revocation request's form.
func readEndpointForm(w http.ResponseWriter, r *http.Request) (url.Values, *endpointError) {
	form, err := readForm(w, r)
	switch {
	case errors.Is(err, errFormType), errors.Is(err, errFormTooLarge), errors.Is(err, errFormSyntax):
		return nil, tokenFail("invalid_request", "%s", err)
	case err != nil:
		return nil, tokenFail("invalid_request", "the body could not be read")
	}
	if n := repeated(form, tokenParams...); n != "" {
		return nil, tokenFail("invalid_request", "%s is repeated", n)
	}
	return form, nil
}

// authenticateClient identifies the client of a token or revocation request:
// a public client by its client_id, a confidential one by its secret in HTTP
// Basic (RFC 6749 §2.3.1) or in the form (client_secret_post).
func (s *Server) authenticateClient(r *http.Request, form url.Values) (*client, *endpointError) {
	unauthorized := func(basic bool, description string) *endpointError {
		return &endpointError{status: http.StatusUnauthorized, code: "invalid_client", description: description, basic: basic}
	}
	var id, secret string
	user, pass, basic := r.BasicAuth()
	switch {
	case basic:
		var err1, err2 error
		id, err1 = url.QueryUnescape(user)
		secret, err2 = url.QueryUnescape(pass)
		if err1 != nil || err2 != nil {
			return nil, unauthorized(true, "malformed Basic credentials")
		}
		if form.Has("client_secret") {
			return nil, tokenFail("invalid_request", "use one client authentication method, not both Basic and client_secret")
		}
		if form.Has("client_id") && form.Get("client_id") != id {
			return nil, unauthorized(true, "client_id does not match the Basic credentials")
		}
	case r.Header.Get("Authorization") != "":
		return nil, unauthorized(false, "client authentication must use HTTP Basic or the form")
	default:
		id, secret = form.Get("client_id"), form.Get("client_secret")
		if id == "" {
			return nil, unauthorized(false, "client_id is required")
		}
	}
	c, err := s.client(r.Context(), id)
	if err != nil {
		s.log.ErrorContext(r.Context(), "oauth client lookup failed", "error", err)
		return nil, errServer
	}
	if c == nil {
		secretMatches("", secret) // about the same time as a known client
		return nil, unauthorized(basic, "unknown client")
	}
	if c.public() {
		if secret != "" {
			return nil, unauthorized(basic, "a public client has no secret")
		}
		return c, nil
	}
	if secret == "" {
		return nil, unauthorized(basic, "client authentication required")
	}
	if !secretMatches(c.SecretHash, secret) {
		return nil, unauthorized(basic, "wrong client secret")
	}
	return c, nil
}

// secretMatches compares a secret with a stored hash in constant time.
func secretMatches(storedHash, secret string) bool {
	return subtle.ConstantTimeCompare([]byte(storedHash), []byte(hashSecret(secret))) == 1 && storedHash != ""
}

// tokenResponse is a successful token answer (RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}

// Token issues tokens (POST /oauth/token) for an authorization code or a
// refresh token.
func (s *Server) Token(w http.ResponseWriter, r *http.Request) {
	cors(w)
	noStore(w)
	form, e := readEndpointForm(w, r)
	if e != nil {
		s.endpointFail(w, r, e)
		return
	}
	c, e := s.authenticateClient(r, form)
	if e != nil {
		s.endpointFail(w, r, e)
		return
	}
	var resp *tokenResponse
	switch gt := form.Get("grant_type"); gt {
	case "":
		e = tokenFail("invalid_request", "grant_type is required")
	case "authorization_code", "refresh_token":
		if !c.allows(gt) {
			e = tokenFail("unauthorized_client", "the client did not register the %s grant", gt)
		} else if gt == "authorization_code" {
			resp, e = s.redeemCode(r.Context(), c, form)
		} else {
			resp, e = s.refresh(r.Context(), c, form)
		}
	default:
		e = tokenFail("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
	if e != nil {
		if e.status == http.StatusBadRequest {
			s.log.InfoContext(r.Context(), "oauth token refused", "client_id", c.ID, "error", e.code, "description", e.description)
		}
		s.endpointFail(w, r, e)
		return
	}
	respond.JSON(w, r, http.StatusOK, resp)
}

// pkceMatches reports whether verifier hashes to challenge (S256).
func pkceMatches(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

// redeemCode exchanges an authorization code, once.
func (s *Server) redeemCode(ctx context.Context, c *client, form url.Values) (*tokenResponse, *endpointError) {
	code, redirectURI, verifier := form.Get("code"), form.Get("redirect_uri"), form.Get("code_verifier")
	switch {
	case code == "":
		return nil, tokenFail("invalid_request", "code is required")
	case redirectURI == "":
		return nil, tokenFail("invalid_request", "redirect_uri is required")
	case verifier == "":
		return nil, tokenFail("invalid_request", "code_verifier is required")
	case !validPKCE(verifier):
		return nil, tokenFail("invalid_request", "code_verifier must be 43 to 128 characters of [A-Za-z0-9-._~]")
	}
	hash := hashSecret(code)
	key := prefixCode + hash

	// What the code says is checked first, outside the code's lock (the
	// API key's look-up is another store's read); the transaction then
	// spends it unless someone did meanwhile.
	var rec authCode
	found, err := getJSON(ctx, s.cfg.Store, key, &rec)
	if err != nil {
		s.log.ErrorContext(ctx, "oauth code lookup failed", "error", err)
		return nil, errServer
	}
	if !found {
		return nil, tokenFail("invalid_grant", "the code is invalid, expired or already used")
	}
	now := s.now()
	if rec.Used {
		return nil, s.codeReused(ctx, c, rec.GrantID)
	}
	if !now.Before(rec.Expires) {
		if err := s.deleteRecord(key, rec.Expires); err != nil {
			s.log.ErrorContext(ctx, "oauth code deletion failed", "error", err)
		}
		return nil, tokenFail("invalid_grant", "the code expired")
	}
	switch {
	case rec.ClientID != c.ID:
		return nil, tokenFail("invalid_grant", "the code was issued to another client")
	case rec.RedirectURI != redirectURI:
		return nil, tokenFail("invalid_grant", "redirect_uri differs from the authorization request's")
	case !pkceMatches(verifier, rec.Challenge):
		return nil, tokenFail("invalid_grant", "code_verifier does not match the code_challenge")
	case form.Has("resource") && s.canonicalResource(form.Get("resource")) != rec.Resource:
		return nil, tokenFail("invalid_target", "resource differs from the authorization request's")
	}
	g := &grant{
		ID:       uuid.Must(uuid.NewV7()).String(),
		OrgID:    rec.OrgID,
		KeyID:    rec.KeyID,
		ClientID: c.ID,
		Resource: rec.Resource,
		Scopes:   rec.Scopes,
		Created:  now.UTC(),
	}
	if _, err := s.keyPrincipal(ctx, g); err != nil {
		if errors.Is(err, ErrInvalidToken) {
			return nil, tokenFail("invalid_grant", "the approving API key can no longer be used")
		}
		s.log.ErrorContext(ctx, "oauth key lookup failed", "error", err)
		return nil, errServer
	}

	if e := s.clientUsed(ctx, c, now); e != nil {
		return nil, e
	}
	g.Expires = now.Add(s.cfg.AccessTTL).UTC()
	var refresh string
	var rt *refreshToken
	if c.allows("refresh_token") {
		refresh = newSecret()
		rt = &refreshToken{GrantID: g.ID, ClientID: c.ID, Scopes: g.Scopes, Expires: now.Add(s.cfg.RefreshTTL).UTC()}
		g.Expires = later(g.Expires, rt.Expires)
	}
	var spent authCode // the code as the transaction found it
	err = s.cfg.Store.Update(ctx, codeLock(hash), func(txn kv.Txn) error {
		found, err := getJSON(ctx, txn, key, &spent)
		if err != nil {
			return err
		}
		if !found || spent.Used {
			return errSpent // swept, or redeemed meanwhile
		}
		spent.Used, spent.GrantID = true, g.ID
		err = errors.Join(
			saveRecord(txn, key, &spent, spent.Expires),
			saveRecord(txn, grantKey(g.ID), g, g.Expires),
		)
		if rt != nil {
			err = errors.Join(err, saveRecord(txn, prefixRefresh+hashSecret(refresh), rt, rt.Expires))
		}
		for _, k := range grantIndexKeys(g) {
			err = errors.Join(err, txn.Put(k, nil))
		}
		return err
	})
	switch {
	case errors.Is(err, errSpent) && spent.Used:
		return nil, s.codeReused(ctx, c, spent.GrantID)
	case errors.Is(err, errSpent):
		return nil, tokenFail("invalid_grant", "the code is invalid, expired or already used")
	case err != nil:
		s.log.ErrorContext(ctx, "oauth grant creation failed", "error", err)
		return nil, errServer
	}
	access, err := s.issueAccess(g, g.Scopes, now)
	if err != nil {
		s.log.ErrorContext(ctx, "oauth access token failed", "error", err)
		return nil, errServer
	}
	s.log.InfoContext(ctx, "oauth grant created", "grant_id", g.ID, "client_id", c.ID, "key_id", g.KeyID, "org_id", g.OrgID, "scope", joinScopes(g.Scopes))
	return &tokenResponse{
		AccessToken:  access,
		TokenType:    "Bearer",
		ExpiresIn:    int64(s.cfg.AccessTTL / time.Second),
		RefreshToken: refresh,
		Scope:        joinScopes(g.Scopes),
	}, nil
}

// clientUsed writes down the use of c before it gets tokens (useClient),
// so that Sweep keeps it.
func (s *Server) clientUsed(ctx context.Context, c *client, now time.Time) *endpointError {
	err := s.useClient(ctx, c, now)
	switch {
	case errors.Is(err, errClientGone):
		return &endpointError{status: http.StatusUnauthorized, code: "invalid_client", description: "unknown client"}
	case err != nil:
		s.log.ErrorContext(ctx, "oauth client use not recorded", "error", err)
		return errServer
	}
	return nil
}

// errSpent: the code or refresh token was spent, or removed, between its
// first read and its transaction.
var errSpent = errors.New("spent meanwhile")

// codeReused answers a code redeemed a second time: RFC 6749 §4.1.2, a
// code used twice revokes what it gave.
func (s *Server) codeReused(ctx context.Context, c *client, grantID string) *endpointError {
	s.log.WarnContext(ctx, "oauth authorization code reused", "client_id", c.ID, "grant_id", grantID)
	if err := s.revokeGrant(ctx, grantID, "authorization code reused"); err != nil {
		s.log.ErrorContext(ctx, "oauth grant revocation failed", "grant_id", grantID, "error", err)
		return errServer
	}
	return tokenFail("invalid_grant", "the code was already used")
}

// refreshReused answers a spent refresh token used again: the grant is
// revoked.
func (s *Server) refreshReused(ctx context.Context, c *client, grantID string) *endpointError {
	s.log.WarnContext(ctx, "oauth refresh token reused", "client_id", c.ID, "grant_id", grantID)
	if err := s.revokeGrant(ctx, grantID, "refresh token reused"); err != nil {
		s.log.ErrorContext(ctx, "oauth grant revocation failed", "grant_id", grantID, "error", err)
		return errServer
	}
	return tokenFail("invalid_grant", "the refresh token was already used; the connection is revoked")
}

// refresh rotates a refresh token: the token is spent, a new one and an
// access token are issued. A spent token used again revokes the grant.
func (s *Server) refresh(ctx context.Context, c *client, form url.Values) (*tokenResponse, *endpointError) {
	token := form.Get("refresh_token")
	if token == "" {
		return nil, tokenFail("invalid_request", "refresh_token is required")
	}
	var narrow []perm.Permission
	if form.Has("scope") {
		var err error
		if narrow, err = s.parseScopes(form.Get("scope")); err != nil {
			return nil, tokenFail("invalid_scope", "%s", err)
		}
	}
	hash := hashSecret(token)
	key := prefixRefresh + hash

	// As for codes: checks first, then one transaction under the grant's
	// lock spends the token and extends the grant unless someone spent it
	// or revoked the grant meanwhile.
	var rec refreshToken
	found, err := getJSON(ctx, s.cfg.Store, key, &rec)
	if err != nil {
		s.log.ErrorContext(ctx, "oauth refresh token lookup failed", "error", err)
		return nil, errServer
	}
	if !found {
		return nil, tokenFail("invalid_grant", "the refresh token is invalid or expired")
	}
	if rec.ClientID != c.ID {
		return nil, tokenFail("invalid_grant", "the refresh token was issued to another client")
	}
	now := s.now()
	if rec.Used {
		return nil, s.refreshReused(ctx, c, rec.GrantID)
	}
	if !now.Before(rec.Expires) {
		if err := s.deleteRecord(key, rec.Expires); err != nil {
			s.log.ErrorContext(ctx, "oauth refresh token deletion failed", "error", err)
		}
		return nil, tokenFail("invalid_grant", "the refresh token expired")
	}
	scopes := rec.Scopes
	if len(narrow) > 0 {
		for _, p := range narrow {
			if !containsPerm(rec.Scopes, p) {
				return nil, tokenFail("invalid_scope", "scope %s was not granted", p)
			}
		}
		scopes = narrow
	}

	var g grant
	found, err = getJSON(ctx, s.cfg.Store, grantKey(rec.GrantID), &g)
	if err != nil {
		s.log.ErrorContext(ctx, "oauth grant lookup failed", "error", err)
		return nil, errServer
	}
	if !found || g.Revoked {
		return nil, tokenFail("invalid_grant", "the connection was revoked")
	}
	if _, err := s.keyPrincipal(ctx, &g); err != nil {
		if errors.Is(err, ErrInvalidToken) {
			return nil, tokenFail("invalid_grant", "the connection was revoked: its API key can no longer be used")
		}
		s.log.ErrorContext(ctx, "oauth key lookup failed", "error", err)
		return nil, errServer
	}

	if e := s.clientUsed(ctx, c, now); e != nil {
		return nil, e
	}
	next := newSecret()
	nextRec := &refreshToken{GrantID: rec.GrantID, ClientID: c.ID, Scopes: rec.Scopes, Expires: now.Add(s.cfg.RefreshTTL).UTC()}
	var spent refreshToken // the token as the transaction found it
	err = s.cfg.Store.Update(ctx, grantLock(rec.GrantID), func(txn kv.Txn) error {
		found, err := getJSON(ctx, txn, key, &spent)
		if err != nil {
			return err
		}
		if !found || spent.Used {
			return errSpent
		}
		found, err = getJSON(ctx, txn, grantKey(rec.GrantID), &g)
		if err != nil {
			return err
		}
		if !found || g.Revoked {
			return errRevoked
		}
		if nextRec.Expires.After(g.Expires) {
			if err := txn.Delete(expiryKey(g.Expires, grantKey(g.ID))); err != nil {
				return err
			}
			g.Expires = nextRec.Expires
		}
		spent.Used = true
		return errors.Join(
			saveRecord(txn, key, &spent, spent.Expires),
			saveRecord(txn, prefixRefresh+hashSecret(next), nextRec, nextRec.Expires),
			saveRecord(txn, grantKey(g.ID), &g, g.Expires))
	})
	switch {
	case errors.Is(err, errSpent) && spent.Used:
		return nil, s.refreshReused(ctx, c, spent.GrantID)
	case errors.Is(err, errSpent):
		return nil, tokenFail("invalid_grant", "the refresh token is invalid or expired")
	case errors.Is(err, errRevoked):
		return nil, tokenFail("invalid_grant", "the connection was revoked")
	case err != nil:
		s.log.ErrorContext(ctx, "oauth refresh failed", "error", err)
		return nil, errServer
	}
	access, err := s.issueAccess(&g, scopes, now)
	if err != nil {
		s.log.ErrorContext(ctx, "oauth access token failed", "error", err)
		return nil, errServer
	}
	return &tokenResponse{
		AccessToken:  access,
		TokenType:    "Bearer",
		ExpiresIn:    int64(s.cfg.AccessTTL / time.Second),
		RefreshToken: next,
		Scope:        joinScopes(scopes),
	}, nil
}

var errRevoked = errors.New("grant revoked")

// Revoke revokes a token's grant (POST /oauth/revoke, RFC 7009): a refresh
// token's, or an access token's. Tokens it does not know, or that belong to
// another client, are answered 200 all the same.
func (s *Server) Revoke(w http.ResponseWriter, r *http.Request) {
	cors(w)
	noStore(w)
	form, e := readEndpointForm(w, r)
	if e != nil {
		s.endpointFail(w, r, e)
		return
	}
	c, e := s.authenticateClient(r, form)
	if e != nil {
		s.endpointFail(w, r, e)
		return
	}
	token := form.Get("token")
	if token == "" {
		s.endpointFail(w, r, tokenFail("invalid_request", "token is required"))
		return
	}
	gid, err := s.grantOf(r.Context(), token, c)
	if err == nil && gid != "" {
		err = s.revokeGrant(r.Context(), gid, "revoked by the client")
	}
	if err != nil {
		s.log.ErrorContext(r.Context(), "oauth revocation failed", "error", err)
		s.endpointFail(w, r, errServer)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// grantOf returns the grant of client c that token (refresh or access)
// belongs to, or "".
func (s *Server) grantOf(ctx context.Context, token string, c *client) (string, error) {
	if strings.Count(token, ".") == 2 {
		claims, err := s.parseAccess(token, true)
		if err != nil || claims.ClientID != c.ID || claims.Issuer != s.issuer {
			return "", nil
		}
		return claims.GrantID, nil
	}
	var rec refreshToken
	found, err := getJSON(ctx, s.cfg.Store, prefixRefresh+hashSecret(token), &rec)
	if err != nil || !found || rec.ClientID != c.ID {
		return "", err
	}
	return rec.GrantID, nil
}
