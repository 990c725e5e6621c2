package oauth

import (
	"encoding/json"
	"fmt"
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
			raw, err := e.store.Get(t.Context(), []byte(prefixClient+id))
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
	// Refused registrations count against the address too: allow them all.
	e := newEnv(t, func(c *Config) { c.RegistrationsPerAddress = Limit{N: 100, Per: time.Minute, Burst: 100} })
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
	it := e.store.Iterate(t.Context(), []byte(prefixClient), kv.IterOptions{})
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

// registerFrom registers a public client as the edge relays a request of
// a client at address: its address appended to what the client sent as
// X-Forwarded-For.
func (e *env) registerFrom(t *testing.T, forwardedFor string) *answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+"/oauth/register",
		strings.NewReader(`{"redirect_uris":["`+testRedirect+`"],"token_endpoint_auth_method":"none"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", forwardedFor)
	return do(t, e.browser(t), req)
}

// TestHostileRegistrationFlood: one address registering as fast as it can
// gets its own allowance (burst 20, then 10 a minute) and 429 with
// Retry-After past it, and takes nothing from other addresses: they
// register as before. Many addresses at once meet the ceiling of all.
func TestHostileRegistrationFlood(t *testing.T) {
	// A ceiling a little above one address's burst shows that the refused
	// attempts of the flood take nothing from it.
	e := newEnv(t, func(c *Config) { c.Registrations = Limit{N: 50, Per: time.Minute, Burst: 50} })
	if got := e.cfg.RegistrationsPerAddress; got != (Limit{N: 10, Per: time.Minute, Burst: 20}) {
		t.Fatalf("per-address limit %+v, want the default 10/min, burst 20", got)
	}
	const flooder = "203.0.113.7"
	created, refused := 0, 0
	for i := range 200 {
		// What the client sends before the edge's entry changes nothing.
		a := e.registerFrom(t, fmt.Sprintf("10.0.0.%d, %s", i%250, flooder))
		switch a.status {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
			refused++
			wantOAuthError(t, a, http.StatusTooManyRequests, "temporarily_unavailable")
			if got := a.header.Get("Retry-After"); got != "6" {
				t.Fatalf("Retry-After %q, want 6 (10 a minute)", got)
			}
		default:
			t.Fatalf("registration %d: status %d %s", i, a.status, a.body)
		}
	}
	if created != 20 || refused != 180 {
		t.Fatalf("the flooding address registered %d clients and was refused %d times, want 20 and 180", created, refused)
	}
	if a := e.registerFrom(t, "198.51.100.9"); a.status != http.StatusCreated {
		t.Fatalf("another address during the flood: status %d %s", a.status, a.body)
	}
	// An IPv6 client counts by its /64.
	for i := range 20 {
		if a := e.registerFrom(t, fmt.Sprintf("2001:db8::%x", i+1)); a.status != http.StatusCreated {
			t.Fatalf("IPv6 registration %d: status %d", i, a.status)
		}
	}
	if a := e.registerFrom(t, "2001:db8::ffff"); a.status != http.StatusTooManyRequests {
		t.Fatalf("a 21st address of one /64: status %d", a.status)
	}
	if a := e.registerFrom(t, "2001:db8:0:1::1"); a.status != http.StatusCreated {
		t.Fatalf("another /64: status %d", a.status)
	}
	e.clock.Advance(6 * time.Second)
	if a := e.registerFrom(t, flooder); a.status != http.StatusCreated {
		t.Fatalf("the flooding address 6 s later: status %d %s", a.status, a.body)
	}
	if a := e.registerFrom(t, flooder); a.status != http.StatusTooManyRequests {
		t.Fatalf("the flooding address again: status %d %s", a.status, a.body)
	}
	// Of the ceiling's 50, and 5 more for the 6 s, 43 are spent: twelve
	// more addresses register, the thirteenth meets the ceiling of all.
	for i := range 13 {
		a := e.registerFrom(t, fmt.Sprintf("192.0.2.%d", i+1))
		if i < 12 {
			if a.status != http.StatusCreated {
				t.Fatalf("address %d under the ceiling: status %d %s", i, a.status, a.body)
			}
			continue
		}
		wantOAuthError(t, a, http.StatusTooManyRequests, "temporarily_unavailable")
		if a.json(t)["error_description"] != "too many client registrations; try again later" || a.header.Get("Retry-After") != "2" {
			t.Fatalf("at the ceiling: %s, Retry-After %q", a.body, a.header.Get("Retry-After"))
		}
	}
	if got := countKeys(t, e.store, prefixClient); got != 55 {
		t.Fatalf("%d clients stored, want 55", got)
	}
}

// TestHostileRegistrationAddresses: a flood of addresses cannot grow the
// per-address buckets past maxTracked; once full, new addresses share one
// bucket until the others' have refilled and are forgotten.
func TestHostileRegistrationAddresses(t *testing.T) {
	l := Limit{N: 10, Per: time.Minute, Burst: 20}
	k := newKeyedLimiter(l)
	for i := range 2 * maxTracked {
		if _, _, ok := k.take(fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255), t0); !ok && i < maxTracked {
			t.Fatalf("address %d refused", i)
		}
	}
	if got := k.tracked(); got != maxTracked {
		t.Fatalf("%d addresses tracked, want %d", got, maxTracked)
	}
	// The overflow bucket was spent by the addresses past maxTracked.
	if _, _, ok := k.take("192.0.2.1", t0); ok {
		t.Fatal("a new address got a bucket of its own while every bucket was in use")
	}
	// Two minutes later every bucket is full again: the next address
	// makes room, and gets a bucket of its own.
	later := t0.Add(2 * time.Minute)
	if _, _, ok := k.take("192.0.2.1", later); !ok || k.tracked() != 1 {
		t.Fatalf("after the buckets refilled: ok %v, %d tracked", ok, k.tracked())
	}
}
