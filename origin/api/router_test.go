package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/logging"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/ratelimit"
)

// authenticator knows a few api_ids, all with the secret "s3cret".
type authenticator struct{}

var _ auth.Authenticator = authenticator{}

var errStoreDown = errors.New("store down: disk on fire")

func (authenticator) Authenticate(_ context.Context, apiID, secret string) (*auth.Principal, error) {
	if secret != "s3cret" {
		return nil, auth.ErrInvalid
	}
	principal := func(orgID string, g perm.Grant) (*auth.Principal, error) {
		return &auth.Principal{Org: &org.Org{ID: orgID, Plan: "pro"}, KeyID: "key-" + apiID, APIID: apiID, Grant: g}, nil
	}
	switch apiID {
	case "owner":
		return principal("org-1", perm.Grant{AllFuture: true})
	case "other-owner":
		return principal("org-2", perm.Grant{AllFuture: true})
	case "reader":
		return principal("org-1", perm.Grant{Permissions: []perm.Permission{perm.ImagesRead}})
	case "disabled":
		return nil, auth.ErrDisabled
	case "suspended":
		return nil, auth.ErrSuspended
	case "broken":
		return nil, errStoreDown
	}
	return nil, auth.ErrInvalid
}

// brokenLimiter fails every decision.
type brokenLimiter struct{}

func (brokenLimiter) Allow(context.Context, string, int, time.Duration) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, errors.New("limiter unavailable")
}

// echo answers with what the guard handed to the handler.
func echo(w http.ResponseWriter, r *http.Request) {
	p := auth.FromContext(r.Context())
	out := map[string]any{"request_id": logging.RequestID(r.Context()), "path_id": r.PathValue("id")}
	if p != nil {
		out["api_id"], out["org"] = p.APIID, p.Org.ID
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// routes is a small table in the shape of the origin's.
func routes(extra ...api.Route) []api.Route {
	return append([]api.Route{
		{Method: "GET", Pattern: "/things/{id}", Public: true, Handler: echo},
		{Method: "POST", Pattern: "/things", Public: true, Handler: echo},
		{Method: "GET", Pattern: "/v1/images", Permission: perm.ImagesRead, Handler: echo},
		{Method: "POST", Pattern: "/v1/api-keys", Permission: perm.APIKeysCreateUpdate, Group: ratelimit.APIKeyWrite, Handler: echo},
		{Method: "GET", Pattern: "/v1/api-keys", Permission: perm.APIKeysRead, Group: ratelimit.APIKeyRead, Handler: echo},
	}, extra...)
}

// serve runs the router behind its Listener over loopback, as the origin
// does, and returns its base URL.
func serve(t *testing.T, cfg api.Config, routes []api.Route) (string, *api.Listener) {
	t.Helper()
	if cfg.Authenticator == nil {
		cfg.Authenticator = authenticator{}
	}
	if cfg.Limiter == nil {
		cfg.Limiter = ratelimit.NewMemory(nil)
	}
	srv := httptest.NewUnstartedServer(api.New(cfg, routes))
	ln := api.NewListener(srv.Listener, 8<<10)
	srv.Listener = ln
	srv.Config.MaxHeaderBytes = 8 << 10
	ln.ServerHooks(srv.Config)
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		ln.CloseAll()
	})
	return srv.URL, ln
}

var (
	owner = &apitest.Creds{APIID: "owner", APIKey: "s3cret"}
	other = &apitest.Creds{APIID: "other-owner", APIKey: "s3cret"}
	// noRedirects shows redirects instead of following them.
	noRedirects = &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
)

