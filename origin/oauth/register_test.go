package oauth

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
)

func TestRegister(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name       string
		metadata   map[string]any
		wantMethod string
		wantSecret bool
	}{
		{"public client", map[string]any{"client_name": "Claude", "redirect_uris": []string{"http://127.0.0.1:33418/callback"}, "token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}}, "none", false},
		{"confidential by default", map[string]any{"redirect_uris": []string{"https://app.example/cb"}}, "client_secret_basic", true},
		{"confidential, secret in the form", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "token_endpoint_auth_method": "client_secret_post"}, "client_secret_post", true},
		{"private-use scheme", map[string]any{"redirect_uris": []string{"com.example.app:/cb"}, "token_endpoint_auth_method": "none"}, "none", false},
		{"loopback names", map[string]any{"redirect_uris": []string{"http://localhost/cb", "http://[::1]:8080/cb", "http://127.0.0.1/cb?x=1"}, "token_endpoint_auth_method": "none"}, "none", false},
		{"with scope", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "scope": "images:read images:create"}, "client_secret_basic", true},
		{"unknown members ignored", map[string]any{"redirect_uris": []string{"https://app.example/cb"}, "logo_uri": "https://app.example/logo.png", "software_id": "x"}, "client_secret_basic", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := e.register(t, tt.metadata)
			id, _ := got["client_id"].(string)
			if id == "" || got["client_id_issued_at"] != float64(t0.Unix()) {
				t.Fatalf("answer %v", got)
			}
			if got["token_endpoint_auth_method"] != tt.wantMethod {
				t.Errorf("token_endpoint_auth_method %v, want %s", got["token_endpoint_auth_method"], tt.wantMethod)
			}
			secret, hasSecret := got["client_secret"].(string)
			if hasSecret != tt.wantSecret {
				t.Fatalf("client_secret present %v, want %v", hasSecret, tt.wantSecret)
			}
			if tt.wantSecret && (got["client_secret_expires_at"] != float64(0) || len(secret) < 43) {
				t.Errorf("secret %q, expires %v", secret, got["client_secret_expires_at"])
			}
			uris, _ := json.Marshal(got["redirect_uris"])
			want, _ := json.Marshal(tt.metadata["redirect_uris"])
			if string(uris) != string(want) {
				t.Errorf("redirect_uris %s, want %s", uris, want)
			}
			raw, err := e.store.Get([]byte(prefixClient + id))
			if err != nil {
				t.Fatal(err)
			}
			if hasSecret && strings.Contains(string(raw), secret) {
				t.Error("the client secret is stored in the clear")
			}
		})
	}
}

