package oauth

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
)

// fakeKeys stands in for the API key store: keys by id, organizations by id,
// with the semantics Keys documents.
type fakeKeys struct {
	mu   sync.Mutex
	keys map[string]*fakeKey
	orgs map[string]*org.Org
}

type fakeKey struct {
	id, apiID, secret, orgID string
	grant                    perm.Grant
	disabled                 bool
}

var _ Keys = (*fakeKeys)(nil)

func newFakeKeys() *fakeKeys {
	return &fakeKeys{keys: map[string]*fakeKey{}, orgs: map[string]*org.Org{}}
}

func (f *fakeKeys) add(keyID, orgID string, g perm.Grant) (apiID, secret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.orgs[orgID] == nil {
		f.orgs[orgID] = &org.Org{ID: orgID, Name: orgID, Plan: "scale"}
	}
	apiID, secret = "api-"+keyID, "secret-"+keyID+"-"+newSecret()
	f.keys[keyID] = &fakeKey{id: keyID, apiID: apiID, secret: secret, orgID: orgID, grant: g}
	return apiID, secret
}

func (f *fakeKeys) principal(k *fakeKey) (*auth.Principal, error) {
	if k.disabled {
		return nil, auth.ErrDisabled
	}
	o := *f.orgs[k.orgID]
	if o.Suspended {
		return nil, auth.ErrSuspended
	}
	g := k.grant
	g.Permissions = slices.Clone(g.Permissions)
	return &auth.Principal{Org: &o, KeyID: k.id, APIID: k.apiID, Grant: g}, nil
}

func (f *fakeKeys) Authenticate(_ context.Context, apiID, secret string) (*auth.Principal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.keys {
		if k.apiID == apiID && k.secret == secret {
			return f.principal(k)
		}
	}
	return nil, auth.ErrInvalid
}

func (f *fakeKeys) Principal(_ context.Context, keyID string) (*auth.Principal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.keys[keyID]
	if k == nil {
		return nil, auth.ErrInvalid
	}
	return f.principal(k)
}

func (f *fakeKeys) setDisabled(keyID string, disabled bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys[keyID].disabled = disabled
}

func (f *fakeKeys) setSuspended(orgID string, suspended bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.orgs[orgID].Suspended = suspended
}

func (f *fakeKeys) setGrant(keyID string, g perm.Grant) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys[keyID].grant = g
}

func (f *fakeKeys) remove(keyID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.keys, keyID)
}

// env is a Server on a real pebble store behind a loopback HTTP server.
type env struct {
	srv   *Server
	cfg   Config
	url   string
	clock *apitest.Clock
	keys  *fakeKeys
	store kv.Store
	logs  *apitest.Buffer
	// bodies holds every response body a test client read, to look for secrets.
	bodies *apitest.Buffer
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, adjust ...func(*Config)) *env {
	t.Helper()
	dir := t.TempDir()
	store, err := pebblekv.Open(filepath.Join(dir, "kv"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	e := &env{
		clock:  apitest.NewClock(t0),
		keys:   newFakeKeys(),
		store:  store,
		url:    base,
		logs:   &apitest.Buffer{},
		bodies: &apitest.Buffer{},
	}
	cfg := DefaultConfig()
	cfg.Store = store
	cfg.KeyFile = filepath.Join(dir, "oauth.key")
	cfg.Issuer = base
	cfg.Resource = base + "/mcp"
	cfg.Keys = e.keys
	cfg.Now = e.clock.Now
	cfg.Logger = slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, f := range adjust {
		f(&cfg)
	}
	e.cfg = cfg
	if e.srv, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, r := range e.srv.Routes() {
		mux.HandleFunc(r.Method+" "+r.Pattern, r.Handler)
	}
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return e
}

// newEnvPair returns two servers on two handles of one store, as two
// origins sharing it run: one signing key from a shared seed, one issuer
// (the first's URL), one set of API keys.
func newEnvPair(t *testing.T, dbs [2]kv.Store, adjust ...func(*Config)) [2]*env {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	rand.Read(seed)
	a := newEnv(t, append(slices.Clone(adjust), func(c *Config) { c.Store, c.Seed = dbs[0], seed })...)
	b := newEnv(t, append(slices.Clone(adjust), func(c *Config) {
		c.Store, c.Seed, c.Keys = dbs[1], seed, a.keys
		c.Issuer, c.Resource = a.cfg.Issuer, a.cfg.Resource
	})...)
	b.keys = a.keys
	a.store, b.store = dbs[0], dbs[1]
	return [2]*env{a, b}
}

// sharedStores are two handles of one store, as two origins have, on each
// backend.
var sharedStores = storetest.Backends()

// recorder keeps every body a client reads.
type recorder struct {
	next http.RoundTripper
	buf  *apitest.Buffer
}

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.buf.Write(body)
	r.buf.Write([]byte("\n"))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// browser is a client with a cookie jar that does not follow redirects.
func (e *env) browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{
		Jar:           jar,
		Transport:     recorder{http.DefaultTransport, e.bodies},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// answer is a read response.
type answer struct {
	status int
	header http.Header
	body   string
}

func (a *answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(a.body), &m); err != nil {
		t.Fatalf("status %d, body %q is not a JSON object: %v", a.status, a.body, err)
	}
	return m
}

func do(t *testing.T, c *http.Client, req *http.Request) *answer {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func (e *env) get(t *testing.T, c *http.Client, path string) *answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, c, req)
}

func (e *env) postForm(t *testing.T, c *http.Client, path string, form url.Values, basic ...string) *answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if len(basic) == 2 {
		req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
	}
	return do(t, c, req)
}