// send is apitest.Do without following redirects.
func send(t *testing.T, base string, r apitest.Request) *apitest.Response {
	t.Helper()
	req, err := http.NewRequest(r.Method, base+r.Path, strings.NewReader(r.Raw))
	if err != nil {
		t.Fatal(err)
	}
	if r.Creds != nil {
		req.SetBasicAuth(r.Creds.APIID, r.Creds.APIKey)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func TestNewRefusesUnguardedRoutes(t *testing.T) {
	tests := []struct {
		name  string
		route api.Route
		panic bool
	}{
		{"public", api.Route{Method: "GET", Pattern: "/a", Public: true, Handler: echo}, false},
		{"guarded", api.Route{Method: "GET", Pattern: "/a", Permission: perm.UsageRead, Handler: echo}, false},
		{"neither public nor guarded", api.Route{Method: "GET", Pattern: "/a", Handler: echo}, true},
		{"unknown permission", api.Route{Method: "GET", Pattern: "/a", Permission: "images:fly", Handler: echo}, true},
		{"serve", api.Route{Method: "GET", Pattern: "/a", Public: true, Serve: serveEcho}, false},
		{"no handler", api.Route{Method: "GET", Pattern: "/a", Public: true}, true},
		{"both handlers", api.Route{Method: "GET", Pattern: "/a", Public: true, Handler: echo, Serve: serveEcho}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				v := recover()
				if (v != nil) != tc.panic {
					t.Fatalf("New panicked with %v, want a panic %v", v, tc.panic)
				}
				if v != nil && !strings.Contains(fmt.Sprint(v), "GET /a") {
					t.Fatalf("panic %v does not name the route", v)
				}
			}()
			api.New(api.Config{Authenticator: authenticator{}, Limiter: ratelimit.NewMemory(nil)}, []api.Route{tc.route})
		})
	}
}

// TestRouting: routes are matched by method and pattern; anything else is
// a 404 or a 405 with Allow, in the standard body; unclean paths redirect.
func TestRouting(t *testing.T) {
	base, _ := serve(t, api.Config{}, routes())
	tests := []struct {
		name, method, path string
		status             int
		message            string // error answers: a fragment of the message
		allow              string // 405: the Allow header
		location           string // redirects
	}{
		{name: "route", method: "GET", path: "/things/7", status: 200},
		{name: "GET serves HEAD", method: "HEAD", path: "/things/7", status: 200},
		{name: "unknown path", method: "GET", path: "/nope", status: 404, message: "No route for GET /nope"},
		{name: "unknown path, POST", method: "POST", path: "/v1/nope", status: 404, message: "No route for POST /v1/nope"},
		{name: "HEAD of an unknown path", method: "HEAD", path: "/nope", status: 404},
		{name: "wrong method", method: "DELETE", path: "/things/7", status: 405, message: "Method DELETE is not allowed on /things/7", allow: "GET, HEAD"},
		{name: "wrong method of a guarded route", method: "PUT", path: "/v1/api-keys", status: 405, allow: "GET, HEAD, POST"},
		{name: "unclean path of a route", method: "GET", path: "/things//7", status: 307, location: "/things/7"},
		{name: "unclean unknown path", method: "GET", path: "/a/../nope", status: 307, location: "/nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := send(t, base, apitest.Request{Method: tc.method, Path: tc.path})
			switch {
			case tc.status == 200 && tc.method == "HEAD":
				apitest.WantStatus(t, r, 200)
				if len(r.Body) != 0 {
					t.Fatalf("HEAD answered a body: %q", r.Body)
				}
			case tc.status == 200:
				apitest.WantStatus(t, r, 200)
				var got map[string]any
				r.Decode(t, &got)
				if got["path_id"] != "7" {
					t.Fatalf("handler saw %v", got)
				}
			case tc.location != "":
				apitest.WantStatus(t, r, tc.status)
				if loc := r.Header.Get("Location"); loc != tc.location {
					t.Fatalf("Location %q, want %q", loc, tc.location)
				}
			case tc.method == "HEAD":
				apitest.WantStatus(t, r, tc.status)
				if ct := r.Header.Get("Content-Type"); ct != "application/json" || len(r.Body) != 0 {
					t.Fatalf("HEAD error: Content-Type %q, body %q", ct, r.Body)
				}
			default:
				m := apitest.WantError(t, r, tc.status)
				apitest.WantMessage(t, m, tc.message)
				if got := r.Header.Get("Allow"); got != tc.allow {
					t.Fatalf("Allow = %q, want %q", got, tc.allow)
				}
			}
			if r.Header.Get(contract.HeaderRequestID) == "" {
				t.Fatal("answer without a request id")
			}
		})
	}
}

