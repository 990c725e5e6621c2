package origin_test

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/logging"
	"github.com/pictorhq/pictor/wasm"
)

// logs receives every log line of every origin this test binary runs.
var logs = &apitest.Buffer{}

func TestMain(m *testing.M) {
	slog.SetDefault(logging.New(logs, slog.LevelDebug))
	// Every request of these tests and its answer must agree with the
	// API description.
	apitest.Validator = (&openAPICheck{}).validate
	code := m.Run()
	if shared.sandbox != nil {
		shared.sandbox.Close(context.Background())
	}
	pgtest.StopShared()
	os.Exit(code)
}

// shared is the template sandbox every origin of this test binary uses
// (origin.Config.Sandbox), started by the first: under the race detector
// each start took a fifth of a second of CPU, for 145 origins. A test that
// counts the sandbox's renders starts its own (Sandbox nil).
var shared struct {
	once    sync.Once
	sandbox *wasm.Engine
	err     error
}

func sharedSandbox(t *testing.T) *wasm.Engine {
	t.Helper()
	shared.once.Do(func() {
		c := origin.DefaultConfig().WASM
		c.CompilationCacheDir = wasmCacheDir()
		shared.sandbox, shared.err = wasm.New(context.Background(), c)
	})
	if shared.err != nil {
		t.Fatalf("template sandbox: %v", shared.err)
	}
	return shared.sandbox
}

// wasmCacheDir is the compiled sandbox every origin of the run loads:
// compiling it is the slowest part of a start, especially under -race.
func wasmCacheDir() string { return filepath.Join(os.TempDir(), "pictor-wasm-test-cache") }

// testOrigin is a real origin on a loopback port over a temp data dir.
type testOrigin struct {
	URL     string
	DataDir string
	Clock   *apitest.Clock
	OrgID   string
	Owner   apitest.Creds
	origin  *origin.Origin
}

// startOrigin runs an origin; configure may adjust its Config.
//
// Each origin has its own listener, data directory, clock and browsers, so
// the package's slowest tests of the API (tens of renders each) call
// t.Parallel and run two at a time after the others, which keeps make test
// within its time on two cores. A test that counts processes, descriptors
// or anything else host-wide stays sequential (parallel tests start only
// once every sequential one is done), and so do the tests that drive the
// console in a browser: tens of page loads under one deadline, which two
// at a time on a busy host passed (TestConsoleInABrowser, 68 s against its
// minute in a fresh-clone make test). Chromium starts at an origin's first
// render (render.Config.Lazy): most tests here never render.
func startOrigin(t *testing.T, configure ...func(*origin.Config)) *testOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	announce := &apitest.Buffer{}
	clock := apitest.NewClock(time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC))
	cfg := origin.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Addr = ln.Addr().String()
	cfg.Listener = ln
	cfg.Announce = announce
	cfg.AllowPrivateURLs = true
	cfg.Render.Lazy = true
	cfg.Now = clock.Now
	cfg.WASM.CompilationCacheDir = wasmCacheDir()
	cfg.Sandbox = sharedSandbox(t)
	for _, c := range configure {
		c(&cfg)
	}
	o, err := origin.New(t.Context(), cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := o.Stop(ctx); err != nil {
			t.Errorf("stop origin: %v", err)
		}
	})
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	to := &testOrigin{URL: "http://" + o.Addr(), DataDir: cfg.DataDir, Clock: clock, origin: o}
	sc := bufio.NewScanner(strings.NewReader(announce.String()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case "org_id:":
			to.OrgID = f[1]
		case "api_id:":
			to.Owner.APIID = f[1]
		case "api_key:":
			to.Owner.APIKey = f[1]
		}
	}
	if to.Owner.APIKey == "" && cfg.CreateDefaultOrg {
		t.Fatalf("no default credentials announced:\n%s", announce.String())
	}
	return to
}

func (o *testOrigin) do(t testing.TB, r apitest.Request) *apitest.Response {
	t.Helper()
	return apitest.Do(t, o.URL, r)
}

// newOrg creates another organization through the running server's admin
// endpoint and returns its id and owner credentials.
func (o *testOrigin) newOrg(ctx context.Context, t testing.TB, plan string) (string, apitest.Creds) {
	t.Helper()
	c, err := admin.Dial(o.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	created, err := c.CreateOrg(ctx, "org "+plan, plan)
	if err != nil {
		t.Fatal(err)
	}
	return created.OrgID, apitest.Creds{APIID: created.Key.APIID, APIKey: created.Key.APIKey}
}

// key is an API key as the API returns it.
type key struct {
	ID          string   `json:"id"`
	APIID       string   `json:"api_id"`
	APIKey      string   `json:"api_key"`
	Name        string   `json:"name"`
	Description *string  `json:"description"`
	Enabled     bool     `json:"enabled"`
	Permissions []string `json:"permissions"`
	AllFuture   bool     `json:"all_future_permissions"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
}

func (k key) creds() *apitest.Creds { return &apitest.Creds{APIID: k.APIID, APIKey: k.APIKey} }

// createKey creates a key as caller and fails the test unless it succeeds.
func (o *testOrigin) createKey(t testing.TB, caller apitest.Creds, body map[string]any) key {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &caller, JSON: body})
	apitest.WantStatus(t, r, 200)
	var k key
	r.Decode(t, &k)
	return k
}

// writesLeft spreads writes over time so tests that need many writes do not
// hit the management rate limit: it advances the clock past the window.
func (o *testOrigin) nextWindow() { o.Clock.Advance(61 * time.Second) }
