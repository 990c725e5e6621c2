package oauth

import (
	"net/http"
	"reflect"
	"testing"
)

func TestMetadata(t *testing.T) {
	e := newEnv(t)
	scopes := []any{}
	for _, p := range defaultScopes() {
		scopes = append(scopes, string(p))
	}
	resource := map[string]any{
		"resource":                 e.url + "/mcp",
		"authorization_servers":    []any{e.url},
		"scopes_supported":         scopes,
		"bearer_methods_supported": []any{"header"},
		"resource_name":            "Pictor",
	}
	server := map[string]any{
		"issuer":                                         e.url,
		"authorization_endpoint":                         e.url + "/oauth/authorize",
		"token_endpoint":                                 e.url + "/oauth/token",
		"registration_endpoint":                          e.url + "/oauth/register",
		"revocation_endpoint":                            e.url + "/oauth/revoke",
		"jwks_uri":                                       e.url + "/oauth/jwks",
		"response_types_supported":                       []any{"code"},
		"grant_types_supported":                          []any{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []any{"S256"},
		"token_endpoint_auth_methods_supported":          []any{"none", "client_secret_basic", "client_secret_post"},
		"scopes_supported":                               scopes,
		"authorization_response_iss_parameter_supported": true,
	}
	tests := []struct {
		name string
		path string
		want map[string]any
	}{
		{"protected resource", "/.well-known/oauth-protected-resource", resource},
		{"protected resource at the resource's path", "/.well-known/oauth-protected-resource/mcp", resource},
		{"authorization server", "/.well-known/oauth-authorization-server", server},
		{"openid configuration", "/.well-known/openid-configuration", server},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := e.get(t, e.browser(t), tt.path)
			if a.status != http.StatusOK {
				t.Fatalf("status %d", a.status)
			}
			got := a.json(t)
			for k, want := range tt.want {
				if !reflect.DeepEqual(got[k], want) {
					t.Errorf("%s = %#v, want %#v", k, got[k], want)
				}
			}
			if got := a.header.Get("Access-Control-Allow-Origin"); got != "*" {
				t.Errorf("Access-Control-Allow-Origin %q", got)
			}
			if got := a.header.Get("Cache-Control"); got != "public, max-age=300" {
				t.Errorf("Cache-Control %q", got)
			}
		})
	}
	for _, k := range []string{"api_keys:read", "api_keys:create_update", "api_keys:delete"} {
		for _, s := range scopes {
			if s == k {
				t.Errorf("scopes_supported offers %s", k)
			}
		}
	}
}

func TestJWKS(t *testing.T) {
	e := newEnv(t)
	a := e.get(t, e.browser(t), "/oauth/jwks")
	keys, _ := a.json(t)["keys"].([]any)
	if a.status != http.StatusOK || len(keys) != 1 {
		t.Fatalf("status %d, body %s", a.status, a.body)
	}
	k := keys[0].(map[string]any)
	for field, want := range map[string]any{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": e.srv.jwk.Kid} {
		if k[field] != want {
			t.Errorf("%s = %v, want %v", field, k[field], want)
		}
	}
	if x, _ := k["x"].(string); len(x) != 43 {
		t.Errorf("x %q is not a base64url Ed25519 public key", x)
	}
	if _, ok := k["d"]; ok {
		t.Error("the JWK Set publishes the private key")
	}
}

func TestPreflight(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{
		"/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource/mcp",
		"/oauth/register", "/oauth/token", "/oauth/revoke", "/oauth/jwks",
	} {
		t.Run(path, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodOptions, e.url+path, nil)
			req.Header.Set("Origin", "https://app.example")
			req.Header.Set("Access-Control-Request-Method", "POST")
			a := do(t, e.browser(t), req)
			if a.status != http.StatusNoContent || a.header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatalf("status %d, headers %v", a.status, a.header)
			}
			if a.header.Get("Access-Control-Allow-Headers") == "" || a.header.Get("Access-Control-Allow-Methods") == "" {
				t.Errorf("headers %v", a.header)
			}
		})
	}
}