// TestGuard: a guarded route authenticates its caller, checks the
// permission, then reads the query strictly, in that order; the answers
// are per caller, so no cache may keep them.
func TestGuard(t *testing.T) {
	base, _ := serve(t, api.Config{}, routes())
	tests := []struct {
		name        string
		method      string
		path        string
		auth        string // the Authorization header
		status      int
		message     string
		field       string // 400: the field validation_errors name
		wantAPIID   string // 200: the principal the handler saw
		challenge   bool   // 401: WWW-Authenticate asks for Basic
		noCacheCtrl bool   // public: no Cache-Control: no-store
	}{
		{name: "no credentials", method: "GET", path: "/v1/images", status: 401, message: "Missing credentials", challenge: true},
		{name: "not basic", method: "GET", path: "/v1/images", auth: "Bearer owner", status: 401, message: "Malformed credentials", challenge: true},
		{name: "basic without a secret", method: "GET", path: "/v1/images", auth: basic("owner", ""), status: 401, message: "Malformed credentials", challenge: true},
		{name: "wrong secret", method: "GET", path: "/v1/images", auth: basic("owner", "guess"), status: 401, message: "Invalid credentials", challenge: true},
		{name: "unknown key", method: "GET", path: "/v1/images", auth: basic("nobody", "s3cret"), status: 401, message: "Invalid credentials", challenge: true},
		{name: "disabled key", method: "GET", path: "/v1/images", auth: basic("disabled", "s3cret"), status: 401, message: "API key is disabled", challenge: true},
		{name: "suspended organization", method: "GET", path: "/v1/images", auth: basic("suspended", "s3cret"), status: 401, message: "Organization is suspended", challenge: true},
		{name: "authenticator failure", method: "GET", path: "/v1/images", auth: basic("broken", "s3cret"), status: 500, message: "Internal error"},
		{name: "permission held", method: "GET", path: "/v1/images", auth: basic("reader", "s3cret"), status: 200, wantAPIID: "reader"},
		{name: "permission missing", method: "POST", path: "/v1/api-keys", auth: basic("reader", "s3cret"), status: 403, message: "this operation requires api_keys:create_update"},
		{name: "all future permissions", method: "POST", path: "/v1/api-keys", auth: basic("owner", "s3cret"), status: 200, wantAPIID: "owner"},
		{name: "malformed query value", method: "GET", path: "/v1/images?count=5&page_token=%zz", auth: basic("reader", "s3cret"), status: 400, field: "page_token"},
		{name: "raw semicolon in the query", method: "GET", path: "/v1/images?a=1;b=2", auth: basic("reader", "s3cret"), status: 400, field: "a"},
		{name: "malformed query name", method: "GET", path: "/v1/images?%zz=1", auth: basic("reader", "s3cret"), status: 400, field: "query"},
		{name: "well-formed query", method: "GET", path: "/v1/images?count=5&page_token=a%2Bb", auth: basic("reader", "s3cret"), status: 200, wantAPIID: "reader"},
		{name: "credentials before the query", method: "GET", path: "/v1/images?count=%zz", status: 401, message: "Missing credentials", challenge: true},
		{name: "permission before the query", method: "POST", path: "/v1/api-keys?count=%zz", auth: basic("reader", "s3cret"), status: 403, message: "requires api_keys:create_update"},
		{name: "public route reads its own query", method: "GET", path: "/things/7?count=%zz", status: 200, noCacheCtrl: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.auth != "" {
				h["Authorization"] = tc.auth
			}
			r := send(t, base, apitest.Request{Method: tc.method, Path: tc.path, Header: h})
			switch {
			case tc.field != "":
				apitest.WantField(t, r, tc.field)
			case tc.status == 200:
				apitest.WantStatus(t, r, 200)
				var got map[string]any
				r.Decode(t, &got)
				if tc.wantAPIID != "" && got["api_id"] != tc.wantAPIID {
					t.Fatalf("handler saw principal %v, want %s", got["api_id"], tc.wantAPIID)
				}
				if tc.noCacheCtrl && got["api_id"] != nil {
					t.Fatalf("a public route got a principal: %v", got)
				}
			default:
				m := apitest.WantError(t, r, tc.status)
				apitest.WantMessage(t, m, tc.message)
				if strings.Contains(string(r.Body), "disk on fire") {
					t.Fatalf("the cause reached the caller: %s", r.Body)
				}
			}
			if got := r.Header.Get("WWW-Authenticate"); tc.challenge != (got == `Basic realm="pictor"`) {
				t.Fatalf("WWW-Authenticate = %q, want a challenge %v", got, tc.challenge)
			}
			if got := r.Header.Get("Cache-Control"); tc.noCacheCtrl != (got != "no-store") {
				t.Fatalf("Cache-Control = %q", got)
			}
		})
	}
}

