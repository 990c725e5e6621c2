package oauth

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/perm"
)

// TestConsentFlow runs a connection from the authorization request to a
// verified access token, with a wrong sign-in on the way.
func TestConsentFlow(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	apiID, apiKey := e.keys.add("key-1", "org-1", perm.Grant{Permissions: perms("images:create", "images:read", "templates:read", "api_keys:read")})
	verifier, challenge := pkce()
	browser := e.browser(t)
	q := authorizeQuery(clientID, testRedirect, challenge, "images:create images:read templates:read usage:read")

	wrong := e.signIn(t, browser, q, apiID, apiKey+"x")
	if wrong.status != http.StatusOK {
		t.Fatalf("wrong credentials: status %d", wrong.status)
	}
	p := parsePage(t, wrong.body)
	if !strings.Contains(p.errorText, "Wrong API ID or API key") || p.fields.Get("api_id") != apiID || p.fields.Get("api_key") != "" {
		t.Fatalf("wrong credentials page: error %q, fields %v", p.errorText, p.fields)
	}
	wantPageHeaders(t, wrong, " http://127.0.0.1:9999")

	// The form shown again takes the right credentials.
	form := p.fields
	form.Set("api_key", apiKey)
	consent := e.postForm(t, browser, "/oauth/authorize", form)
	if consent.status != http.StatusOK {
		t.Fatalf("sign in: status %d, body %s", consent.status, consent.body)
	}
	wantPageHeaders(t, consent, " http://127.0.0.1:9999")
	cp := parsePage(t, consent.body)
	// Requested and held: usage:read is not held, api_keys:read not requested (nor allowed).
	want := []string{"images:create", "images:read", "templates:read"}
	if !slices.Equal(cp.checkboxes, want) || !slices.Equal(cp.checked, want) {
		t.Fatalf("checkboxes %v (checked %v), want %v all checked", cp.checkboxes, cp.checked, want)
	}
	if !slices.Equal(cp.buttons, []string{"approve", "deny"}) || !strings.Contains(cp.text, "Create images") {
		t.Fatalf("buttons %v, text %q", cp.buttons, cp.text)
	}

	// Approving a subset, plus a permission that was never offered.
	loc := redirected(t, e.decide(t, browser, consent, "approve", "images:read", "templates:read", "usage:read", "api_keys:read"), testRedirect)
	if loc.Get("state") != "st-123" || loc.Get("iss") != e.url || len(loc.Get("code")) < 43 {
		t.Fatalf("redirect %v", loc)
	}
	c := &connection{clientID: clientID, redirectURI: testRedirect, verifier: verifier, code: loc.Get("code")}

	wrongVerifier := *c
	wrongVerifier.verifier, _ = pkce()
	wantOAuthError(t, e.exchange(t, &wrongVerifier), http.StatusBadRequest, "invalid_grant")
	otherRedirect := *c
	otherRedirect.redirectURI = "http://127.0.0.1:9998/callback"
	wantOAuthError(t, e.exchange(t, &otherRedirect), http.StatusBadRequest, "invalid_grant")

	a := e.exchange(t, c)
	if a.status != http.StatusOK {
		t.Fatalf("token: status %d, body %s", a.status, a.body)
	}
	if a.header.Get("Cache-Control") != "no-store" || a.header.Get("Pragma") != "no-cache" {
		t.Errorf("token answer headers %v", a.header)
	}
	tok := a.json(t)
	if tok["token_type"] != "Bearer" || tok["expires_in"] != float64(600) || tok["scope"] != "images:read templates:read" || tok["refresh_token"] == "" {
		t.Fatalf("token answer %v", tok)
	}
	pr, err := e.srv.Verify(context.Background(), tok["access_token"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if pr.KeyID != "key-1" || pr.APIID != apiID || pr.Org.ID != "org-1" || !slices.Equal(pr.Grant.Permissions, perms("images:read", "templates:read")) || pr.Grant.AllFuture {
		t.Fatalf("principal %+v", pr)
	}

	// The code is spent: using it again revokes what it gave.
	wantOAuthError(t, e.exchange(t, c), http.StatusBadRequest, "invalid_grant")
	if _, err := e.srv.Verify(context.Background(), tok["access_token"].(string)); !isInvalid(err, "token revoked") {
		t.Fatalf("Verify after code reuse: %v", err)
	}
	wantOAuthError(t, e.refresh(t, clientID, tok["refresh_token"].(string)), http.StatusBadRequest, "invalid_grant")
}

func TestConsentAllFutureKey(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	apiID, apiKey := e.keys.add("key-all", "org-1", perm.Grant{AllFuture: true})
	_, challenge := pkce()
	consent := e.signIn(t, e.browser(t), authorizeQuery(clientID, testRedirect, challenge, ""), apiID, apiKey)
	cp := parsePage(t, consent.body)
	var want []string
	for _, p := range defaultScopes() {
		want = append(want, string(p))
	}
	if !slices.Equal(cp.checkboxes, want) {
		t.Fatalf("checkboxes %v, want every allowed scope %v", cp.checkboxes, want)
	}
}

func TestConsentSignInRefused(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	apiID, apiKey := e.keys.add("key-1", "org-1", perm.Grant{Permissions: perms("images:read")})
	disabledID, disabledKey := e.keys.add("key-2", "org-1", perm.Grant{Permissions: perms("images:read")})
	e.keys.setDisabled("key-2", true)
	suspendedID, suspendedKey := e.keys.add("key-3", "org-2", perm.Grant{Permissions: perms("images:read")})
	e.keys.setSuspended("org-2", true)
	_, challenge := pkce()
	tests := []struct {
		name, apiID, apiKey, message string
	}{
		{"wrong key", apiID, "nope", "Wrong API ID or API key"},
		{"unknown id", "api-unknown", apiKey, "Wrong API ID or API key"},
		{"empty key", apiID, "", "Wrong API ID or API key"},
		{"disabled key", disabledID, disabledKey, "disabled"},
		{"suspended organization", suspendedID, suspendedKey, "suspended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := e.signIn(t, e.browser(t), authorizeQuery(clientID, testRedirect, challenge, ""), tt.apiID, tt.apiKey)
			p := parsePage(t, a.body)
			if a.status != http.StatusOK || a.header.Get("Location") != "" || !strings.Contains(p.errorText, tt.message) || !p.fields.Has("api_key") {
				t.Fatalf("status %d, error %q, fields %v", a.status, p.errorText, p.fields)
			}
		})
	}
}

func TestConsentFailuresLimited(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	otherClient := e.publicClient(t)
	apiID, apiKey := e.keys.add("key-1", "org-1", perm.Grant{Permissions: perms("images:read")})
	_, challenge := pkce()
	q := authorizeQuery(clientID, testRedirect, challenge, "")
	for i := range 5 {
		if a := e.signIn(t, e.browser(t), q, apiID, "wrong"); a.status != http.StatusOK {
			t.Fatalf("failure %d: status %d", i+1, a.status)
		}
	}
	for _, key := range []string{"wrong", apiKey} {
		a := e.signIn(t, e.browser(t), q, apiID, key)
		if a.status != http.StatusTooManyRequests || !strings.Contains(a.body, "Too many failed sign-ins; wait a minute") {
			t.Fatalf("after 5 failures: status %d, body %s", a.status, a.body)
		}
	}
	// Another client's sign-ins are counted apart.
	if a := e.signIn(t, e.browser(t), authorizeQuery(otherClient, testRedirect, challenge, ""), apiID, apiKey); a.status != http.StatusOK || len(parsePage(t, a.body).checkboxes) != 1 {
		t.Fatalf("other client: status %d", a.status)
	}
	e.clock.Advance(time.Minute)
	if a := e.signIn(t, e.browser(t), q, apiID, apiKey); a.status != http.StatusOK || len(parsePage(t, a.body).checkboxes) != 1 {
		t.Fatalf("a minute later: status %d, body %s", a.status, a.body)
	}
	// Successes do not count.
	for range 10 {
		if a := e.signIn(t, e.browser(t), q, apiID, apiKey); a.status != http.StatusOK {
			t.Fatalf("success counted: status %d", a.status)
		}
	}
}

func TestConsentCSRF(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	apiID, apiKey := e.keys.add("key-1", "org-1", perm.Grant{Permissions: perms("images:read")})
	_, challenge := pkce()
	q := authorizeQuery(clientID, testRedirect, challenge, "")

	signInForm := func(t *testing.T, browser *http.Client) url.Values {
		a := e.get(t, browser, "/oauth/authorize?"+q.Encode())
		f := parsePage(t, a.body).fields
		f.Set("api_id", apiID)
		f.Set("api_key", apiKey)
		return f
	}
	tests := []struct {
		name string
		post func(t *testing.T) *answer
	}{
		{"field does not match the cookie", func(t *testing.T) *answer {
			b := e.browser(t)
			f := signInForm(t, b)
			f.Set("csrf", e.srv.csrfField(newSecret()))
			return e.postForm(t, b, "/oauth/authorize", f)
		}},
		{"no field", func(t *testing.T) *answer {
			b := e.browser(t)
			f := signInForm(t, b)
			f.Del("csrf")
			return e.postForm(t, b, "/oauth/authorize", f)
		}},
		{"no cookie", func(t *testing.T) *answer {
			f := signInForm(t, e.browser(t))
			return e.postForm(t, e.browser(t), "/oauth/authorize", f) // a fresh jar
		}},
		{"another browser's cookie and field", func(t *testing.T) *answer {
			// An attacker's own valid cookie and field, with the victim's form state.
			victim := signInForm(t, e.browser(t))
			attacker := e.browser(t)
			af := signInForm(t, attacker)
			victim.Set("csrf", af.Get("csrf"))
			return e.postForm(t, attacker, "/oauth/authorize", victim)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.post(t)
			wantStatus := http.StatusForbidden
			if tt.name == "another browser's cookie and field" {
				wantStatus = http.StatusBadRequest // the state is bound to the victim's cookie
			}
			if a.status != wantStatus || a.header.Get("Location") != "" {
				t.Fatalf("status %d, want %d; body %s", a.status, wantStatus, a.body)
			}
			wantPageHeaders(t, a, "")
			if len(parsePage(t, a.body).checkboxes) != 0 {
				t.Fatal("consent shown")
			}
		})
	}

	t.Run("consent step", func(t *testing.T) {
		b := e.browser(t)
		consent := e.signIn(t, b, q, apiID, apiKey)
		jar, _ := cookiejar.New(nil)
		stranger := &http.Client{Jar: jar, CheckRedirect: b.CheckRedirect}
		if a := e.decide(t, stranger, consent, "approve", "images:read"); a.status != http.StatusForbidden {
			t.Fatalf("approval without the cookie: status %d", a.status)
		}
	})
}

func TestConsentDecisions(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	apiID, apiKey := e.keys.add("key-1", "org-1", perm.Grant{Permissions: perms("images:read", "images:create")})
	_, challenge := pkce()
	q := authorizeQuery(clientID, testRedirect, challenge, "")

	t.Run("deny", func(t *testing.T) {
		b := e.browser(t)
		got := redirected(t, e.decide(t, b, e.signIn(t, b, q, apiID, apiKey), "deny", "images:read"), testRedirect)
		if got.Get("error") != "access_denied" || got.Get("state") != "st-123" || got.Get("iss") != e.url || got.Has("code") {
			t.Fatalf("redirect %v", got)
		}
	})
	t.Run("nothing checked", func(t *testing.T) {
		b := e.browser(t)
		a := e.decide(t, b, e.signIn(t, b, q, apiID, apiKey), "approve")
		p := parsePage(t, a.body)
		if a.status != http.StatusOK || !strings.Contains(p.errorText, "at least one permission") || len(p.checkboxes) != 2 {
			t.Fatalf("status %d, error %q, checkboxes %v", a.status, p.errorText, p.checkboxes)
		}
		// The page shown again still works.
		got := redirected(t, e.decide(t, b, a, "approve", "images:create"), testRedirect)
		if got.Get("code") == "" {
			t.Fatalf("redirect %v", got)
		}
	})
	t.Run("key disabled between the steps", func(t *testing.T) {
		b := e.browser(t)
		consent := e.signIn(t, b, q, apiID, apiKey)
		e.keys.setDisabled("key-1", true)
		defer e.keys.setDisabled("key-1", false)
		a := e.decide(t, b, consent, "approve", "images:read")
		p := parsePage(t, a.body)
		if a.status != http.StatusOK || !p.fields.Has("api_key") || p.errorText == "" {
			t.Fatalf("status %d, error %q", a.status, p.errorText)
		}
	})
	t.Run("key without any requested permission", func(t *testing.T) {
		otherID, otherKey := e.keys.add("key-usage", "org-1", perm.Grant{Permissions: perms("usage:read")})
		b := e.browser(t)
		a := e.signIn(t, b, authorizeQuery(clientID, testRedirect, challenge, "images:read"), otherID, otherKey)
		p := parsePage(t, a.body)
		if len(p.checkboxes) != 0 || !slices.Equal(p.buttons, []string{"deny"}) || p.errorText == "" {
			t.Fatalf("checkboxes %v, buttons %v, error %q", p.checkboxes, p.buttons, p.errorText)
		}
	})
	t.Run("expired page", func(t *testing.T) {
		b := e.browser(t)
		consent := e.signIn(t, b, q, apiID, apiKey)
		e.clock.Advance(pendingTTL)
		if a := e.decide(t, b, consent, "approve", "images:read"); a.status != http.StatusBadRequest || a.header.Get("Location") != "" {
			t.Fatalf("status %d", a.status)
		}
	})
	t.Run("tampered state", func(t *testing.T) {
		b := e.browser(t)
		a := e.get(t, b, "/oauth/authorize?"+q.Encode())
		f := parsePage(t, a.body).fields
		// One character of the sealed request changed to another of the
		// same alphabet, so that only the seal can tell.
		sealed := []byte(f.Get("request"))
		if sealed[40] == 'A' {
			sealed[40] = 'B'
		} else {
			sealed[40] = 'A'
		}
		f.Set("request", string(sealed))
		f.Set("api_id", apiID)
		f.Set("api_key", apiKey)
		if a := e.postForm(t, b, "/oauth/authorize", f); a.status != http.StatusBadRequest {
			t.Fatalf("status %d", a.status)
		}
	})
}
