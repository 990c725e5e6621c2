package oauth

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestTokenClientAuthentication(t *testing.T) {
	e := newEnv(t)
	basicClient := e.register(t, map[string]any{"redirect_uris": []string{testRedirect}})
	postClient := e.register(t, map[string]any{"redirect_uris": []string{testRedirect}, "token_endpoint_auth_method": "client_secret_post"})
	publicID := e.publicClient(t)
	basicID, basicSecret := basicClient["client_id"].(string), basicClient["client_secret"].(string)
	postID, postSecret := postClient["client_id"].(string), postClient["client_secret"].(string)
	keyPerms := perms("images:read")

	tests := []struct {
		name      string
		clientID  string
		form      url.Values // added to the code exchange
		basic     []string
		status    int
		code      string
		challenge bool // WWW-Authenticate: Basic expected
	}{
		{"confidential by Basic", basicID, url.Values{"client_id": nil}, []string{basicID, basicSecret}, 200, "", false},
		{"confidential by Basic with client_id", basicID, nil, []string{basicID, basicSecret}, 200, "", false},
		{"confidential by post", postID, url.Values{"client_secret": {postSecret}}, nil, 200, "", false},
		{"basic client may post its secret", basicID, url.Values{"client_secret": {basicSecret}}, nil, 200, "", false},
		{"wrong secret by Basic", basicID, nil, []string{basicID, basicSecret + "x"}, 401, "invalid_client", true},
		{"wrong secret by post", postID, url.Values{"client_secret": {"nope"}}, nil, 401, "invalid_client", false},
		{"no secret", basicID, nil, nil, 401, "invalid_client", false},
		{"both methods", basicID, url.Values{"client_secret": {basicSecret}}, []string{basicID, basicSecret}, 400, "invalid_request", false},
		{"Basic for another client_id", basicID, url.Values{"client_id": {postID}}, []string{basicID, basicSecret}, 401, "invalid_client", true},
		{"public client", publicID, nil, nil, 200, "", false},
		{"public client with a secret", publicID, url.Values{"client_secret": {"x"}}, nil, 401, "invalid_client", false},
		{"unknown client", "f0f0f0f0-0000-4000-8000-000000000000", nil, nil, 401, "invalid_client", false},
		{"unknown client by Basic", "f0f0f0f0-0000-4000-8000-000000000000", nil, []string{"f0f0f0f0-0000-4000-8000-000000000000", "x"}, 401, "invalid_client", true},
		{"code of another client", publicID, url.Values{"client_id": {basicID}}, []string{basicID, basicSecret}, 400, "invalid_grant", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			owner := tt.clientID
			if tt.name == "unknown client" || tt.name == "unknown client by Basic" {
				owner = publicID
			}
			c := e.approve(t, owner, "", keyPerms, "images:read")
			form := url.Values{
				"grant_type": {"authorization_code"}, "code": {c.code}, "redirect_uri": {c.redirectURI},
				"code_verifier": {c.verifier}, "client_id": {tt.clientID},
			}
			for k, v := range tt.form {
				if v == nil {
					form.Del(k)
				} else {
					form[k] = v
				}
			}
			a := e.postForm(t, e.browser(t), "/oauth/token", form, tt.basic...)
			if tt.status == 200 {
				if a.status != 200 {
					t.Fatalf("status %d, body %s", a.status, a.body)
				}
				return
			}
			wantOAuthError(t, a, tt.status, tt.code)
			if got := a.header.Get("WWW-Authenticate"); (got != "") != tt.challenge {
				t.Errorf("WWW-Authenticate %q", got)
			}
		})
	}
}