func basic(user, pass string) string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.SetBasicAuth(user, pass)
	return req.Header.Get("Authorization")
}

// TestRateLimit: a route's group limits each organization on its own,
// per window, with RateLimit headers and a 429 that says when to retry.
func TestRateLimit(t *testing.T) {
	clock := apitest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	base, _ := serve(t, api.Config{Limiter: ratelimit.NewMemory(clock.Now), Registerer: reg}, routes())
	write := apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: owner}

	for i := 1; i <= ratelimit.WriteQuota; i++ {
		r := send(t, base, write)
		apitest.WantStatus(t, r, 200)
		if got, want := r.Header.Get("RateLimit"), fmt.Sprintf(`"api-key:write";r=%d`, ratelimit.WriteQuota-i); got != want {
			t.Fatalf("request %d: RateLimit %q, want %q", i, got, want)
		}
		if got := r.Header.Get("RateLimit-Policy"); got != `"api-key:write";q=20;w=60` {
			t.Fatalf("RateLimit-Policy %q", got)
		}
	}
	clock.Advance(15 * time.Second)
	r := send(t, base, write)
	m := apitest.WantError(t, r, 429)
	apitest.WantMessage(t, m, "Rate limit exceeded for api-key:write: 20 requests per 60 seconds per organization")
	if got := r.Header.Get("Retry-After"); got != "45" {
		t.Fatalf("Retry-After %q, want 45", got)
	}
	if got := r.Header.Get("RateLimit"); got != `"api-key:write";r=0` {
		t.Fatalf("RateLimit on the 429: %q", got)
	}

	// Another group, another organization, and public routes are not held.
	apitest.WantStatus(t, send(t, base, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: owner}), 200)
	apitest.WantStatus(t, send(t, base, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: other}), 200)
	apitest.WantStatus(t, send(t, base, apitest.Request{Method: "GET", Path: "/v1/images", Creds: owner}), 200)
	if r := send(t, base, apitest.Request{Method: "GET", Path: "/v1/images", Creds: owner}); r.Header.Get("RateLimit") != "" {
		t.Fatalf("a route without a group got RateLimit %q", r.Header.Get("RateLimit"))
	}
	// A refused request is not counted against the quota: once the
	// window passed, the whole quota is back.
	clock.Advance(ratelimit.Window)
	r = send(t, base, write)
	apitest.WantStatus(t, r, 200)
	if got := r.Header.Get("RateLimit"); got != `"api-key:write";r=19` {
		t.Fatalf("after the window: RateLimit %q", got)
	}

	if got := samples(t, reg, "pictor_origin_rate_limited_total"); len(got) != 1 || got[`group="api-key:write"`] != 1 {
		t.Fatalf("pictor_origin_rate_limited_total %v, want 1 for api-key:write", got)
	}

	t.Run("limiter failure", func(t *testing.T) {
		base, _ := serve(t, api.Config{Limiter: brokenLimiter{}}, routes())
		apitest.WantMessage(t, apitest.WantError(t, send(t, base, write), 500), "Internal error")
	})
}

var freshID = regexp.MustCompile(`^[0-9a-f]{24}$`)

