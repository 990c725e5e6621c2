package oauth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/pictorhq/pictor/origin/perm"
)

// sign makes a token as the server would, changed by modify, signed with key
// under method.
func sign(t *testing.T, e *env, base string, method jwt.SigningMethod, key any, modify func(*accessClaims, map[string]any)) string {
	t.Helper()
	var claims accessClaims
	if _, _, err := jwt.NewParser().ParseUnverified(base, &claims); err != nil {
		t.Fatal(err)
	}
	tok := jwt.NewWithClaims(method, &claims)
	tok.Header["kid"] = e.srv.jwk.Kid
	tok.Header["typ"] = accessTokenType
	if modify != nil {
		modify(&claims, tok.Header)
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestVerifyRefuses(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	ctx := context.Background()
	c := e.approve(t, clientID, "", perms("images:read"), "images:read")
	good, _ := e.tokens(t, c)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name   string
		token  string
		reason string
	}{
		{"empty", "", "malformed token"},
		{"garbage", "not.a.token", "malformed token"},
		{"oversized", strings.Repeat("a", 5000), "malformed token"},
		{"forged with another Ed25519 key", sign(t, e, good, jwt.SigningMethodEdDSA, otherKey, nil), "bad signature or algorithm"},
		{"HS256 keyed with the public key", sign(t, e, good, jwt.SigningMethodHS256, []byte(e.srv.key.Public().(ed25519.PublicKey)), nil), "bad signature or algorithm"},
		{"alg none", sign(t, e, good, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, nil), "bad signature or algorithm"},
		{"signature stripped", good[:strings.LastIndex(good, ".")+1], "bad signature or algorithm"},
		{"unknown kid", sign(t, e, good, jwt.SigningMethodEdDSA, e.srv.key, func(_ *accessClaims, h map[string]any) { h["kid"] = "other" }), "unknown signing key or token type"},
		{"not an access token", sign(t, e, good, jwt.SigningMethodEdDSA, e.srv.key, func(_ *accessClaims, h map[string]any) { h["typ"] = "JWT" }), "unknown signing key or token type"},
		{"wrong audience", sign(t, e, good, jwt.SigningMethodEdDSA, e.srv.key, func(c *accessClaims, _ map[string]any) { c.Audience = jwt.ClaimStrings{e.url + "/other"} }), "wrong audience"},
		{"no audience", sign(t, e, good, jwt.SigningMethodEdDSA, e.srv.key, func(c *accessClaims, _ map[string]any) { c.Audience = nil }), "missing claim"},
		{"wrong issuer", sign(t, e, good, jwt.SigningMethodEdDSA, e.srv.key, func(c *accessClaims, _ map[string]any) { c.Issuer = "https://evil.example" }), "wrong issuer"},
		{"no expiry", sign(t, e, good, jwt.SigningMethodEdDSA, e.srv.key, func(c *accessClaims, _ map[string]any) { c.ExpiresAt = nil }), "missing claim"},
		{"expired", sign(t, e, good, jwt.SigningMethodEdDSA, e.srv.key, func(c *accessClaims, _ map[string]any) { c.ExpiresAt = jwt.NewNumericDate(t0.Add(-time.Second)) }), "token expired"},
		{"not yet valid", sign(t, e, good, jwt.SigningMethodEdDSA, e.srv.key, func(c *accessClaims, _ map[string]any) { c.NotBefore = jwt.NewNumericDate(t0.Add(time.Minute)) }), "token not yet valid"},
		{"unknown grant", sign(t, e, good, jwt.SigningMethodEdDSA, e.srv.key, func(c *accessClaims, _ map[string]any) { c.GrantID = "0190aaaa-0000-7000-8000-000000000000" }), "token revoked"},
		{"another key's subject", sign(t, e, good, jwt.SigningMethodEdDSA, e.srv.key, func(c *accessClaims, _ map[string]any) { c.Subject = "key-other" }), "token revoked"},
		{"no grant id", sign(t, e, good, jwt.SigningMethodEdDSA, e.srv.key, func(c *accessClaims, _ map[string]any) { c.GrantID = "" }), "missing claim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr, err := e.srv.Verify(ctx, tt.token)
			if pr != nil || !isInvalid(err, tt.reason) {
				t.Fatalf("Verify = %v, %v; want %q", pr, err, tt.reason)
			}
			ch := e.srv.Challenge(err)
			if !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, `error_description="`+tt.reason+`"`) {
				t.Errorf("Challenge %s", ch)
			}
		})
	}
	if _, err := e.srv.Verify(ctx, good); err != nil {
		t.Fatalf("the good token after all that: %v", err)
	}
}