func TestTokenRequestErrors(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	c := e.approve(t, clientID, "", perms("images:read"), "images:read")
	base := func() url.Values {
		return url.Values{"grant_type": {"authorization_code"}, "code": {c.code}, "redirect_uri": {c.redirectURI}, "code_verifier": {c.verifier}, "client_id": {clientID}}
	}
	tests := []struct {
		name   string
		modify func(url.Values)
		code   string
	}{
		{"no grant_type", func(f url.Values) { f.Del("grant_type") }, "invalid_request"},
		{"password grant", func(f url.Values) { f.Set("grant_type", "password") }, "unsupported_grant_type"},
		{"client credentials grant", func(f url.Values) { f.Set("grant_type", "client_credentials") }, "unsupported_grant_type"},
		{"no code", func(f url.Values) { f.Del("code") }, "invalid_request"},
		{"unknown code", func(f url.Values) { f.Set("code", newSecret()) }, "invalid_grant"},
		{"no verifier", func(f url.Values) { f.Del("code_verifier") }, "invalid_request"},
		{"short verifier", func(f url.Values) { f.Set("code_verifier", "abc") }, "invalid_request"},
		{"no redirect_uri", func(f url.Values) { f.Del("redirect_uri") }, "invalid_request"},
		{"other resource", func(f url.Values) { f.Set("resource", "https://other.example/mcp") }, "invalid_target"},
		{"repeated code", func(f url.Values) { f.Add("code", "x") }, "invalid_request"},
		{"no refresh_token", func(f url.Values) { f.Set("grant_type", "refresh_token") }, "invalid_request"},
		{"unknown refresh_token", func(f url.Values) { f.Set("grant_type", "refresh_token"); f.Set("refresh_token", newSecret()) }, "invalid_grant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := base()
			tt.modify(f)
			wantOAuthError(t, e.postForm(t, e.browser(t), "/oauth/token", f), http.StatusBadRequest, tt.code)
		})
	}
	t.Run("not a form", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, e.url+"/oauth/token", nil)
		req.Header.Set("Content-Type", "application/json")
		wantOAuthError(t, do(t, e.browser(t), req), http.StatusBadRequest, "invalid_request")
	})
	// None of the refused attempts spent the code.
	if a := e.exchange(t, c); a.status != http.StatusOK {
		t.Fatalf("status %d, body %s", a.status, a.body)
	}
}

func TestTokenResourceGiven(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	c := e.approve(t, clientID, "", perms("images:read"), "images:read")
	a := e.postForm(t, e.browser(t), "/oauth/token", url.Values{
		"grant_type": {"authorization_code"}, "code": {c.code}, "redirect_uri": {c.redirectURI},
		"code_verifier": {c.verifier}, "client_id": {clientID}, "resource": {e.url + "/mcp"},
	})
	if a.status != http.StatusOK {
		t.Fatalf("status %d, body %s", a.status, a.body)
	}
}

func TestRefresh(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	ctx := context.Background()
	c := e.approve(t, clientID, "", perms("images:read", "images:create", "templates:read"), "images:read", "images:create", "templates:read")
	_, first := e.tokens(t, c)

	// Rotation: each use gives a new refresh token and spends the old one.
	a := e.refresh(t, clientID, first)
	if a.status != http.StatusOK {
		t.Fatalf("refresh: status %d, body %s", a.status, a.body)
	}
	m := a.json(t)
	second := m["refresh_token"].(string)
	if second == first || m["scope"] != "images:create images:read templates:read" || a.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("refresh answer %v", m)
	}

	// Narrowing: the access token has less, the refresh token keeps the grant.
	a = e.refresh(t, clientID, second, "scope", "images:read")
	m = a.json(t)
	if a.status != http.StatusOK || m["scope"] != "images:read" {
		t.Fatalf("narrowed refresh: status %d, %v", a.status, m)
	}
	pr, err := e.srv.Verify(ctx, m["access_token"].(string))
	if err != nil || !slices.Equal(pr.Grant.Permissions, perms("images:read")) {
		t.Fatalf("narrowed token: %+v, %v", pr, err)
	}
	third := m["refresh_token"].(string)

	// Widening is refused and spends nothing.
	wantOAuthError(t, e.refresh(t, clientID, third, "scope", "images:read usage:read"), http.StatusBadRequest, "invalid_scope")
	wantOAuthError(t, e.refresh(t, clientID, third, "scope", "api_keys:read"), http.StatusBadRequest, "invalid_scope")
	other := e.publicClient(t)
	wantOAuthError(t, e.refresh(t, other, third), http.StatusBadRequest, "invalid_grant")
	a = e.refresh(t, clientID, third)
	m = a.json(t)
	if a.status != http.StatusOK || m["scope"] != "images:create images:read templates:read" {
		t.Fatalf("refresh after narrowing: status %d, %v", a.status, m)
	}
	current := m["access_token"].(string)
	if _, err := e.srv.Verify(ctx, current); err != nil {
		t.Fatal(err)
	}

	// Reuse of a spent refresh token revokes the whole grant.
	wantOAuthError(t, e.refresh(t, clientID, first), http.StatusBadRequest, "invalid_grant")
	if _, err := e.srv.Verify(ctx, current); !isInvalid(err, "token revoked") {
		t.Fatalf("Verify after reuse: %v", err)
	}
	wantOAuthError(t, e.refresh(t, clientID, m["refresh_token"].(string)), http.StatusBadRequest, "invalid_grant")
}