// TestRequestID: a valid inbound id is kept, anything else replaced by a
// fresh one; the handler's context, the answer and the access log carry it.
func TestRequestID(t *testing.T) {
	var logs apitest.Buffer
	prev := slog.Default()
	slog.SetDefault(logging.New(&logs, slog.LevelInfo))
	t.Cleanup(func() { slog.SetDefault(prev) })
	base, _ := serve(t, api.Config{}, routes())

	tests := []struct {
		name    string
		inbound string
		keep    bool
	}{
		{"none", "", false},
		{"valid", "edge-7f3a:42", true},
		{"longest", strings.Repeat("r", contract.MaxRequestID), true},
		{"too long", strings.Repeat("r", contract.MaxRequestID+1), false},
		{"with a space", "a b", false},
		{"not ASCII", "zürich", false},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.inbound != "" {
				h[contract.HeaderRequestID] = tc.inbound
			}
			r := send(t, base, apitest.Request{Method: "GET", Path: "/things/1", Header: h})
			id := r.Header.Get(contract.HeaderRequestID)
			switch {
			case tc.keep && id != tc.inbound:
				t.Fatalf("request id %q, want the inbound %q", id, tc.inbound)
			case !tc.keep && !freshID.MatchString(id):
				t.Fatalf("request id %q for inbound %q, want a fresh one", id, tc.inbound)
			}
			if !tc.keep && seen[id] {
				t.Fatalf("fresh request id %q given twice", id)
			}
			seen[id] = true
			var got map[string]any
			r.Decode(t, &got)
			if got["request_id"] != id {
				t.Fatalf("the handler's context has request id %v, the answer %q", got["request_id"], id)
			}
			line := accessLog(t, logs.String(), id)
			if line["route"] != "GET /things/{id}" || line["status"] != float64(200) || line["method"] != "GET" || line["path"] != "/things/1" {
				t.Fatalf("access log %v", line)
			}
		})
	}
	// Error answers carry the id too, and log it as unmatched.
	r := send(t, base, apitest.Request{Method: "GET", Path: "/nope", Header: map[string]string{contract.HeaderRequestID: "err-1"}})
	if r.Header.Get(contract.HeaderRequestID) != "err-1" {
		t.Fatalf("404 request id %q", r.Header.Get(contract.HeaderRequestID))
	}
	if line := accessLog(t, logs.String(), "err-1"); line["route"] != "unmatched" || line["status"] != float64(404) {
		t.Fatalf("access log of a 404: %v", line)
	}
}

// accessLog returns the "request" log line of the request id. The router
// logs before ServeHTTP returns, and net/http sends a small answer only
// then, so the line is written by the time the client has the answer.
func accessLog(t *testing.T, logs, id string) map[string]any {
	t.Helper()
	for _, raw := range strings.Split(logs, "\n") {
		var line map[string]any
		if json.Unmarshal([]byte(raw), &line) != nil {
			continue
		}
		if line["msg"] == "request" && line["request_id"] == id {
			return line
		}
	}
	t.Fatalf("no access log line with request_id %q in:\n%s", id, logs)
	return nil
}

// TestPanics: a handler's panic is a 500 in the standard body and the
// server goes on; http.ErrAbortHandler aborts the answer as net/http does,
// and so does a panic once the answer started: the client (an edge, which
// caches) must see a broken answer, not a truncated one that looks whole.
func TestPanics(t *testing.T) {
	var logs apitest.Buffer
	prev := slog.Default()
	slog.SetDefault(logging.New(&logs, slog.LevelInfo))
	t.Cleanup(func() { slog.SetDefault(prev) })
	base, _ := serve(t, api.Config{}, routes(
		api.Route{Method: "GET", Pattern: "/panic", Public: true, Handler: func(http.ResponseWriter, *http.Request) { panic("boom: secret detail") }},
		api.Route{Method: "GET", Pattern: "/abort", Public: true, Handler: func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }},
		api.Route{Method: "GET", Pattern: "/half", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("\x89PNG\r\n\x1a\nfirst half"))
			http.NewResponseController(w).Flush()
			panic("encoder failed halfway")
		}},
	))
	r := send(t, base, apitest.Request{Method: "GET", Path: "/panic"})
	apitest.WantMessage(t, apitest.WantError(t, r, 500), "Internal error")
	if strings.Contains(string(r.Body), "secret detail") || r.Header.Get(contract.HeaderRequestID) == "" {
		t.Fatalf("panic answer: %s, request id %q", r.Body, r.Header.Get(contract.HeaderRequestID))
	}
	req, _ := http.NewRequest("GET", base+"/abort", nil)
	if resp, err := noRedirects.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("an aborted handler answered %d", resp.StatusCode)
	}

	req, _ = http.NewRequest("GET", base+"/half", nil)
	req.Header.Set(contract.HeaderRequestID, "half-1")
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("the header, flushed before the panic, did not arrive: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatalf("a handler that panicked midway gave a clean %d answer of %d bytes: %q", resp.StatusCode, len(body), body)
	}
	// The access log, written before the connection is cut, says so.
	if line := accessLog(t, logs.String(), "half-1"); line["status"] != float64(200) || line["aborted"] != true {
		t.Fatalf("access log of an answer cut short: %v", line)
	}
	if !strings.Contains(logs.String(), "encoder failed halfway") {
		t.Fatalf("the panic was not logged:\n%s", logs.String())
	}

	apitest.WantStatus(t, send(t, base, apitest.Request{Method: "GET", Path: "/things/1"}), 200)
}