func (e *env) postJSON(t *testing.T, path string, body string) *answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, e.browser(t), req)
}

// register registers a client and returns the answer's JSON.
func (e *env) register(t *testing.T, metadata map[string]any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(metadata)
	a := e.postJSON(t, "/oauth/register", string(raw))
	if a.status != http.StatusCreated {
		t.Fatalf("register: status %d, body %s", a.status, a.body)
	}
	return a.json(t)
}

const testRedirect = "http://127.0.0.1:9999/callback"

// publicClient registers a public client with testRedirect.
func (e *env) publicClient(t *testing.T) string {
	t.Helper()
	return e.register(t, map[string]any{
		"client_name":                "Test Assistant",
		"redirect_uris":              []string{testRedirect},
		"token_endpoint_auth_method": "none",
	})["client_id"].(string)
}

// pkce returns a verifier and its S256 challenge.
func pkce() (verifier, challenge string) {
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func authorizeQuery(clientID, redirectURI, challenge, scope string) url.Values {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {redirectURI},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
		"state":                 {"st-123"},
	}
	if scope != "" {
		q.Set("scope", scope)
	}
	return q
}

// page is a parsed consent page: its form's fields and what it says.
type page struct {
	fields     url.Values // hidden and text inputs
	checkboxes []string   // every checkbox's value
	checked    []string
	buttons    []string // values of the submit buttons named action
	errorText  string
	text       string
}

