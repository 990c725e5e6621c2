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

// endpointRequest reads a token or revocation request and authenticates
// its client; on failure it answers the request and returns a nil client.
func (s *Server) endpointRequest(w http.ResponseWriter, r *http.Request) (url.Values, *client) {
	cors(w)
	noStore(w)
	form, e := readEndpointForm(w, r)
	if e != nil {
		s.endpointFail(w, r, e)
		return nil, nil
	}
	c, e := s.authenticateClient(r, form)
	if e != nil {
		s.endpointFail(w, r, e)
		return nil, nil
	}
	return form, c
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
	form, c := s.endpointRequest(w, r)
	if c == nil {
		return
	}
	var resp *tokenResponse
	var e *endpointError
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
	// What the code says is checked first, outside the code's lock (the
	// API key's look-up is another store's read); the transaction then
	// spends it unless someone did meanwhile.
	var rec authCode
	hash, key, e := s.lookupSecret(ctx, &codeSecret, code, &rec)
	if e != nil {
		return nil, e
	}
	now := s.now()
	if rec.Used {
		return nil, s.reused(ctx, &codeSecret, c, rec.GrantID)
	}
	if !now.Before(rec.Expires) {
		return nil, s.expired(ctx, &codeSecret, key, rec.Expires)
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
		ClientID: c.ID,
		approval: rec.approval,
		Created:  now.UTC(),
	}
	if e := s.grantUsable(ctx, c, g, now, "the approving API key can no longer be used"); e != nil {
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
	err := s.cfg.Store.Update(ctx, codeLock(hash), func(txn kv.Txn) error {
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
	if e := s.spendFailed(ctx, &codeSecret, c, err, spent.Used, spent.GrantID); e != nil {
		return nil, e
	}
	resp, e := s.tokens(ctx, g, g.Scopes, refresh, now)
	if e == nil {
		s.log.InfoContext(ctx, "oauth grant created", "grant_id", g.ID, "client_id", c.ID, "key_id", g.KeyID, "org_id", g.OrgID, "scope", joinScopes(g.Scopes))
	}
	return resp, e
}

// tokens answers a redemption that extended grant g: an access token
// carrying scopes, and the refresh token when there is one.
func (s *Server) tokens(ctx context.Context, g *grant, scopes []perm.Permission, refresh string, now time.Time) (*tokenResponse, *endpointError) {
	access, err := s.issueAccess(g, scopes, now)
	if err != nil {
		s.log.ErrorContext(ctx, "oauth access token failed", "error", err)
		return nil, errServer
	}
	return &tokenResponse{
		AccessToken:  access,
		TokenType:    "Bearer",
		ExpiresIn:    int64(s.cfg.AccessTTL / time.Second),
		RefreshToken: refresh,
		Scope:        joinScopes(scopes),
	}, nil
}

// grantUsable checks, before a redemption gives tokens of grant g, that
// its API key may still be used (else refused is the answer's description)
// and writes down the use of client c.
func (s *Server) grantUsable(ctx context.Context, c *client, g *grant, now time.Time, refused string) *endpointError {
	if _, err := s.keyPrincipal(ctx, g); err != nil {
		if errors.Is(err, ErrInvalidToken) {
			return tokenFail("invalid_grant", "%s", refused)
		}
		s.log.ErrorContext(ctx, "oauth key lookup failed", "error", err)
		return errServer
	}
	return s.clientUsed(ctx, c, now)
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

// secretKind is what tells an authorization code from a refresh token
// where both are redeemed alike: each is stored under its hash and spent
// once, kept marked used until it expires, and a second use revokes the
// grant it gave or belongs to (RFC 6749 §4.1.2, §10.4).
type secretKind struct {
	prefix string
	// Log messages.
	lookupFailed, deleteFailed, reusedWarning, spendFailed string
	// Descriptions of invalid_grant answers.
	invalid, expired, reused string
	// revokeReason is why a reuse revokes the grant.
	revokeReason string
}

var (
	codeSecret = secretKind{
		prefix:        prefixCode,
		lookupFailed:  "oauth code lookup failed",
		deleteFailed:  "oauth code deletion failed",
		reusedWarning: "oauth authorization code reused",
		spendFailed:   "oauth grant creation failed",
		invalid:       "the code is invalid, expired or already used",
		expired:       "the code expired",
		reused:        "the code was already used",
		revokeReason:  "authorization code reused",
	}
	refreshSecret = secretKind{
		prefix:        prefixRefresh,
		lookupFailed:  "oauth refresh token lookup failed",
		deleteFailed:  "oauth refresh token deletion failed",
		reusedWarning: "oauth refresh token reused",
		spendFailed:   "oauth refresh failed",
		invalid:       "the refresh token is invalid or expired",
		expired:       "the refresh token expired",
		reused:        "the refresh token was already used; the connection is revoked",
		revokeReason:  "refresh token reused",
	}
)

// lookupSecret reads the record of a code or refresh token into rec and
// returns its hash and key; an unknown one is answered invalid_grant.
func (s *Server) lookupSecret(ctx context.Context, k *secretKind, secret string, rec any) (hash, key string, e *endpointError) {
	hash = hashSecret(secret)
	key = k.prefix + hash
	found, err := getJSON(ctx, s.cfg.Store, key, rec)
	if err != nil {
		s.log.ErrorContext(ctx, k.lookupFailed, "error", err)
		return "", "", errServer
	}
	if !found {
		return "", "", tokenFail("invalid_grant", "%s", k.invalid)
	}
	return hash, key, nil
}

// expired answers an expired code or refresh token, removing its record
// (key, expiring at expires) without waiting for Sweep.
func (s *Server) expired(ctx context.Context, k *secretKind, key string, expires time.Time) *endpointError {
	if err := s.deleteRecord(key, expires); err != nil {
		s.log.ErrorContext(ctx, k.deleteFailed, "error", err)
	}
	return tokenFail("invalid_grant", "%s", k.expired)
}

// reused answers a spent code or refresh token used again: its grant is
// revoked.
func (s *Server) reused(ctx context.Context, k *secretKind, c *client, grantID string) *endpointError {
	s.log.WarnContext(ctx, k.reusedWarning, "client_id", c.ID, "grant_id", grantID)
	if err := s.revokeGrant(ctx, grantID, k.revokeReason); err != nil {
		s.log.ErrorContext(ctx, "oauth grant revocation failed", "grant_id", grantID, "error", err)
		return errServer
	}
	return tokenFail("invalid_grant", "%s", k.reused)
}

// spendFailed answers the transaction spending a code or refresh token
// that failed with err (nil: it did not); used and grantID are the
// record as the transaction found it.
func (s *Server) spendFailed(ctx context.Context, k *secretKind, c *client, err error, used bool, grantID string) *endpointError {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errSpent) && used:
		return s.reused(ctx, k, c, grantID)
	case errors.Is(err, errSpent):
		return tokenFail("invalid_grant", "%s", k.invalid)
	case errors.Is(err, errRevoked):
		return tokenFail("invalid_grant", "the connection was revoked")
	}
	s.log.ErrorContext(ctx, k.spendFailed, "error", err)
	return errServer
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
	// As for codes: checks first, then one transaction under the grant's
	// lock spends the token and extends the grant unless someone spent it
	// or revoked the grant meanwhile.
	var rec refreshToken
	_, key, e := s.lookupSecret(ctx, &refreshSecret, token, &rec)
	if e != nil {
		return nil, e
	}
	if rec.ClientID != c.ID {
		return nil, tokenFail("invalid_grant", "the refresh token was issued to another client")
	}
	now := s.now()
	if rec.Used {
		return nil, s.reused(ctx, &refreshSecret, c, rec.GrantID)
	}
	if !now.Before(rec.Expires) {
		return nil, s.expired(ctx, &refreshSecret, key, rec.Expires)
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
	found, err := getJSON(ctx, s.cfg.Store, grantKey(rec.GrantID), &g)
	if err != nil {
		s.log.ErrorContext(ctx, "oauth grant lookup failed", "error", err)
		return nil, errServer
	}
	if !found || g.Revoked {
		return nil, tokenFail("invalid_grant", "the connection was revoked")
	}
	if e := s.grantUsable(ctx, c, &g, now, "the connection was revoked: its API key can no longer be used"); e != nil {
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
		if g.LastUsed.IsZero() || now.Sub(g.LastUsed) >= grantUseEvery {
			g.LastUsed = now.UTC()
		}
		spent.Used = true
		return errors.Join(
			saveRecord(txn, key, &spent, spent.Expires),
			saveRecord(txn, prefixRefresh+hashSecret(next), nextRec, nextRec.Expires),
			saveRecord(txn, grantKey(g.ID), &g, g.Expires))
	})
	if e := s.spendFailed(ctx, &refreshSecret, c, err, spent.Used, spent.GrantID); e != nil {
		return nil, e
	}
	return s.tokens(ctx, &g, scopes, next, now)
}

var errRevoked = errors.New("grant revoked")

// Revoke revokes a token's grant (POST /oauth/revoke, RFC 7009): a refresh
// token's, or an access token's. Tokens it does not know, or that belong to
// another client, are answered 200 all the same.
func (s *Server) Revoke(w http.ResponseWriter, r *http.Request) {
	form, c := s.endpointRequest(w, r)
	if c == nil {
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
