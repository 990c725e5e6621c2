package oauth

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/perm"
)

func wantPageHeaders(t *testing.T, a *answer, formAction string) {
	t.Helper()
	csp := a.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "style-src 'unsafe-inline'", "form-action 'self'" + formAction} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	for h, want := range map[string]string{"X-Frame-Options": "DENY", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"} {
		if got := a.header.Get(h); got != want {
			t.Errorf("%s %q, want %q", h, got, want)
		}
	}
}

func TestAuthorizeErrorPages(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	_, challenge := pkce()
	tests := []struct {
		name   string
		modify func(q url.Values)
	}{
		{"unknown client", func(q url.Values) { q.Set("client_id", "0b8e8f2e-0000-4000-8000-000000000000") }},
		{"no client", func(q url.Values) { q.Del("client_id") }},
		{"no redirect_uri", func(q url.Values) { q.Del("redirect_uri") }},
		{"unregistered redirect_uri", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/callback") }},
		{"other path on loopback", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:9999/other") }},
		{"other loopback host", func(q url.Values) { q.Set("redirect_uri", "http://localhost:9999/callback") }},
		{"https instead of http", func(q url.Values) { q.Set("redirect_uri", "https://127.0.0.1:9999/callback") }},
		{"added query", func(q url.Values) { q.Set("redirect_uri", testRedirect+"?next=evil") }},
		{"repeated redirect_uri", func(q url.Values) { q.Add("redirect_uri", "https://evil.example/cb") }},
		// Errors that would otherwise redirect do not when the redirect URI is bad.
		{"bad redirect and no PKCE", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb"); q.Del("code_challenge") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := authorizeQuery(clientID, testRedirect, challenge, "")
			tt.modify(q)
			a := e.get(t, e.browser(t), "/oauth/authorize?"+q.Encode())
			if a.status != http.StatusBadRequest || a.header.Get("Location") != "" {
				t.Fatalf("status %d, Location %q; want an error page", a.status, a.header.Get("Location"))
			}
			if !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
				t.Errorf("Content-Type %q", a.header.Get("Content-Type"))
			}
			wantPageHeaders(t, a, "")
		})
	}
}

func TestAuthorizeRedirectsErrors(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	_, challenge := pkce()
	tests := []struct {
		name   string
		modify func(q url.Values)
		code   string
	}{
		{"no code_challenge", func(q url.Values) { q.Del("code_challenge") }, "invalid_request"},
		{"plain method", func(q url.Values) { q.Set("code_challenge_method", "plain") }, "invalid_request"},
		{"no method", func(q url.Values) { q.Del("code_challenge_method") }, "invalid_request"},
		{"short challenge", func(q url.Values) { q.Set("code_challenge", "abc") }, "invalid_request"},
		{"challenge outside the alphabet", func(q url.Values) { q.Set("code_challenge", strings.Repeat("a", 42)+"=") }, "invalid_request"},
		{"no response_type", func(q url.Values) { q.Del("response_type") }, "invalid_request"},
		{"token response_type", func(q url.Values) { q.Set("response_type", "token") }, "unsupported_response_type"},
		{"unknown scope", func(q url.Values) { q.Set("scope", "images:read images:everything") }, "invalid_scope"},
		{"API key scope", func(q url.Values) { q.Set("scope", "api_keys:read") }, "invalid_scope"},
		{"other resource", func(q url.Values) { q.Set("resource", "https://other.example/mcp") }, "invalid_target"},
		{"empty resource", func(q url.Values) { q.Set("resource", "") }, "invalid_target"},
		{"repeated scope", func(q url.Values) { q["scope"] = []string{"images:read", "images:create"} }, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := authorizeQuery(clientID, testRedirect, challenge, "")
			tt.modify(q)
			a := e.get(t, e.browser(t), "/oauth/authorize?"+q.Encode())
			got := redirected(t, a, testRedirect)
			if got.Get("error") != tt.code || got.Get("state") != "st-123" || got.Get("iss") != e.url || got.Get("error_description") == "" {
				t.Fatalf("redirect query %v, want error %s with state and iss", got, tt.code)
			}
			if got.Has("code") {
				t.Error("an error redirect carries a code")
			}
		})
	}
}