func parsePage(t *testing.T, body string) *page {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	p := &page{fields: url.Values{}}
	var text strings.Builder
	var walk func(n *html.Node, inError bool)
	walk = func(n *html.Node, inError bool) {
		if n.Type == html.TextNode {
			text.WriteString(n.Data)
			if inError {
				p.errorText += n.Data
			}
		}
		if n.Type == html.ElementNode {
			attr := map[string]string{}
			checked := false
			for _, a := range n.Attr {
				attr[a.Key] = a.Val
				if a.Key == "checked" {
					checked = true
				}
			}
			if attr["class"] == "error" {
				inError = true
			}
			switch n.Data {
			case "input":
				switch attr["type"] {
				case "checkbox":
					p.checkboxes = append(p.checkboxes, attr["value"])
					if checked {
						p.checked = append(p.checked, attr["value"])
					}
				case "hidden", "text", "password":
					p.fields.Set(attr["name"], attr["value"])
				}
			case "button":
				if attr["name"] == "action" {
					p.buttons = append(p.buttons, attr["value"])
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inError)
		}
	}
	walk(doc, false)
	p.text = text.String()
	return p
}

// signIn opens the authorization request in browser and signs in; it returns
// the answer to the sign-in.
func (e *env) signIn(t *testing.T, browser *http.Client, q url.Values, apiID, apiKey string) *answer {
	t.Helper()
	a := e.get(t, browser, "/oauth/authorize?"+q.Encode())
	if a.status != http.StatusOK {
		t.Fatalf("authorize: status %d, body %s", a.status, a.body)
	}
	form := parsePage(t, a.body).fields
	form.Set("api_id", apiID)
	form.Set("api_key", apiKey)
	return e.postForm(t, browser, "/oauth/authorize", form)
}

// decide submits the consent page with the scopes checked and the action.
func (e *env) decide(t *testing.T, browser *http.Client, consent *answer, action string, scopes ...string) *answer {
	t.Helper()
	p := parsePage(t, consent.body)
	form := url.Values{"request": {p.fields.Get("request")}, "csrf": {p.fields.Get("csrf")}, "action": {action}}
	for _, s := range scopes {
		form.Add("scope", s)
	}
	return e.postForm(t, browser, "/oauth/authorize", form)
}

// redirected returns the query of a 303 answer's Location, which must be at
// the redirect URI.
func redirected(t *testing.T, a *answer, redirectURI string) url.Values {
	t.Helper()
	if a.status != http.StatusSeeOther {
		t.Fatalf("status %d, want 303; body %s", a.status, a.body)
	}
	loc := a.header.Get("Location")
	base, query, _ := strings.Cut(loc, "?")
	if base != redirectURI {
		t.Fatalf("redirected to %q, want %q", loc, redirectURI)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// connection is a client with a key approved, ready to exchange its code.
type connection struct {
	clientID, redirectURI, verifier, code string
	keyID, apiID, apiKey                  string
}

// approve runs the consent flow for clientID with a key of its own holding
// keyPerms, approving approve, and returns the code.
func (e *env) approve(t *testing.T, clientID, scope string, keyPerms []perm.Permission, approve ...string) *connection {
	t.Helper()
	keyID := "key-" + newSecret()[:8]
	apiID, apiKey := e.keys.add(keyID, "org-1", perm.Grant{Permissions: keyPerms})
	verifier, challenge := pkce()
	browser := e.browser(t)
	consent := e.signIn(t, browser, authorizeQuery(clientID, testRedirect, challenge, scope), apiID, apiKey)
	if consent.status != http.StatusOK {
		t.Fatalf("sign in: status %d, body %s", consent.status, consent.body)
	}
	q := redirected(t, e.decide(t, browser, consent, "approve", approve...), testRedirect)
	if q.Get("code") == "" || q.Get("state") != "st-123" || q.Get("iss") != e.url {
		t.Fatalf("approval redirect query %v", q)
	}
	return &connection{clientID: clientID, redirectURI: testRedirect, verifier: verifier, code: q.Get("code"), keyID: keyID, apiID: apiID, apiKey: apiKey}
}

// exchange redeems a connection's code.
func (e *env) exchange(t *testing.T, c *connection) *answer {
	t.Helper()
	return e.postForm(t, e.browser(t), "/oauth/token", url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {c.code},
		"redirect_uri":  {c.redirectURI},
		"code_verifier": {c.verifier},
		"client_id":     {c.clientID},
	})
}

// tokens redeems a connection's code and returns the access and refresh token.
func (e *env) tokens(t *testing.T, c *connection) (access, refresh string) {
	t.Helper()
	a := e.exchange(t, c)
	if a.status != http.StatusOK {
		t.Fatalf("token: status %d, body %s", a.status, a.body)
	}
	m := a.json(t)
	return m["access_token"].(string), m["refresh_token"].(string)
}

func (e *env) refresh(t *testing.T, clientID, token string, extra ...string) *answer {
	t.Helper()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}, "client_id": {clientID}}
	for i := 0; i+1 < len(extra); i += 2 {
		form.Set(extra[i], extra[i+1])
	}
	return e.postForm(t, e.browser(t), "/oauth/token", form)
}

func wantOAuthError(t *testing.T, a *answer, status int, code string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d; body %s", a.status, status, a.body)
	}
	if got := a.json(t)["error"]; got != code {
		t.Fatalf("error %v, want %s; body %s", got, code, a.body)
	}
}

func perms(names ...string) []perm.Permission {
	out := make([]perm.Permission, len(names))
	for i, n := range names {
		out[i] = perm.Permission(n)
	}
	return out
}

// isInvalid reports whether err is a refused token with the public reason.
func isInvalid(err error, reason string) bool {
	var te *tokenError
	return errors.Is(err, ErrInvalidToken) && errors.As(err, &te) && te.reason == reason
}