func TestRegisterRefused(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"no redirect_uris", `{"client_name":"x"}`, 400, "invalid_redirect_uri"},
		{"empty redirect_uris", `{"redirect_uris":[]}`, 400, "invalid_redirect_uri"},
		{"eleven redirect_uris", `{"redirect_uris":["https://a/1","https://a/2","https://a/3","https://a/4","https://a/5","https://a/6","https://a/7","https://a/8","https://a/9","https://a/10","https://a/11"]}`, 400, "invalid_redirect_uri"},
		{"redirect_uris not strings", `{"redirect_uris":[1]}`, 400, "invalid_redirect_uri"},
		{"relative", `{"redirect_uris":["/callback"]}`, 400, "invalid_redirect_uri"},
		{"fragment", `{"redirect_uris":["https://app.example/cb#x"]}`, 400, "invalid_redirect_uri"},
		{"empty fragment", `{"redirect_uris":["https://app.example/cb#"]}`, 400, "invalid_redirect_uri"},
		{"http on a public host", `{"redirect_uris":["http://app.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"http on a private address", `{"redirect_uris":["http://10.0.0.1/cb"]}`, 400, "invalid_redirect_uri"},
		{"http on a loopback lookalike", `{"redirect_uris":["http://127.0.0.1.app.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"javascript", `{"redirect_uris":["javascript:alert(1)"]}`, 400, "invalid_redirect_uri"},
		{"javascript, upper case", `{"redirect_uris":["JavaScript:alert(1)//"]}`, 400, "invalid_redirect_uri"},
		{"data", `{"redirect_uris":["data:text/html,<script>alert(1)</script>"]}`, 400, "invalid_redirect_uri"},
		{"user info", `{"redirect_uris":["https://user:pw@app.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"https without host", `{"redirect_uris":["https:///cb"]}`, 400, "invalid_redirect_uri"},
		{"space", `{"redirect_uris":["https://app.example/c b"]}`, 400, "invalid_redirect_uri"},
		{"one bad among good", `{"redirect_uris":["https://app.example/cb","http://evil.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"unknown auth method", `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, 400, "invalid_client_metadata"},
		{"implicit grant", `{"redirect_uris":["https://app.example/cb"],"grant_types":["implicit"]}`, 400, "invalid_client_metadata"},
		{"refresh only", `{"redirect_uris":["https://app.example/cb"],"grant_types":["refresh_token"]}`, 400, "invalid_client_metadata"},
		{"token response type", `{"redirect_uris":["https://app.example/cb"],"response_types":["token"]}`, 400, "invalid_client_metadata"},
		{"long name", `{"redirect_uris":["https://app.example/cb"],"client_name":"` + strings.Repeat("n", 201) + `"}`, 400, "invalid_client_metadata"},
		{"control character in name", `{"redirect_uris":["https://app.example/cb"],"client_name":"a\u202eb"}`, 400, "invalid_client_metadata"},
		{"name not a string", `{"redirect_uris":["https://app.example/cb"],"client_name":5}`, 400, "invalid_client_metadata"},
		{"unknown scope", `{"redirect_uris":["https://app.example/cb"],"scope":"images:read admin"}`, 400, "invalid_client_metadata"},
		{"api key scope", `{"redirect_uris":["https://app.example/cb"],"scope":"api_keys:read"}`, 400, "invalid_client_metadata"},
		{"not JSON", `redirect_uris=x`, 400, "invalid_client_metadata"},
		{"array", `[{"redirect_uris":["https://app.example/cb"]}]`, 400, "invalid_client_metadata"},
		{"trailing data", `{"redirect_uris":["https://app.example/cb"]} {}`, 400, "invalid_client_metadata"},
		{"body too large", `{"redirect_uris":["https://app.example/cb"],"client_name":"` + strings.Repeat("x", 65<<10) + `"}`, 413, "invalid_client_metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := e.postJSON(t, "/oauth/register", tt.body)
			wantOAuthError(t, a, tt.status, tt.code)
			if a.json(t)["error_description"] == "" {
				t.Error("no error_description")
			}
		})
	}
	t.Run("wrong content type", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, e.url+"/oauth/register", strings.NewReader(`{"redirect_uris":["https://app.example/cb"]}`))
		req.Header.Set("Content-Type", "text/plain")
		wantOAuthError(t, do(t, e.browser(t), req), http.StatusUnsupportedMediaType, "invalid_client_metadata")
	})
	it := e.store.Iterate([]byte(prefixClient), kv.IterOptions{})
	defer it.Close()
	if it.Next() {
		t.Errorf("a refused registration stored %s", it.Key())
	}
}

func TestRegisterRateLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Registrations = Limit{N: 1, Per: time.Minute, Burst: 2} })
	body := `{"redirect_uris":["https://app.example/cb"]}`
	for i := range 2 {
		if a := e.postJSON(t, "/oauth/register", body); a.status != http.StatusCreated {
			t.Fatalf("registration %d: status %d", i, a.status)
		}
	}
	a := e.postJSON(t, "/oauth/register", body)
	wantOAuthError(t, a, http.StatusTooManyRequests, "temporarily_unavailable")
	if a.header.Get("Retry-After") != "60" {
		t.Errorf("Retry-After %q, want 60", a.header.Get("Retry-After"))
	}
	e.clock.Advance(time.Minute)
	if a := e.postJSON(t, "/oauth/register", body); a.status != http.StatusCreated {
		t.Fatalf("after a minute: status %d", a.status)
	}
}