func TestExpiry(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	ctx := context.Background()
	keyPerms := perms("images:read")

	t.Run("access token", func(t *testing.T) {
		access, refresh := e.tokens(t, e.approve(t, clientID, "", keyPerms, "images:read"))
		e.clock.Advance(e.cfg.AccessTTL - time.Second)
		if _, err := e.srv.Verify(ctx, access); err != nil {
			t.Fatalf("a second before expiry: %v", err)
		}
		e.clock.Advance(time.Second)
		if _, err := e.srv.Verify(ctx, access); !isInvalid(err, "token expired") {
			t.Fatalf("at expiry: %v", err)
		}
		if a := e.refresh(t, clientID, refresh); a.status != http.StatusOK {
			t.Fatalf("refresh after the access token expired: %d", a.status)
		}
	})
	t.Run("code", func(t *testing.T) {
		c := e.approve(t, clientID, "", keyPerms, "images:read")
		e.clock.Advance(e.cfg.CodeTTL)
		wantOAuthError(t, e.exchange(t, c), http.StatusBadRequest, "invalid_grant")
		if _, err := e.store.Get(ctx, []byte(prefixCode+hashSecret(c.code))); err == nil {
			t.Error("the expired code is still stored")
		}
	})
	t.Run("refresh token", func(t *testing.T) {
		_, refresh := e.tokens(t, e.approve(t, clientID, "", keyPerms, "images:read"))
		e.clock.Advance(e.cfg.RefreshTTL - time.Second)
		a := e.refresh(t, clientID, refresh)
		if a.status != http.StatusOK {
			t.Fatalf("a second before expiry: %d %s", a.status, a.body)
		}
		next := a.json(t)["refresh_token"].(string)
		e.clock.Advance(e.cfg.RefreshTTL)
		wantOAuthError(t, e.refresh(t, clientID, next), http.StatusBadRequest, "invalid_grant")
	})
}

// TestConcurrentRedemption: of many redemptions of one code, or one
// refresh token, at once on two servers sharing a store (two origins),
// exactly one gets tokens; the others count as reuse, so the grant ends
// revoked.
func TestConcurrentRedemption(t *testing.T) {
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) {
			envs := newEnvPair(t, tc.Pair(t))
			e := envs[0]
			clientID := e.publicClient(t)
			for _, kind := range []string{"code", "refresh token"} {
				t.Run(kind, func(t *testing.T) {
					c := e.approve(t, clientID, "", perms("images:read"), "images:read")
					var refresh string
					if kind == "refresh token" {
						_, refresh = e.tokens(t, c)
					}
					const n = 16
					answers := make([]*answer, n)
					var wg sync.WaitGroup
					start := make(chan struct{})
					for i := range n {
						wg.Go(func() {
							<-start
							if refresh != "" {
								answers[i] = envs[i%2].refresh(t, clientID, refresh)
							} else {
								answers[i] = envs[i%2].exchange(t, c)
							}
						})
					}
					close(start)
					wg.Wait()
					var won *answer
					for _, a := range answers {
						switch a.status {
						case http.StatusOK:
							if won != nil {
								t.Fatalf("two redemptions succeeded: %s and %s", won.body, a.body)
							}
							won = a
						case http.StatusBadRequest:
							wantOAuthError(t, a, http.StatusBadRequest, "invalid_grant")
						default:
							t.Fatalf("status %d: %s", a.status, a.body)
						}
					}
					if won == nil {
						t.Fatal("no redemption succeeded")
					}
					// Every loser found the code or token spent: reuse, which
					// revoked the winner's grant on both servers.
					access := won.json(t)["access_token"].(string)
					for i, env := range envs {
						if _, err := env.srv.Verify(context.Background(), access); !isInvalid(err, "token revoked") {
							t.Fatalf("server %d: Verify of the winner's access token: %v, want revoked", i, err)
						}
					}
					if next, _ := won.json(t)["refresh_token"].(string); next != "" {
						wantOAuthError(t, envs[1].refresh(t, clientID, next), http.StatusBadRequest, "invalid_grant")
					}
				})
			}
		})
	}
}

