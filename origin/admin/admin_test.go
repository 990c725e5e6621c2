package admin_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/seal"
)

// server is a running admin endpoint over a real store.
type server struct {
	dataDir string
	orgs    *org.Store
	keys    *apikey.Store
	srv     *admin.Server
	served  chan error
	store   kv.Store

	mu        sync.Mutex
	suspended []string // OnSuspend calls
	failNext  error    // OnSuspend's next answer
	stopOnce  sync.Once
}

func start(t *testing.T) *server {
	t.Helper()
	return startWith(t, nil)
}

// startWith starts a server whose service configure completes.
func startWith(t *testing.T, configure func(*admin.Service)) *server {
	t.Helper()
	store, err := pebblekv.Open(filepath.Join(t.TempDir(), "db"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	master := make([]byte, 32)
	rand.Read(master)
	box, err := seal.New(master)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{dataDir: t.TempDir(), store: store, served: make(chan error, 1)}
	s.orgs = org.NewStore(store, nil)
	s.keys = apikey.NewStore(store, box, s.orgs, nil)
	svc := &admin.Service{Orgs: s.orgs, Keys: s.keys, Store: store, OnSuspend: func(_ context.Context, orgID string) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.suspended = append(s.suspended, orgID)
		err := s.failNext
		s.failNext = nil
		return err
	}}
	if configure != nil {
		configure(svc)
	}
	if s.srv, err = admin.NewServer(svc, s.dataDir); err != nil {
		t.Fatal(err)
	}
	go func() { s.served <- s.srv.Serve() }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop stops the server and checks that Serve ended cleanly.
func (s *server) stop(t *testing.T) {
	t.Helper()
	s.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.srv.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		select {
		case err := <-s.served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after Stop")
		}
	})
}

func (s *server) onSuspend() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.suspended)
}

func (s *server) endpoint(t *testing.T) admin.Endpoint {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(s.dataDir, admin.EndpointFile))
	if err != nil {
		t.Fatal(err)
	}
	var ep admin.Endpoint
	if err := json.Unmarshal(raw, &ep); err != nil {
		t.Fatal(err)
	}
	return ep
}

func (s *server) dial(t *testing.T) *admin.Client {
	t.Helper()
	c, err := admin.Dial(s.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// post sends a raw command to the endpoint.
func post(t *testing.T, ep admin.Endpoint, method, path, authorization, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+ep.Addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: %d with a body that is not JSON: %q", method, path, resp.StatusCode, raw)
		}
	}
	return resp.StatusCode, m
}

// TestEndpointFile: the endpoint is a loopback address and a random token
// in a file only the server's user can read, removed by Stop.
func TestEndpointFile(t *testing.T) {
	s := start(t)
	path := filepath.Join(s.dataDir, admin.EndpointFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Fatalf("endpoint file mode %v, want 0600", mode)
	}
	ep := s.endpoint(t)
	host, _, err := net.SplitHostPort(ep.Addr)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		t.Fatalf("endpoint address %q is not loopback (%v)", ep.Addr, err)
	}
	if b, err := hex.DecodeString(ep.Token); err != nil || len(b) < 32 {
		t.Fatalf("token %q is not 32 random bytes in hex", ep.Token)
	}
	if ep.PID != os.Getpid() {
		t.Fatalf("pid %d, want %d", ep.PID, os.Getpid())
	}
	// Another server gets another token.
	if other := start(t); other.endpoint(t).Token == ep.Token {
		t.Fatal("two servers share a token")
	}
	// No temporary file is left beside it.
	entries, _ := os.ReadDir(s.dataDir)
	if len(entries) != 1 {
		t.Fatalf("data directory holds %v, want only %s", entries, admin.EndpointFile)
	}

	c := s.dial(t) // dialed while the server runs
	s.stop(t)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("endpoint file after Stop: %v", err)
	}
	if _, err := admin.Dial(s.dataDir); !errors.Is(err, admin.ErrNoServer) {
		t.Fatalf("Dial after Stop = %v, want ErrNoServer", err)
	}
	if _, err := c.CreateOrg(t.Context(), "late", "pro"); err == nil || !strings.Contains(err.Error(), "reach the running server") {
		t.Fatalf("a command after Stop = %v", err)
	}
}