// serveEcho is echo as an api.HandlerFunc.
func serveEcho(w http.ResponseWriter, r *http.Request) error {
	echo(w, r)
	return nil
}

// TestServeErrors: a Serve handler's error is answered once, in the
// standard body, with what the guard set (Cache-Control) and what the
// handler set before failing; an error after the answer started leaves
// that answer as it is (no second body) and is logged.
func TestServeErrors(t *testing.T) {
	var logs apitest.Buffer
	prev := slog.Default()
	slog.SetDefault(logging.New(&logs, slog.LevelInfo))
	t.Cleanup(func() { slog.SetDefault(prev) })
	base, _ := serve(t, api.Config{Authenticator: authenticator{}, Limiter: ratelimit.NewMemory(nil)}, routes(
		api.Route{Method: "GET", Pattern: "/fails", Public: true, Serve: func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("X-Before", "kept")
			return apierr.Field("thing", "is wrong")
		}},
		api.Route{Method: "GET", Pattern: "/v1/usage", Permission: perm.UsageRead, Serve: func(http.ResponseWriter, *http.Request) error {
			return apierr.NotFound("Nothing here")
		}},
		api.Route{Method: "GET", Pattern: "/late", Public: true, Serve: func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusAccepted)
			w.Write([]byte("started"))
			return errors.New("failed after answering: late detail")
		}},
		api.Route{Method: "GET", Pattern: "/ok", Public: true, Serve: serveEcho},
	))

	r := send(t, base, apitest.Request{Method: "GET", Path: "/fails"})
	apitest.WantField(t, r, "thing")
	if r.Header.Get("X-Before") != "kept" {
		t.Fatalf("headers set before the error: %v", r.Header)
	}

	r = send(t, base, apitest.Request{Method: "GET", Path: "/v1/usage", Header: map[string]string{"Authorization": basic("owner", "s3cret")}})
	apitest.WantMessage(t, apitest.WantError(t, r, http.StatusNotFound), "Nothing here")
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("guarded error answer: Cache-Control %q", r.Header.Get("Cache-Control"))
	}

	r = send(t, base, apitest.Request{Method: "GET", Path: "/late", Header: map[string]string{contract.HeaderRequestID: "late-1"}})
	if r.Status != http.StatusAccepted || string(r.Body) != "started" {
		t.Fatalf("answer of a handler failing after it started: %d %q", r.Status, r.Body)
	}
	if line := accessLog(t, logs.String(), "late-1"); line["status"] != float64(http.StatusAccepted) {
		t.Fatalf("access log: %v", line)
	}
	if !strings.Contains(logs.String(), "late detail") || strings.Contains(logs.String(), "superfluous") {
		t.Fatalf("the late error was not logged, or a second answer was attempted:\n%s", logs.String())
	}

	apitest.WantStatus(t, send(t, base, apitest.Request{Method: "GET", Path: "/ok"}), http.StatusOK)
}

// TestRequestMetrics: answers are counted by route pattern (never by raw
// path) and status.
func TestRequestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	base, _ := serve(t, api.Config{Registerer: reg}, routes())
	for _, path := range []string{"/things/1", "/things/2", "/nope", "/nope/again"} {
		send(t, base, apitest.Request{Method: "GET", Path: path})
	}
	send(t, base, apitest.Request{Method: "GET", Path: "/v1/images"})
	want := map[string]float64{
		`code="200",route="GET /things/{id}"`: 2,
		`code="401",route="GET /v1/images"`:   1,
		`code="404",route="unmatched"`:        2,
	}
	if got := samples(t, reg, "pictor_origin_http_requests_total"); !maps.Equal(got, want) {
		t.Fatalf("pictor_origin_http_requests_total %v, want %v", got, want)
	}
	if got := samples(t, reg, "pictor_origin_http_request_duration_seconds"); len(got) != 3 {
		t.Fatalf("duration histograms %v, want one per route", got)
	}
}