func TestAuthorizeShowsSignIn(t *testing.T) {
	e := newEnv(t)
	loopback := e.register(t, map[string]any{
		"client_name":                "Desk <App>",
		"redirect_uris":              []string{"http://127.0.0.1/callback", "com.example.app:/cb"},
		"token_endpoint_auth_method": "none",
	})["client_id"].(string)
	_, challenge := pkce()
	tests := []struct {
		name        string
		redirectURI string
		extra       url.Values
		formAction  string
	}{
		{"loopback, any port", "http://127.0.0.1:51234/callback", nil, " http://127.0.0.1:51234"},
		{"loopback, registered form", "http://127.0.0.1/callback", nil, " http://127.0.0.1"},
		{"private-use scheme", "com.example.app:/cb", nil, " com.example.app:"},
		{"resource given", "com.example.app:/cb", url.Values{"resource": {e.url + "/mcp"}}, " com.example.app:"},
		{"resource with a trailing slash", "com.example.app:/cb", url.Values{"resource": {e.url + "/mcp/"}}, " com.example.app:"},
		{"scope given", "com.example.app:/cb", url.Values{"scope": {"images:read images:create"}}, " com.example.app:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := authorizeQuery(loopback, tt.redirectURI, challenge, "")
			for k, v := range tt.extra {
				q[k] = v
			}
			a := e.get(t, e.browser(t), "/oauth/authorize?"+q.Encode())
			if a.status != http.StatusOK {
				t.Fatalf("status %d, body %s", a.status, a.body)
			}
			wantPageHeaders(t, a, tt.formAction)
			p := parsePage(t, a.body)
			if p.fields.Get("request") == "" || p.fields.Get("csrf") == "" || !p.fields.Has("api_id") || !p.fields.Has("api_key") {
				t.Fatalf("form fields %v", p.fields)
			}
			if !strings.Contains(a.body, `type="password" id="api_key"`) {
				t.Error("api_key is not a password field")
			}
			if !strings.Contains(p.text, "Desk <App>") || strings.Contains(a.body, "Desk <App>") {
				t.Error("the client's name is not shown, or not escaped")
			}
			var cookie *http.Cookie
			for _, c := range (&http.Response{Header: a.header}).Cookies() {
				if c.Name == csrfCookie {
					cookie = c
				}
			}
			if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/oauth" || cookie.Secure {
				t.Errorf("CSRF cookie %+v", cookie)
			}
		})
	}
}

func TestAuthorizeRegisteredScope(t *testing.T) {
	e := newEnv(t)
	clientID := e.register(t, map[string]any{
		"redirect_uris": []string{testRedirect}, "token_endpoint_auth_method": "none", "scope": "images:read templates:read",
	})["client_id"].(string)
	apiID, apiKey := e.keys.add("key-1", "org-1", perm.Grant{AllFuture: true})
	_, challenge := pkce()
	t.Run("outside the registration", func(t *testing.T) {
		a := e.get(t, e.browser(t), "/oauth/authorize?"+authorizeQuery(clientID, testRedirect, challenge, "images:create").Encode())
		if got := redirected(t, a, testRedirect); got.Get("error") != "invalid_scope" {
			t.Fatalf("redirect %v", got)
		}
	})
	t.Run("default is the registration", func(t *testing.T) {
		consent := e.signIn(t, e.browser(t), authorizeQuery(clientID, testRedirect, challenge, ""), apiID, apiKey)
		if got := parsePage(t, consent.body).checkboxes; !slices.Equal(got, []string{"images:read", "templates:read"}) {
			t.Fatalf("checkboxes %v", got)
		}
	})
}