func TestDial(t *testing.T) {
	tests := []struct {
		name    string
		content *string // nil: no endpoint file
		wantErr error   // nil: any error
	}{
		{"no server", nil, admin.ErrNoServer},
		{"not JSON", ptr("{"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.content != nil {
				if err := os.WriteFile(filepath.Join(dir, admin.EndpointFile), []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := admin.Dial(dir)
			if err == nil || c != nil {
				t.Fatalf("Dial = %v, %v; want an error", c, err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Dial = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr == nil && errors.Is(err, admin.ErrNoServer) {
				t.Fatalf("a broken endpoint file reads as no server: %v", err)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestBearerToken: only "Bearer <the endpoint's token>" is served; the
// check comes before routing, and a refusal has the JSON error body.
func TestBearerToken(t *testing.T) {
	s := start(t)
	ep := s.endpoint(t)
	tests := []struct {
		name, method, path, auth string
		status                   int
	}{
		{"no credentials", "POST", "/admin/orgs", "", 401},
		{"wrong token", "POST", "/admin/orgs", "Bearer " + strings.Repeat("0", len(ep.Token)), 401},
		{"token prefix", "POST", "/admin/orgs", "Bearer " + ep.Token[:len(ep.Token)-1], 401},
		{"token with a suffix", "POST", "/admin/orgs", "Bearer " + ep.Token + "0", 401},
		{"basic scheme", "POST", "/admin/orgs", "Basic " + ep.Token, 401},
		{"lowercase scheme", "POST", "/admin/orgs", "bearer " + ep.Token, 401},
		{"bare token", "POST", "/admin/orgs", ep.Token, 401},
		{"wrong token on an unknown path", "POST", "/admin/nothing", "Bearer x", 401},
		{"wrong token on a suspension", "POST", "/admin/orgs/x/suspend", "Bearer x", 401},
		{"right token, unknown path", "POST", "/admin/nothing", "Bearer " + ep.Token, 404},
		{"right token, wrong method", "PUT", "/admin/orgs", "Bearer " + ep.Token, 405},
		{"wrong token on a listing", "GET", "/admin/orgs", "Bearer x", 401},
		{"wrong token on a key", "POST", "/admin/orgs/x/keys", "Bearer x", 401},
		{"wrong token on a backup", "POST", "/admin/backup", "Bearer x", 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, ep, tc.method, tc.path, tc.auth, `{"name":"x","plan":"pro"}`)
			if status != tc.status {
				t.Fatalf("status %d, want %d", status, tc.status)
			}
			if status == 401 && (body["message"] != "invalid admin token" || body["statusCode"] != float64(401)) {
				t.Fatalf("401 body %v", body)
			}
		})
	}
	if exists, err := s.orgs.Any(t.Context()); err != nil || exists {
		t.Fatalf("a refused command created an organization (%v)", err)
	}
	// A client holding a stale token is refused with the server's message.
	raw, _ := json.Marshal(admin.Endpoint{Addr: ep.Addr, Token: strings.Repeat("ab", 32), PID: ep.PID})
	stale := t.TempDir()
	if err := os.WriteFile(filepath.Join(stale, admin.EndpointFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := admin.Dial(stale)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateOrg(t.Context(), "acme", "pro"); err == nil || !strings.Contains(err.Error(), "invalid admin token") {
		t.Fatalf("CreateOrg with a stale token = %v", err)
	}
}

// TestCreateOrg: the organization is stored with a first key that holds
// every permission, present and future, and authenticates.
func TestCreateOrg(t *testing.T) {
	s := start(t)
	c := s.dial(t)
	created, err := c.CreateOrg(t.Context(), "  Acme  ", "pro")
	if err != nil {
		t.Fatal(err)
	}
	if created.OrgID == "" || created.Name != "Acme" || created.Plan != "pro" {
		t.Fatalf("created %+v", created)
	}
	if created.Key.APIID == "" || created.Key.APIKey == "" || !created.Key.AllFuture || !created.Key.Enabled {
		t.Fatalf("first key %+v", created.Key)
	}
	o, err := s.orgs.Get(t.Context(), created.OrgID)
	if err != nil || o.Name != "Acme" || o.Plan != "pro" || o.Suspended {
		t.Fatalf("stored organization %+v (%v)", o, err)
	}
	p, err := s.keys.Authenticate(context.Background(), created.Key.APIID, created.Key.APIKey)
	if err != nil {
		t.Fatalf("the first key does not authenticate: %v", err)
	}
	if p.Org.ID != created.OrgID || !p.Grant.AllFuture {
		t.Fatalf("principal %+v", p)
	}

	tests := []struct {
		name, orgName, plan, want string
	}{
		{"unknown plan", "Acme", "platinum", "unknown plan"},
		{"empty name", "   ", "pro", "organization name"},
		{"name too long", strings.Repeat("n", 256), "pro", "organization name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CreateOrg(t.Context(), tc.orgName, tc.plan)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CreateOrg(%q, %q) = %v, want an error mentioning %q", tc.orgName, tc.plan, err, tc.want)
			}
		})
	}
	status, body := post(t, s.endpoint(t), "POST", "/admin/orgs", "Bearer "+s.endpoint(t).Token, `{"name":`)
	if status != 400 || body["message"] != "malformed request" {
		t.Fatalf("malformed command: %d %v", status, body)
	}
}

// TestSuspendAndResume: a suspension is stored, purged at the edges
// (OnSuspend) before it answers, and stops the organization's keys; a
// resumption purges nothing and lets them in again.
func TestSuspendAndResume(t *testing.T) {
	s := start(t)
	c := s.dial(t)
	created, err := c.CreateOrg(t.Context(), "Acme", "basic")
	if err != nil {
		t.Fatal(err)
	}
	authenticate := func() error {
		_, err := s.keys.Authenticate(context.Background(), created.Key.APIID, created.Key.APIKey)
		return err
	}

	state, err := c.SetSuspended(t.Context(), created.OrgID, true)
	if err != nil {
		t.Fatal(err)
	}
	if *state != (admin.OrgState{OrgID: created.OrgID, Name: "Acme", Plan: "basic", Suspended: true}) {
		t.Fatalf("suspend answered %+v", state)
	}
	if got := s.onSuspend(); !slices.Equal(got, []string{created.OrgID}) {
		t.Fatalf("OnSuspend calls %q", got)
	}
	if err := authenticate(); !errors.Is(err, auth.ErrSuspended) {
		t.Fatalf("a suspended organization's key: %v", err)
	}

	state, err = c.SetSuspended(t.Context(), created.OrgID, false)
	if err != nil || state.Suspended {
		t.Fatalf("resume answered %+v (%v)", state, err)
	}
	if got := s.onSuspend(); len(got) != 1 {
		t.Fatalf("resuming purged: OnSuspend calls %q", got)
	}
	if err := authenticate(); err != nil {
		t.Fatalf("a resumed organization's key: %v", err)
	}

	tests := []struct {
		name      string
		id        string
		suspend   bool
		failPurge error
		want      string
	}{
		{"suspend an unknown organization", "no-such-org", true, nil, "organization not found"},
		{"resume an unknown organization", "no-such-org", false, nil, "organization not found"},
		{"id that needs escaping", "a/b c", true, nil, "organization not found"},
		{"purge at the edges fails", created.OrgID, true, errors.New("edge unreachable"), "internal error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.mu.Lock()
			s.failNext = tc.failPurge
			s.mu.Unlock()
			_, err := c.SetSuspended(t.Context(), tc.id, tc.suspend)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SetSuspended(%q, %v) = %v, want an error mentioning %q", tc.id, tc.suspend, err, tc.want)
			}
			if strings.Contains(err.Error(), "edge unreachable") {
				t.Fatalf("the cause leaked to the client: %v", err)
			}
		})
	}
}

func TestIsUserError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"unknown organization", org.ErrNotFound, true},
		{"unknown plan, wrapped", errors.Join(errors.New("create"), org.ErrUnknownPlan), true},
		{"invalid name", org.ErrInvalidName, true},
		{"store failure", kv.ErrClosed, false},
		{"key limit", apikey.ErrLimit, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := admin.IsUserError(tc.err); got != tc.want {
				t.Fatalf("IsUserError(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