// samples gathers the metric family name: its counters' values (a
// histogram's sample count) by their labels, written name="value" and
// joined by commas in label-name order.
func samples(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := m.GetCounter().GetValue()
			if h := m.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			out[strings.Join(labels, ",")] = v
		}
	}
	return out
}

// TestHandlerAnswersAreNotRewritten: the Listener rewrites only net/http's
// own answers; a handler's plain-text error, on a fresh or a kept-alive
// connection, reaches the client as the handler wrote it.
func TestHandlerAnswersAreNotRewritten(t *testing.T) {
	base, _ := serve(t, api.Config{}, routes(api.Route{Method: "GET", Pattern: "/teapot", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "short and stout", http.StatusTeapot)
	}}))
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(c)
	for i := range 2 { // the second on the kept-alive connection
		io.WriteString(c, "GET /teapot HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 418 || string(body) != "short and stout\n" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") || resp.Close {
			t.Fatalf("answer %d: %d %q, Content-Type %q, close %v", i, resp.StatusCode, body, resp.Header.Get("Content-Type"), resp.Close)
		}
	}
}

// TestCloseAll: a forced stop closes every connection, hijacked ones
// included, and Open counts what is left.
func TestCloseAll(t *testing.T) {
	hijacked := make(chan struct{})
	base, ln := serve(t, api.Config{}, routes(api.Route{Method: "GET", Pattern: "/hijack", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello")
		bw.Flush()
		close(hijacked)
		_ = conn // held open until CloseAll
	}}))
	addr := strings.TrimPrefix(base, "http://")
	hj, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer hj.Close()
	io.WriteString(hj, "GET /hijack HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case <-hijacked:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not hijack")
	}
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET /things/1 HTTP/1.1\r\nHost: x\r\n\r\n")
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	if n := ln.Open(); n != 2 {
		t.Fatalf("Open = %d before CloseAll, want 2 (one hijacked, one idle)", n)
	}
	if n := ln.CloseAll(); n != 2 {
		t.Fatalf("CloseAll closed %d, want 2", n)
	}
	if n := ln.Open(); n != 0 {
		t.Fatalf("Open = %d after CloseAll", n)
	}
	hj.SetReadDeadline(time.Now().Add(10 * time.Second))
	if rest, err := io.ReadAll(hj); err != nil && !isReset(err) {
		t.Fatalf("hijacked connection after CloseAll: %q, %v", rest, err)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the idle connection is still open after CloseAll")
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// TestParseOwnAnswer: what net/http writes for a request it refuses is
// recognized, with the detail it appends to the reason; anything else is
// left alone.
func TestParseOwnAnswer(t *testing.T) {
	tests := []struct {
		name   string
		p      string
		ok     bool
		proto  string
		code   int
		detail string
	}{
		{"431", "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large", true, "HTTP/1.1", 431, ""},
		{"400 with a detail", "HTTP/1.1 400 Bad Request: missing required Host header\r\nConnection: close\r\n\r\n", true, "HTTP/1.1", 400, "missing required Host header"},
		{"HTTP/1.0", "HTTP/1.0 505 HTTP Version Not Supported\r\n\r\n", true, "HTTP/1.0", 505, ""},
		{"detail kept printable", "HTTP/1.1 400 Bad Request: bad\x01 byte\xff\r\n\r\n", true, "HTTP/1.1", 400, "bad byte"},
		{"detail bounded", "HTTP/1.1 400 Bad Request: " + strings.Repeat("x", 300) + "\r\n\r\n", true, "HTTP/1.1", 400, strings.Repeat("x", 200)},
		{"success", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, "", 0, ""},
		{"redirect", "HTTP/1.1 301 Moved Permanently\r\n\r\n", false, "", 0, ""},
		{"header block not whole", "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n", false, "", 0, ""},
		{"four-digit code", "HTTP/1.1 4000\r\n\r\n", false, "", 0, ""},
		{"HTTP/2", "HTTP/2.0 400 Bad Request\r\n\r\n", false, "", 0, ""},
		{"a body chunk", "\x89PNG\r\n\x1a\n\r\n\r\n", false, "", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			proto, code, detail, ok := api.ParseOwnAnswer([]byte(tc.p))
			if ok != tc.ok || proto != tc.proto || code != tc.code || detail != tc.detail {
				t.Fatalf("ParseOwnAnswer = %q, %d, %q, %v; want %q, %d, %q, %v", proto, code, detail, ok, tc.proto, tc.code, tc.detail, tc.ok)
			}
		})
	}
}