// TestVerifyFollowsTheKey: what happens to the approving key reaches the
// connection at once.
func TestVerifyFollowsTheKey(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	ctx := context.Background()
	tests := []struct {
		name   string
		change func(c *connection)
		undo   func(c *connection)
	}{
		{"key disabled", func(c *connection) { e.keys.setDisabled(c.keyID, true) }, func(c *connection) { e.keys.setDisabled(c.keyID, false) }},
		{"key deleted", func(c *connection) { e.keys.remove(c.keyID) }, nil},
		{"organization suspended", func(c *connection) { e.keys.setSuspended("org-1", true) }, func(c *connection) { e.keys.setSuspended("org-1", false) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := e.approve(t, clientID, "", perms("images:read"), "images:read")
			access, refresh := e.tokens(t, c)
			tt.change(c)
			if _, err := e.srv.Verify(ctx, access); !isInvalid(err, "token revoked") {
				t.Fatalf("Verify: %v", err)
			}
			if tt.undo != nil {
				tt.undo(c)
			}
			// For good: re-enabling or resuming does not bring the connection back.
			if _, err := e.srv.Verify(ctx, access); !isInvalid(err, "token revoked") {
				t.Fatalf("Verify after undoing: %v", err)
			}
			wantOAuthError(t, e.refresh(t, clientID, refresh), 400, "invalid_grant")
		})
	}

	t.Run("key disabled, then refresh", func(t *testing.T) {
		c := e.approve(t, clientID, "", perms("images:read"), "images:read")
		access, refresh := e.tokens(t, c)
		e.keys.setDisabled(c.keyID, true)
		wantOAuthError(t, e.refresh(t, clientID, refresh), 400, "invalid_grant")
		e.keys.setDisabled(c.keyID, false)
		if _, err := e.srv.Verify(ctx, access); !isInvalid(err, "token revoked") {
			t.Fatalf("Verify: %v", err)
		}
	})

	t.Run("key disabled before the code is redeemed", func(t *testing.T) {
		c := e.approve(t, clientID, "", perms("images:read"), "images:read")
		e.keys.setDisabled(c.keyID, true)
		wantOAuthError(t, e.exchange(t, c), 400, "invalid_grant")
	})

	t.Run("key's grant narrowed", func(t *testing.T) {
		c := e.approve(t, clientID, "", perms("images:read", "images:create", "templates:read"), "images:read", "images:create")
		access, _ := e.tokens(t, c)
		e.keys.setGrant(c.keyID, perm.Grant{Permissions: perms("images:read", "templates:read")})
		pr, err := e.srv.Verify(ctx, access)
		if err != nil || !slices.Equal(pr.Grant.Permissions, perms("images:read")) {
			t.Fatalf("Verify = %+v, %v", pr, err)
		}
		// Widening the key again gives back no more than was approved.
		e.keys.setGrant(c.keyID, perm.Grant{AllFuture: true})
		pr, err = e.srv.Verify(ctx, access)
		if err != nil || !slices.Equal(pr.Grant.Permissions, perms("images:create", "images:read")) {
			t.Fatalf("Verify = %+v, %v", pr, err)
		}
	})
}

func TestChallenge(t *testing.T) {
	e := newEnv(t)
	want := `Bearer resource_metadata="` + e.url + `/.well-known/oauth-protected-resource/mcp", scope="`
	if got := e.srv.ResourceMetadataURL(); got != e.url+"/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("ResourceMetadataURL %s", got)
	}
	got := e.srv.Challenge(nil)
	if !strings.HasPrefix(got, want) || strings.Contains(got, "error") || !strings.Contains(got, "images:create") || strings.Contains(got, "api_keys") {
		t.Errorf("Challenge(nil) = %s", got)
	}
	if got := e.srv.Challenge(errors.New("store failed")); strings.Contains(got, "error=") {
		t.Errorf("Challenge(store error) = %s", got)
	}
	_, err := e.srv.Verify(context.Background(), "x")
	if got := e.srv.Challenge(err); !strings.HasSuffix(got, `, error="invalid_token", error_description="malformed token"`) {
		t.Errorf("Challenge(invalid) = %s", got)
	}
}
