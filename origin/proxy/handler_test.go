package proxy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/proxy"
	"github.com/pictorhq/pictor/origin/ratelimit"
	"github.com/pictorhq/pictor/origin/seal"
)

func TestMain(m *testing.M) {
	// The router's access log and the answers' debug lines are not what
	// these tests look at (TestPasswordNeverLogged captures them).
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// orgs authenticates one key per api_id "<org>-<plan>[-<role>]": the
// organization "org-<org>-<plan>" is on <plan>. Without a role the key
// holds every permission; "readonly" holds proxies:read, "nothing" only
// images:create.
type orgs struct{}

func (orgs) Authenticate(_ context.Context, apiID, secret string) (*auth.Principal, error) {
	parts := strings.Split(apiID, "-")
	if secret != "s3cret" || len(parts) < 2 || len(parts) > 3 {
		return nil, auth.ErrInvalid
	}
	o := &org.Org{ID: "org-" + parts[0] + "-" + parts[1], Name: parts[0], Plan: parts[1]}
	g := perm.Grant{AllFuture: true}
	if len(parts) == 3 {
		switch parts[2] {
		case "readonly":
			g = perm.Grant{Permissions: []perm.Permission{perm.ProxiesRead}}
		case "nothing":
			g = perm.Grant{Permissions: []perm.Permission{perm.ImagesCreate}}
		default:
			return nil, auth.ErrInvalid
		}
	}
	return &auth.Principal{Org: o, KeyID: "key-" + apiID, APIID: apiID, Grant: g}, nil
}

func creds(apiID string) *apitest.Creds { return &apitest.Creds{APIID: apiID, APIKey: "s3cret"} }

var (
	pro      = creds("acme-pro")
	scale    = creds("big-scale")
	other    = creds("rival-pro")
	readOnly = creds("acme-pro-readonly")
	nothing  = creds("acme-pro-nothing")
	free     = creds("tiny-free")
	basic    = creds("small-basic")
)

func orgID(c *apitest.Creds) string {
	p, _ := orgs{}.Authenticate(context.Background(), c.APIID, c.APIKey)
	return p.Org.ID
}

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// password is what the tests' proxies are given: no answer or log may
// hold it.
const password = "Corr3ct-Horse-Battery-Staple"

// site serves the proxy routes as the origin does.
type site struct {
	base   string
	h      *proxy.Handler
	db     kv.Store
	clock  *apitest.Clock // the store's
	limits *apitest.Clock // the rate limiter's: moved a window on by do unless burst
	burst  bool
}

func start(t *testing.T) *site {
	t.Helper()
	db, err := pebblekv.Open(filepath.Join(t.TempDir(), "db"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	master := make([]byte, 32)
	rand.Read(master)
	box, err := seal.New(master)
	if err != nil {
		t.Fatal(err)
	}
	s := &site{db: db, clock: apitest.NewClock(epoch), limits: apitest.NewClock(epoch)}
	s.h = &proxy.Handler{
		Store:   proxy.NewStore(db, box, s.clock.Now),
		Cursors: cursor.New(box.MACKey("cursor")),
	}
	srv := httptest.NewServer(api.New(api.Config{Authenticator: orgs{}, Limiter: ratelimit.NewMemory(s.limits.Now)}, routes(s.h)))
	t.Cleanup(srv.Close)
	s.base = srv.URL
	return s
}

// routes is the route table the origin registers.
func routes(h *proxy.Handler) []api.Route {
	return []api.Route{
		{Method: http.MethodPost, Pattern: "/v1/proxies", Permission: perm.ProxiesCreateUpdate, Group: ratelimit.ProxyWrite, Serve: h.Create},
		{Method: http.MethodGet, Pattern: "/v1/proxies", Permission: perm.ProxiesRead, Group: ratelimit.ProxyRead, Serve: h.List},
		{Method: http.MethodGet, Pattern: "/v1/proxies/{id}", Permission: perm.ProxiesRead, Group: ratelimit.ProxyRead, Serve: h.Get},
		{Method: http.MethodPost, Pattern: "/v1/proxies/{id}", Permission: perm.ProxiesCreateUpdate, Group: ratelimit.ProxyWrite, Serve: h.Update},
		{Method: http.MethodDelete, Pattern: "/v1/proxies/{id}", Permission: perm.ProxiesDelete, Group: ratelimit.ProxyWrite, Serve: h.Delete},
	}
}

func (s *site) do(t *testing.T, r apitest.Request) *apitest.Response {
	t.Helper()
	if !s.burst {
		s.limits.Advance(ratelimit.Window)
	}
	resp := apitest.Do(t, s.base, r)
	if bytes.Contains(resp.Body, []byte(password)) || bytes.Contains(resp.Body, []byte("sealed")) {
		t.Fatalf("%s %s answered the password: %s", r.Method, r.Path, resp.Body)
	}
	return resp
}

// view is a proxy as the API shows it.
type view struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	URL         string   `json:"url"`
	Port        int      `json:"port"`
	BypassHosts []string `json:"bypass_hosts"`
	Username    *string  `json:"username"`
	Enabled     bool     `json:"enabled"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
}

type page struct {
	Data       []view `json:"data"`
	Pagination struct {
		NextPageStart *string `json:"next_page_start"`
	} `json:"pagination"`
}

// save creates a proxy (POST /v1/proxies) or replaces one (POST
// /v1/proxies/{id}) and returns it.
func (s *site) save(t *testing.T, c *apitest.Creds, id string, body map[string]any) view {
	t.Helper()
	path := "/v1/proxies"
	if id != "" {
		path += "/" + id
	}
	r := s.do(t, apitest.Request{Method: "POST", Path: path, Creds: c, JSON: body})
	apitest.WantStatus(t, r, http.StatusOK)
	var v view
	r.Decode(t, &v)
	return v
}

func (s *site) get(t *testing.T, c *apitest.Creds, id string) view {
	t.Helper()
	r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies/" + id, Creds: c})
	apitest.WantStatus(t, r, http.StatusOK)
	var v view
	r.Decode(t, &v)
	return v
}

// credentials is what the render path would send to the proxy.
func (s *site) credentials(t *testing.T, c *apitest.Creds, id string) (string, string) {
	t.Helper()
	p, err := s.h.Store.Get(t.Context(), orgID(c), id)
	if err != nil {
		t.Fatal(err)
	}
	user, pw, err := s.h.Store.Credentials(p)
	if err != nil {
		t.Fatal(err)
	}
	return user, pw
}

func body(u string, extra ...any) map[string]any {
	m := map[string]any{"name": "Office proxy", "url": u}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func authn(username string, rest ...any) map[string]any {
	m := map[string]any{"username": username}
	for i := 0; i+1 < len(rest); i += 2 {
		m[rest[i].(string)] = rest[i+1]
	}
	return m
}

var uuidShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestCreateDefaults: a minimal proxy answers every field with its
// default and reads back the same; the answer is not cacheable and counts
// against proxy:write.
func TestCreateDefaults(t *testing.T) {
	s := start(t)
	for _, tc := range []struct {
		name, url, wantURL string
		port               float64
	}{
		{"http", "http://Proxy.Example.com", "http://proxy.example.com", 80},
		{"https", "HTTPS://proxy.example.com/", "https://proxy.example.com", 443},
		{"port in url", "http://proxy.example.com:3128", "http://proxy.example.com", 3128},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies", Creds: pro, JSON: body(tc.url)})
			apitest.WantStatus(t, r, http.StatusOK)
			if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
				t.Fatalf("Cache-Control %q", cc)
			}
			if p := r.Header.Get("RateLimit-Policy"); p != `"proxy:write";q=20;w=60` {
				t.Fatalf("RateLimit-Policy %q", p)
			}
			var raw map[string]any
			r.Decode(t, &raw)
			want := map[string]any{
				"name": "Office proxy", "url": tc.wantURL, "port": tc.port, "bypass_hosts": []any{}, "username": nil, "enabled": true,
				"created_at": "2026-03-01T12:00:00.000Z", "updated_at": "2026-03-01T12:00:00.000Z",
			}
			for k, v := range want {
				if got, ok := raw[k]; !ok || !reflect.DeepEqual(got, v) {
					t.Errorf("%s = %#v, want %#v", k, got, v)
				}
			}
			if len(raw) != len(want)+1 {
				t.Errorf("answer has %d fields: %s", len(raw), r.Body)
			}
			id, _ := raw["id"].(string)
			if !uuidShape.MatchString(id) {
				t.Fatalf("id %q", id)
			}
			if got := s.get(t, pro, id); got.URL != tc.wantURL || got.Port != int(tc.port) {
				t.Fatalf("read back %+v", got)
			}
			rr := s.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies/" + id, Creds: pro})
			if p := rr.Header.Get("RateLimit-Policy"); p != `"proxy:read";q=100;w=60` {
				t.Fatalf("read RateLimit-Policy %q", p)
			}
		})
	}
}

// TestCreateEveryField: every field is stored and answered as normalized;
// the answer, sent back with retain_password, changes nothing but
// updated_at.
func TestCreateEveryField(t *testing.T) {
	s := start(t)
	v := s.save(t, pro, "", map[string]any{
		"name": "  Office proxy ", "url": "https://[2606:4700:0::1111]/", "port": 8443, "disabled": true,
		"authentication": map[string]any{"username": "alice", "password": password},
		"bypass_hosts":   []any{"Intranet.Example", "*.CDN.example", "intranet.example.", "[2606:4700::1]", "93.184.216.34"},
	})
	if v.Name != "Office proxy" || v.URL != "https://[2606:4700::1111]" || v.Port != 8443 || v.Enabled ||
		v.Username == nil || *v.Username != "alice" ||
		!slices.Equal(v.BypassHosts, []string{"intranet.example", "*.cdn.example", "2606:4700::1", "93.184.216.34"}) {
		t.Fatalf("saved %+v", v)
	}
	if user, pw := s.credentials(t, pro, v.ID); user != "alice" || pw != password {
		t.Fatalf("credentials %q, %q", user, pw)
	}
	p, _ := s.h.Store.Get(t.Context(), orgID(pro), v.ID)
	if p.Address() != "[2606:4700::1111]:8443" || p.Scheme() != "https" || !p.Bypasses("a.cdn.example") || p.Enabled() {
		t.Fatalf("stored %+v", p)
	}

	var m map[string]any
	b, _ := json.Marshal(v)
	json.Unmarshal(b, &m)
	m["disabled"] = !v.Enabled
	m["authentication"] = map[string]any{"username": *v.Username, "retain_password": true}
	s.clock.Advance(time.Second)
	again := s.save(t, pro, v.ID, m)
	v.UpdatedAt = "2026-03-01T12:00:01.000Z"
	if !reflect.DeepEqual(again, v) {
		t.Fatalf("round trip\n got %+v\nwant %+v", again, v)
	}
	if _, pw := s.credentials(t, pro, v.ID); pw != password {
		t.Fatal("the round trip lost the password")
	}
}

// TestValidation: over HTTP, invalid requests are 400s naming every
// invalid field; bodies that are not requests are refused as elsewhere.
func TestValidation(t *testing.T) {
	s := start(t)
	tests := []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"empty", map[string]any{}, []string{"name", "url"}},
		{"several at once", map[string]any{"name": "ab", "url": "http://user:pw@proxy.example.com/path", "port": "8080", "disabled": "no",
			"authentication": map[string]any{"username": strings.Repeat("u", 256), "password": strings.Repeat("p", 256)},
			"bypass_hosts":   []any{"ok.example", "bad host", "http://x.example", 7}},
			[]string{"name", "url", "port", "disabled", "authentication.username", "authentication.password",
				"bypass_hosts[1]", "bypass_hosts[2]", "bypass_hosts[3]"}},
		{"port disagrees with url", body("http://proxy.example.com:3128", "port", 8080), []string{"port"}},
		{"port out of range", body("http://proxy.example.com", "port", 65536), []string{"port"}},
		{"private url", body("http://192.168.1.1:3128"), []string{"url"}},
		{"socks", body("socks5://proxy.example.com"), []string{"url"}},
		{"password and retain_password", body("http://proxy.example.com", "authentication", authn("alice", "password", "x", "retain_password", true)),
			[]string{"authentication.retain_password"}},
		{"retain_password on a creation", body("http://proxy.example.com", "authentication", authn("alice", "retain_password", true)),
			[]string{"authentication.retain_password"}},
		{"password without username", body("http://proxy.example.com", "authentication", map[string]any{"password": "x"}),
			[]string{"authentication.password"}},
		{"authentication as text", body("http://proxy.example.com", "authentication", "alice:x"), []string{"authentication"}},
		{"too many bypass hosts", body("http://proxy.example.com", "bypass_hosts", slices.Repeat([]any{"a.example"}, 101)), []string{"bypass_hosts"}},
		{"strict types", map[string]any{"name": 123, "url": "http://proxy.example.com", "disabled": 0, "bypass_hosts": "a.example"},
			[]string{"name", "disabled", "bypass_hosts"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies", Creds: pro, JSON: tc.body})
			for _, f := range tc.fields {
				apitest.WantField(t, r, f)
			}
			var b struct {
				ValidationErrors []struct{ Path string } `json:"validation_errors"`
			}
			r.Decode(t, &b)
			if len(b.ValidationErrors) != len(tc.fields) {
				t.Fatalf("validation errors %+v, want exactly %v", b.ValidationErrors, tc.fields)
			}
		})
	}
	// --allow-private-urls lets the private proxy through.
	s.h.AllowPrivate = true
	s.save(t, pro, "", body("http://192.168.1.1:3128"))
	s.h.AllowPrivate = false

	for _, tc := range []struct {
		name, raw, ct string
		status        int
	}{
		{"not JSON", "{", "application/json", 400},
		{"not an object", `[{"name":"Office"}]`, "application/json", 400},
		{"unknown content type", "name=Office", "text/plain", 415},
		{"too large", `{"name":"` + strings.Repeat("x", 300<<10) + `"}`, "application/json", 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apitest.WantError(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies", Creds: pro, Raw: tc.raw, ContentType: tc.ct}), tc.status)
		})
	}
	// The kit's id check (resource.TestRoutesAdmission), in the proxies'
	// words.
	bad := s.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies/not-an-id", Creds: pro, JSON: body("http://p.example")})
	apitest.WantField(t, bad, "id")
	apitest.WantMessage(t, apitest.WantError(t, bad, http.StatusBadRequest), "is not a valid proxy id")
	if n := len(s.list(t, pro, "?count=100").Data); n != 1 {
		t.Fatalf("refused requests stored proxies: %d listed", n)
	}
}

// TestPermissions: each route asks for its permission (the router's
// check); a read-only key reads and writes nothing.
func TestPermissions(t *testing.T) {
	s := start(t)
	v := s.save(t, pro, "", body("http://proxy.example.com"))
	for _, tc := range []struct {
		name   string
		creds  *apitest.Creds
		method string
		path   string
		status int
	}{
		{"read-only lists", readOnly, "GET", "/v1/proxies", 200},
		{"read-only reads", readOnly, "GET", "/v1/proxies/" + v.ID, 200},
		{"read-only creates", readOnly, "POST", "/v1/proxies", 403},
		{"read-only updates", readOnly, "POST", "/v1/proxies/" + v.ID, 403},
		{"read-only deletes", readOnly, "DELETE", "/v1/proxies/" + v.ID, 403},
		{"no proxy permission lists", nothing, "GET", "/v1/proxies", 403},
		{"no credentials", nil, "GET", "/v1/proxies", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, apitest.Request{Method: tc.method, Path: tc.path, Creds: tc.creds, JSON: body("http://other.example")})
			if tc.status == 200 {
				apitest.WantStatus(t, r, 200)
				return
			}
			m := apitest.WantError(t, r, tc.status)
			if tc.status == 403 {
				apitest.WantMessage(t, m, "Missing permission", "proxies:")
			}
		})
	}
}

// TestPlanGating: below pro, every route is a 403 naming the plan
// requirement, whatever the key holds; pro and scale are served. That the
// refusal comes before the id is read is the kit's
// (resource.TestRoutesAdmission).
func TestPlanGating(t *testing.T) {
	s := start(t)
	v := s.save(t, pro, "", body("http://proxy.example.com"))
	routes := []struct{ method, path string }{
		{"POST", "/v1/proxies"},
		{"GET", "/v1/proxies"},
		{"GET", "/v1/proxies/" + v.ID},
		{"POST", "/v1/proxies/" + v.ID},
		{"DELETE", "/v1/proxies/" + v.ID},
	}
	for _, c := range []*apitest.Creds{free, basic, creds("odd-legacy")} {
		for _, rt := range routes {
			t.Run(c.APIID+" "+rt.method+" "+rt.path, func(t *testing.T) {
				r := s.do(t, apitest.Request{Method: rt.method, Path: rt.path, Creds: c, JSON: body("http://p.example")})
				m := apitest.WantError(t, r, http.StatusForbidden)
				apitest.WantMessage(t, m, "Proxies need the pro plan or higher (10,000 images a month)", "on the "+strings.Split(c.APIID, "-")[1]+" plan")
				if _, ok := m["validation_errors"]; ok {
					t.Fatalf("a plan refusal lists fields: %s", r.Body)
				}
			})
		}
	}
	// Nothing was created for them, and the pro proxy is intact.
	if p, _, err := s.h.Store.List(t.Context(), orgID(free), "", 10); err != nil || len(p) != 0 {
		t.Fatalf("free organization holds %d proxies, %v", len(p), err)
	}
	s.get(t, pro, v.ID)
	for _, c := range []*apitest.Creds{pro, scale} {
		w := s.save(t, c, "", body("http://proxy.example.com"))
		s.get(t, c, w.ID)
		apitest.WantStatus(t, s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/proxies/" + w.ID, Creds: c}), 204)
	}
}

// TestRetainPassword: the update rules of authentication over HTTP, and
// what the render path then opens.
func TestRetainPassword(t *testing.T) {
	s := start(t)
	const u = "http://proxy.example.com:3128"
	v := s.save(t, pro, "", body(u, "authentication", authn("alice", "password", password)))
	keep := func(extra ...any) map[string]any {
		return body(u, append([]any{"authentication", authn("alice", "retain_password", true)}, extra...)...)
	}
	steps := []struct {
		name     string
		body     map[string]any
		problem  string // a fragment of the 400's message, "" when it succeeds
		username string // then what the render path gets
		password string
	}{
		{"keep", keep(), "", "alice", password},
		{"keep while renaming and disabling", keep("name", "Renamed", "disabled", true, "bypass_hosts", []any{"a.example"}), "", "alice", password},
		{"keep with the port written apart", body("http://proxy.example.com", "port", 3128, "authentication", authn("alice", "retain_password", true)), "", "alice", password},
		{"keep for another username", body(u, "authentication", authn("bob", "retain_password", true)), "same username", "", ""},
		{"keep for another host", body("http://evil.example:3128", "authentication", authn("alice", "retain_password", true)), "same url and port", "", ""},
		{"keep for another port", body("http://proxy.example.com:8080", "authentication", authn("alice", "retain_password", true)), "same url and port", "", ""},
		{"keep for https", body("https://proxy.example.com:3128", "authentication", authn("alice", "retain_password", true)), "same url and port", "", ""},
		{"keep and send", body(u, "authentication", authn("alice", "retain_password", true, "password", "other")), "cannot be sent with authentication.password", "", ""},
		{"new username and password", body(u, "authentication", authn("bob", "password", "pw-2")), "", "bob", "pw-2"},
		{"username alone removes the password", body(u, "authentication", authn("bob")), "", "bob", ""},
		{"nothing to keep", body(u, "authentication", authn("bob", "retain_password", true)), "none is stored", "", ""},
		{"password again", body(u, "authentication", authn("alice", "password", password)), "", "alice", password},
		{"no authentication removes both", body(u), "", "", ""},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			before := s.get(t, pro, v.ID)
			r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies/" + v.ID, Creds: pro, JSON: step.body})
			if step.problem != "" {
				apitest.WantField(t, r, "authentication.retain_password")
				apitest.WantMessage(t, r.Object(t), step.problem)
				if got := s.get(t, pro, v.ID); !reflect.DeepEqual(got, before) {
					t.Fatalf("a refused update changed the proxy: %+v", got)
				}
				return
			}
			apitest.WantStatus(t, r, 200)
			var got view
			r.Decode(t, &got)
			if (got.Username == nil) != (step.username == "") || (got.Username != nil && *got.Username != step.username) {
				t.Fatalf("username %v, want %q", got.Username, step.username)
			}
			if user, pw := s.credentials(t, pro, v.ID); user != step.username || pw != step.password {
				t.Fatalf("credentials %q, %q; want %q, %q", user, pw, step.username, step.password)
			}
		})
	}
}

// TestPasswordNeverLogged: with every log line captured, debug included,
// creating, updating, refusing, reading, listing and opening never log
// the password (s.do checks every answer).
func TestPasswordNeverLogged(t *testing.T) {
	var logs apitest.Buffer
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil))) })
	s := start(t)

	v := s.save(t, pro, "", body("http://proxy.example.com", "authentication", authn("alice", "password", password)))
	s.save(t, pro, v.ID, body("http://proxy.example.com", "authentication", authn("alice", "password", password), "name", "Renamed"))
	for _, b := range []map[string]any{
		body("http://proxy.example.com", "authentication", authn("alice", "password", password, "retain_password", true)),
		body("http://proxy.example.com", "authentication", authn("alice", "password", password+strings.Repeat("x", 300))),
		body("http://proxy.example.com", "authentication", authn("alice", "password", password+"\n")),
		body("http://proxy.example.com", "authentication", map[string]any{"password": password}),
		body("http://alice:" + password + "@proxy.example.com"),
		body("http://evil.example", "authentication", authn("alice", "retain_password", true)),
	} {
		r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies/" + v.ID, Creds: pro, JSON: b})
		apitest.WantError(t, r, 400)
	}
	s.get(t, pro, v.ID)
	s.list(t, pro, "")
	if _, pw := s.credentials(t, pro, v.ID); pw != password {
		t.Fatal("wrong password")
	}
	// A failed open: the record's password sealed for another record.
	p, _ := s.h.Store.Get(t.Context(), orgID(pro), v.ID)
	p.ID = "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f0a0b"
	if _, _, err := s.h.Store.Credentials(p); err == nil || strings.Contains(err.Error(), password) {
		t.Fatalf("Credentials of a moved password: %v", err)
	}
	out := logs.String()
	if !strings.Contains(out, `"msg":"request failed"`) || !strings.Contains(out, "authentication.password") {
		t.Fatalf("the logs were not captured:\n%s", out)
	}
	if strings.Contains(out, password) || strings.Contains(out, "Corr3ct") {
		t.Fatalf("the logs hold the password:\n%s", out)
	}
}

// TestUpdate: an update replaces everything (omitted fields take their
// defaults) and keeps id and created_at.
func TestUpdate(t *testing.T) {
	s := start(t)
	v := s.save(t, pro, "", body("https://proxy.example.com:8443", "disabled", true, "bypass_hosts", []any{"a.example"},
		"authentication", authn("alice", "password", password)))
	s.clock.Advance(time.Minute)
	u := s.save(t, pro, v.ID, map[string]any{"name": "Bare", "url": "http://bare.example"})
	want := view{ID: v.ID, Name: "Bare", URL: "http://bare.example", Port: 80, BypassHosts: []string{}, Enabled: true,
		CreatedAt: "2026-03-01T12:00:00.000Z", UpdatedAt: "2026-03-01T12:01:00.000Z"}
	if !reflect.DeepEqual(u, want) {
		t.Fatalf("after a full replacement\n got %+v\nwant %+v", u, want)
	}
	if got := s.get(t, pro, v.ID); !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v", got)
	}
	if user, pw := s.credentials(t, pro, v.ID); user != "" || pw != "" {
		t.Fatalf("credentials survived the replacement: %q, %q", user, pw)
	}
	// An invalid update changes nothing.
	apitest.WantField(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies/" + v.ID, Creds: pro, JSON: body("ftp://x.example")}), "url")
	if got := s.get(t, pro, v.ID); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a refused update %+v", got)
	}
}

// TestForms: URL-encoded and multipart forms save what the same JSON
// request saves.
func TestForms(t *testing.T) {
	s := start(t)
	asJSON := s.save(t, pro, "", map[string]any{"name": "Office proxy", "url": "http://proxy.example.com", "port": 3128, "disabled": true,
		"authentication": authn("alice", "password", password), "bypass_hosts": []any{"a.example", "*.b.example"}})
	fields := [][2]string{
		{"name", "Office proxy"}, {"url", "http://proxy.example.com"}, {"port", "3128"}, {"disabled", "true"},
		{"authentication", `{"username":"alice","password":"` + password + `"}`},
		{"bypass_hosts", "a.example"}, {"bypass_hosts", "*.B.example"}, {"ignored", "x"},
	}
	urlencoded := func() (string, string) {
		v := url.Values{}
		for _, f := range fields {
			v.Add(f[0], f[1])
		}
		return v.Encode(), "application/x-www-form-urlencoded"
	}
	multipartForm := func() (string, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		for _, f := range fields {
			w.WriteField(f[0], f[1])
		}
		w.Close()
		return b.String(), w.FormDataContentType()
	}
	for _, tc := range []struct {
		name   string
		encode func() (string, string)
	}{
		{"urlencoded", urlencoded},
		{"multipart", multipartForm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, ct := tc.encode()
			r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies", Creds: pro, Raw: raw, ContentType: ct})
			apitest.WantStatus(t, r, 200)
			var got view
			r.Decode(t, &got)
			want := asJSON
			want.ID = got.ID
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("form saved\n%+v\nJSON saved\n%+v", got, want)
			}
			if _, pw := s.credentials(t, pro, got.ID); pw != password {
				t.Fatal("the form's password was not stored")
			}
			// An update by form with retain_password inside authentication.
			v := url.Values{"name": {"Renamed"}, "url": {"http://proxy.example.com:3128"},
				"authentication": {`{"username":"alice","retain_password":true}`}}
			r = s.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies/" + got.ID, Creds: pro, Raw: v.Encode(), ContentType: "application/x-www-form-urlencoded"})
			apitest.WantStatus(t, r, 200)
			if _, pw := s.credentials(t, pro, got.ID); pw != password {
				t.Fatal("the form's retain_password lost the password")
			}
		})
	}
}

// TestDelete: 204, then "Proxy not found"; the others stay. That every
// route then answers 404 is the kit's (resource.TestRoutes).
func TestDelete(t *testing.T) {
	s := start(t)
	v := s.save(t, pro, "", body("http://proxy.example.com"))
	keep := s.save(t, pro, "", body("http://keep.example"))
	r := s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/proxies/" + v.ID, Creds: pro})
	apitest.WantStatus(t, r, http.StatusNoContent)
	if len(r.Body) != 0 {
		t.Fatalf("204 with a body: %q", r.Body)
	}
	apitest.WantMessage(t, apitest.WantError(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies/" + v.ID, Creds: pro}), 404), "Proxy not found")
	if _, err := s.h.Store.Get(t.Context(), orgID(pro), v.ID); err != proxy.ErrNotFound {
		t.Fatalf("Store.Get after the deletion: %v", err)
	}
	if l := s.list(t, pro, ""); len(l.Data) != 1 || l.Data[0].ID != keep.ID {
		t.Fatalf("listed after the deletion: %+v", l.Data)
	}
}

// TestIsolation: another organization's proxy is a 404 exactly like an
// unknown one, whatever the body (an update reads the proxy before it
// judges the body), and never listed or changed: its password cannot be
// retained by another. The rest of the matrix is the kit's
// (resource.TestRoutes).
func TestIsolation(t *testing.T) {
	s := start(t)
	mine := s.save(t, pro, "", body("http://proxy.example.com"))
	theirs := s.save(t, other, "", body("http://theirs.example", "authentication", authn("eve", "password", password)))
	unknown := "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f0a0b"
	for _, tc := range []struct {
		method string
		body   map[string]any
	}{
		{"GET", nil},
		{"POST", body("http://theirs.example", "authentication", authn("eve", "retain_password", true))},
		{"POST", map[string]any{"name": 5}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			foreign := s.do(t, apitest.Request{Method: tc.method, Path: "/v1/proxies/" + theirs.ID, Creds: pro, JSON: tc.body})
			missing := s.do(t, apitest.Request{Method: tc.method, Path: "/v1/proxies/" + unknown, Creds: pro, JSON: tc.body})
			apitest.WantError(t, foreign, 404)
			if !bytes.Equal(foreign.Body, missing.Body) {
				t.Fatalf("foreign %s, unknown %s", foreign.Body, missing.Body)
			}
		})
	}
	if got := s.get(t, other, theirs.ID); !reflect.DeepEqual(got, theirs) {
		t.Fatalf("their proxy after my attempts: %+v", got)
	}
	if _, pw := s.credentials(t, other, theirs.ID); pw != password {
		t.Fatal("their password changed")
	}
	if _, err := s.h.Store.Get(t.Context(), orgID(pro), theirs.ID); err != proxy.ErrNotFound {
		t.Fatalf("Store.Get of another organization's proxy: %v", err)
	}
	if l := s.list(t, pro, ""); len(l.Data) != 1 || l.Data[0].ID != mine.ID {
		t.Fatalf("my list %+v", l.Data)
	}
}

func (s *site) list(t *testing.T, c *apitest.Creds, query string) page {
	t.Helper()
	r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies" + query, Creds: c})
	apitest.WantStatus(t, r, 200)
	var p page
	r.Decode(t, &p)
	return p
}

// TestList: newest first, disabled included, paged with the proxies'
// cursors, which only this organization's next page accepts. The paging
// mechanics (count bounds, forged cursors, exact and empty pages) are the
// kit's (resource.TestServeList, resource.TestRoutesList).
func TestList(t *testing.T) {
	s := start(t)
	var ids []string
	for i := range 12 {
		v := s.save(t, pro, "", body("http://proxy.example.com", "name", "proxy "+strings.Repeat("x", i), "disabled", i%2 == 1))
		ids = append(ids, v.ID)
	}
	s.save(t, other, "", body("http://theirs.example"))
	slices.Reverse(ids) // newest first

	idsOf := func(p page) []string {
		var out []string
		for _, v := range p.Data {
			out = append(out, v.ID)
		}
		return out
	}
	first := s.list(t, pro, "")
	if !slices.Equal(idsOf(first), ids[:10]) || first.Pagination.NextPageStart == nil {
		t.Fatalf("default page %q, want %q", idsOf(first), ids[:10])
	}
	var walked, cursors []string
	query := "?count=5"
	for range 10 {
		p := s.list(t, pro, query)
		walked = append(walked, idsOf(p)...)
		if p.Pagination.NextPageStart == nil {
			break
		}
		cursors = append(cursors, *p.Pagination.NextPageStart)
		query = "?count=5&page_start=" + url.QueryEscape(*p.Pagination.NextPageStart)
	}
	if !slices.Equal(walked, ids) || len(cursors) != 2 {
		t.Fatalf("pages of 5 walked %q with %d cursors, want %q", walked, len(cursors), ids)
	}
	apitest.WantField(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies?page_start=" + url.QueryEscape(cursors[0]), Creds: other}), "page_start")
}

// TestRateLimit: writes share proxy:write (20 a minute), reads
// proxy:read; organizations have their own.
func TestRateLimit(t *testing.T) {
	s := start(t)
	s.limits.Advance(ratelimit.Window)
	s.burst = true
	var last view
	for range ratelimit.WriteQuota {
		last = s.save(t, pro, "", body("http://proxy.example.com"))
	}
	for _, m := range []string{"POST", "DELETE"} {
		path := "/v1/proxies"
		if m == "DELETE" {
			path += "/" + last.ID
		}
		r := s.do(t, apitest.Request{Method: m, Path: path, Creds: pro, JSON: body("http://late.example")})
		apitest.WantMessage(t, apitest.WantError(t, r, http.StatusTooManyRequests), "proxy:write")
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies", Creds: pro})
	apitest.WantStatus(t, r, 200)
	if got := r.Header.Get("RateLimit"); got != `"proxy:read";r=99` {
		t.Fatalf("RateLimit %q", got)
	}
	s.save(t, other, "", body("http://late.example"))
}