// TestCheckBeforeRateLimit: a route's Check refuses before the rate limit,
// so its refusal costs no allowance and carries no RateLimit header.
func TestCheckBeforeRateLimit(t *testing.T) {
	routes := []api.Route{{Method: http.MethodGet, Pattern: "/v1/proxies", Permission: perm.ProxiesRead, Group: ratelimit.ProxyRead,
		Check: func(p *auth.Principal) error {
			if p.APIID == "owner" {
				return apierr.Forbidden("Proxies need the pro plan or higher")
			}
			return nil
		},
		Handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }}}
	clock := apitest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	base, _ := serve(t, api.Config{Limiter: ratelimit.NewMemory(clock.Now)}, routes)
	for range ratelimit.ReadQuota + 5 {
		r := send(t, base, apitest.Request{Method: "GET", Path: "/v1/proxies", Creds: owner})
		apitest.WantMessage(t, apitest.WantError(t, r, 403), "pro plan")
		if r.Header.Get("RateLimit") != "" {
			t.Fatalf("a refused check carries RateLimit %q", r.Header.Get("RateLimit"))
		}
	}
	r := send(t, base, apitest.Request{Method: "GET", Path: "/v1/proxies", Creds: other})
	apitest.WantStatus(t, r, 204)
	if got := r.Header.Get("RateLimit"); got != fmt.Sprintf(`"proxy:read";r=%d`, ratelimit.ReadQuota-1) {
		t.Fatalf("RateLimit %q after the first allowed request", got)
	}
}

// TestWithCaller: a request made in-process for a principal skips the
// credentials but keeps the permission check and the rate limit shared
// with the organization's REST callers; a network request cannot claim it.
func TestWithCaller(t *testing.T) {
	clock := apitest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	router := api.New(api.Config{Authenticator: authenticator{}, Limiter: ratelimit.NewMemory(clock.Now)}, routes())
	call := func(p *auth.Principal, method, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil).WithContext(api.WithCaller(context.Background(), p))
		rec := httptest.NewRecorder()
		router.ServeHTTP(rec, req)
		return rec
	}
	org1 := &org.Org{ID: "org-1", Plan: "pro"}
	writer := &auth.Principal{Org: org1, KeyID: "key-mcp", APIID: "mcp", Grant: perm.Grant{Permissions: []perm.Permission{perm.APIKeysCreateUpdate}}}
	rec := call(writer, "POST", "/v1/api-keys")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"org":"org-1"`) {
		t.Fatalf("in-process call: %d %s", rec.Code, rec.Body)
	}
	if rec := call(writer, "GET", "/v1/images"); rec.Code != 403 || !strings.Contains(rec.Body.String(), "images:read") {
		t.Fatalf("missing permission: %d %s", rec.Code, rec.Body)
	}
	// The group's allowance is the organization's, whoever spends it.
	for range ratelimit.WriteQuota - 1 {
		if rec := call(writer, "POST", "/v1/api-keys"); rec.Code != 200 {
			t.Fatalf("within the quota: %d %s", rec.Code, rec.Body)
		}
	}
	if rec := call(writer, "POST", "/v1/api-keys"); rec.Code != 429 {
		t.Fatalf("past the quota: %d %s", rec.Code, rec.Body)
	}
	// Over the network the same router wants credentials.
	srv := httptest.NewServer(router)
	defer srv.Close()
	apitest.WantError(t, send(t, srv.URL, apitest.Request{Method: "GET", Path: "/v1/images"}), 401)
	r := send(t, srv.URL, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: owner})
	apitest.WantError(t, r, 429) // REST shares the allowance the in-process calls spent
}