func TestRevokeEndpoint(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	other := e.publicClient(t)
	ctx := context.Background()
	keyPerms := perms("images:read")
	revoke := func(t *testing.T, clientID, token string) *answer {
		return e.postForm(t, e.browser(t), "/oauth/revoke", url.Values{"token": {token}, "client_id": {clientID}})
	}

	t.Run("refresh token", func(t *testing.T) {
		access, refresh := e.tokens(t, e.approve(t, clientID, "", keyPerms, "images:read"))
		if a := revoke(t, clientID, refresh); a.status != http.StatusOK {
			t.Fatalf("status %d %s", a.status, a.body)
		}
		if _, err := e.srv.Verify(ctx, access); !isInvalid(err, "token revoked") {
			t.Fatalf("Verify: %v", err)
		}
		wantOAuthError(t, e.refresh(t, clientID, refresh), http.StatusBadRequest, "invalid_grant")
	})
	t.Run("access token", func(t *testing.T) {
		access, refresh := e.tokens(t, e.approve(t, clientID, "", keyPerms, "images:read"))
		if a := revoke(t, clientID, access); a.status != http.StatusOK {
			t.Fatalf("status %d", a.status)
		}
		wantOAuthError(t, e.refresh(t, clientID, refresh), http.StatusBadRequest, "invalid_grant")
	})
	t.Run("another client's token", func(t *testing.T) {
		access, refresh := e.tokens(t, e.approve(t, clientID, "", keyPerms, "images:read"))
		for _, tok := range []string{access, refresh} {
			if a := revoke(t, other, tok); a.status != http.StatusOK {
				t.Fatalf("status %d", a.status)
			}
		}
		if _, err := e.srv.Verify(ctx, access); err != nil {
			t.Fatalf("another client revoked the grant: %v", err)
		}
	})
	t.Run("unknown token", func(t *testing.T) {
		if a := revoke(t, clientID, "nonsense"); a.status != http.StatusOK {
			t.Fatalf("status %d", a.status)
		}
	})
	t.Run("unknown client", func(t *testing.T) {
		wantOAuthError(t, revoke(t, "f0f0f0f0-0000-4000-8000-000000000000", "x"), http.StatusUnauthorized, "invalid_client")
	})
}

func TestRevokeKeyAndOrg(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	ctx := context.Background()
	a1, _ := e.tokens(t, e.approve(t, clientID, "", perms("images:read"), "images:read"))
	c2 := e.approve(t, clientID, "", perms("images:read"), "images:read")
	a2, _ := e.tokens(t, c2)
	a3, _ := e.tokens(t, e.approve(t, clientID, "", perms("images:read"), "images:read"))
	k1, _ := e.srv.Verify(ctx, a1)
	if err := e.srv.RevokeKey(ctx, k1.KeyID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.Verify(ctx, a1); !isInvalid(err, "token revoked") {
		t.Fatalf("revoked key: %v", err)
	}
	if _, err := e.srv.Verify(ctx, a2); err != nil {
		t.Fatalf("another key's connection: %v", err)
	}
	if err := e.srv.RevokeOrg(ctx, "org-1"); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{a2, a3} {
		if _, err := e.srv.Verify(ctx, a); !isInvalid(err, "token revoked") {
			t.Fatalf("revoked organization: %v", err)
		}
	}
}
