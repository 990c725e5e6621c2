package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/pictor"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/render"
)

// server is a `pictor serve` running in-process on loopback ports.
type server struct {
	URL       string // the edge: where clients talk
	OriginURL string
	MCPURL    string // the MCP endpoint announced
	DataDir   string
	OrgID     string
	Owner     apitest.Creds // the default organization's first key, if one was created
	Stdout    *apitest.Buffer
	Logs      *apitest.Buffer
	stop      func() error
}

// startServe runs `pictor serve` on dataDir with extra flags and waits for
// its announcement.
func startServe(t *testing.T, dataDir string, environ map[string]string, extra ...string) *server {
	t.Helper()
	args := append([]string{"serve", "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--origin-addr", "127.0.0.1:0",
		"--allow-private-urls", "--log-level", "debug"}, extra...)
	s := &server{DataDir: dataDir, Stdout: &apitest.Buffer{}, Logs: &apitest.Buffer{}}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, env{stdout: pw, stderr: s.Logs, getenv: func(k string) string {
			if k == "PICTOR_WASM_CACHE" && environ[k] == "" {
				return wasmCache
			}
			return environ[k]
		}})
		pw.Close()
		done <- err
	}()
	sc := bufio.NewScanner(pr)
	baseURL := ""
	for (baseURL == "" || s.MCPURL == "") && sc.Scan() {
		line := sc.Text()
		s.Stdout.Write([]byte(line + "\n"))
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "org_id:":
			s.OrgID = f[1]
		case len(f) == 2 && f[0] == "api_id:":
			s.Owner.APIID = f[1]
		case len(f) == 2 && f[0] == "api_key:":
			s.Owner.APIKey = f[1]
		case strings.HasPrefix(line, "Pictor is listening on "):
			s.URL = f[4]
			s.OriginURL = strings.TrimSuffix(f[8], ")")
		case strings.HasPrefix(line, "Base URL: "):
			baseURL = f[2]
		case strings.HasPrefix(line, "MCP endpoint: "):
			s.MCPURL = f[2]
		}
	}
	if baseURL == "" || s.MCPURL == "" {
		cancel()
		t.Fatalf("serve did not start: %v\nlogs:\n%s", <-done, s.Logs.String())
	}
	go io.Copy(s.Stdout, pr)
	var once sync.Once
	var stopErr error
	s.stop = func() error {
		once.Do(func() { cancel(); stopErr = <-done })
		return stopErr
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("serve stopped with error: %v", err)
		}
	})
	return s
}

func (s *server) do(t *testing.T, r apitest.Request) *apitest.Response {
	t.Helper()
	return apitest.Do(t, s.URL, r)
}

// runCmd runs one pictor command in-process and returns its stdout.
func runCmd(t *testing.T, environ map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut apitest.Buffer
	err := run(context.Background(), args, env{stdout: &out, stderr: &errOut, getenv: func(k string) string { return environ[k] }})
	return out.String(), err
}

func TestServeEndToEnd(t *testing.T) {
	s := startServe(t, t.TempDir(), nil)
	if s.Owner.APIKey == "" || s.OrgID == "" {
		t.Fatalf("first start did not print the default credentials:\n%s", s.Stdout.String())
	}
	for _, base := range []string{s.URL, s.OriginURL} {
		r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/healthz"})
		apitest.WantStatus(t, r, 200)
		r = apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/metrics"})
		apitest.WantStatus(t, r, 200)
		if !strings.Contains(string(r.Body), "# TYPE pictor_") {
			t.Fatalf("%s/metrics has no pictor metrics", base)
		}
	}
	// The API answers through the edge, with the caller's request id.
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &s.Owner,
		JSON: map[string]any{"permissions": []string{"images:create"}}, Header: map[string]string{"X-Request-Id": "e2e-1"}})
	apitest.WantStatus(t, r, 200)
	if got := r.Header.Values("X-Request-Id"); len(got) != 1 || got[0] != "e2e-1" {
		t.Fatalf("X-Request-Id through the edge = %v", got)
	}
	if r.Header.Get("RateLimit-Policy") == "" || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("origin headers lost at the edge: %v", r.Header)
	}
	// The origin saw the client's address in X-Forwarded-For.
	if !strings.Contains(s.Logs.String(), `"request_id":"e2e-1"`) || !strings.Contains(s.Logs.String(), `"forwarded_for":"127.0.0.1"`) {
		t.Fatalf("origin log lacks the forwarded request:\n%s", s.Logs.String())
	}
	apitest.WantError(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/unknown"}), 404)
	apitest.WantError(t, s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys", Creds: &s.Owner}), 405)
	if strings.Contains(s.Logs.String(), s.Owner.APIKey) {
		t.Fatal("the owner secret appears in the logs")
	}
	edgeMetrics := string(apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: "/metrics"}).Body)
	if !strings.Contains(edgeMetrics, `pictor_edge_forwarded_total{code="200"}`) {
		t.Fatalf("edge metrics do not count forwarded requests:\n%s", edgeMetrics)
	}
}

func TestServeRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, nil)
	owner := s.Owner
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s2 := startServe(t, dir, nil)
	if s2.Owner.APIKey != "" || strings.Contains(s2.Stdout.String(), "api_key") {
		t.Fatalf("credentials printed again on restart:\n%s", s2.Stdout.String())
	}
	apitest.WantStatus(t, s2.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &owner}), 200)
}

func TestServeDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	startServe(t, dir, nil)
	_, err := runCmd(t, nil, "serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--origin-addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second serve on the same data dir: %v", err)
	}
}

func TestAdminCommands(t *testing.T) {
	dir := t.TempDir()
	// Without a server, admin opens the store itself.
	out, err := runCmd(t, nil, "admin", "org", "create", "--data-dir", dir, "--name", "acme", "--plan", "pro")
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		OrgID string `json:"org_id"`
		Key   struct {
			ID          string   `json:"id"`
			APIID       string   `json:"api_id"`
			APIKey      string   `json:"api_key"`
			Permissions []string `json:"permissions"`
			AllFuture   bool     `json:"all_future_permissions"`
		} `json:"key"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatalf("admin output is not one JSON object: %v\n%s", err, out)
	}
	if created.OrgID == "" || created.Key.APIID == "" || created.Key.APIKey == "" || created.Key.ID == "" || !created.Key.AllFuture {
		t.Fatalf("admin output: %s", out)
	}

	// With a server holding the store, admin goes through its endpoint.
	s := startServe(t, dir, nil)
	if s.Owner.APIKey != "" {
		t.Fatal("a default organization was created in a data dir that had one")
	}
	acme := apitest.Creds{APIID: created.Key.APIID, APIKey: created.Key.APIKey}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &acme}), 200)

	out, err = runCmd(t, nil, "admin", "org", "create", "--data-dir", dir, "--name", "globex", "--plan", "free")
	if err != nil {
		t.Fatalf("admin while serving: %v", err)
	}
	var second struct {
		OrgID string `json:"org_id"`
		Key   struct {
			APIID  string `json:"api_id"`
			APIKey string `json:"api_key"`
		} `json:"key"`
	}
	json.Unmarshal([]byte(out), &second)
	globex := apitest.Creds{APIID: second.Key.APIID, APIKey: second.Key.APIKey}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &globex}), 200)

	if _, err := runCmd(t, nil, "admin", "org", "suspend", "--data-dir", dir, "--org", created.OrgID); err != nil {
		t.Fatal(err)
	}
	apitest.WantError(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &acme}), 401)
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &globex}), 200)
	if _, err := runCmd(t, nil, "admin", "org", "resume", "--data-dir", dir, "--org", created.OrgID); err != nil {
		t.Fatal(err)
	}
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &acme}), 200)

	bad := []struct {
		name string
		args []string
		want string
	}{
		{"unknown plan", []string{"admin", "org", "create", "--data-dir", dir, "--name", "x", "--plan", "gold"}, "unknown plan"},
		{"missing name", []string{"admin", "org", "create", "--data-dir", dir, "--plan", "free"}, "--name"},
		{"missing data dir", []string{"admin", "org", "create", "--name", "x", "--plan", "free"}, "--data-dir"},
		{"unknown org", []string{"admin", "org", "suspend", "--data-dir", dir, "--org", "01a20000-0000-7000-8000-000000000000"}, "not found"},
		{"unknown action", []string{"admin", "org", "explode", "--data-dir", dir}, "explode"},
		{"unknown command", []string{"frobnicate"}, "frobnicate"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCmd(t, nil, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestFlagsAndEnvironment(t *testing.T) {
	dir := t.TempDir()
	environ := map[string]string{
		"PICTOR_PUBLIC_URL": "https://img.example.com",
		"PICTOR_LOG_LEVEL":  "warn",
	}
	// The flag beats the variable; the variable fills what no flag gives.
	s := startServe(t, dir, environ, "--log-level", "debug")
	if !strings.Contains(s.Stdout.String(), "Base URL: https://img.example.com\n") {
		t.Fatalf("PICTOR_PUBLIC_URL ignored:\n%s", s.Stdout.String())
	}
	s.do(t, apitest.Request{Method: "GET", Path: "/healthz"})
	if !strings.Contains(s.Logs.String(), `"level":"DEBUG"`) && !strings.Contains(s.Logs.String(), `"level":"INFO"`) {
		t.Fatal("--log-level debug did not beat PICTOR_LOG_LEVEL=warn")
	}
	if _, err := runCmd(t, map[string]string{"PICTOR_CACHE_MEM": "lots"}, "serve", "--data-dir", t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), "PICTOR_CACHE_MEM") {
		t.Fatalf("a bad variable is not named: %v", err)
	}
	if _, err := runCmd(t, nil, "edge", "--addr", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "--origin-url") {
		t.Fatalf("edge without --origin-url: %v", err)
	}
	out, err := runCmd(t, nil, "version")
	if err != nil || !strings.HasPrefix(out, "pictor ") {
		t.Fatalf("version: %q %v", out, err)
	}
}

// process is the real binary running as its own process.
type process struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *apitest.Buffer
}

func startProcess(t *testing.T, args ...string) (*process, string) {
	t.Helper()
	cmd := exec.Command(buildBinary(t), args...)
	cmd.Env = append(os.Environ(), "PICTOR_LOG_LEVEL=info", "PICTOR_WASM_CACHE="+wasmCache)
	return startCmd(t, cmd)
}

// startCmd starts a pictor command (cmd.Env set) and waits for it to
// announce its address, which it returns.
func startCmd(t *testing.T, cmd *exec.Cmd) (*process, string) {
	t.Helper()
	p := &process{cmd: cmd, lines: make(chan string, 64), stderr: &apitest.Buffer{}}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		removeProfileRoot(cmd.Args)
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	for line := range p.lines {
		if i := strings.Index(line, "is listening on "); i >= 0 {
			return p, strings.Fields(line[i+len("is listening on "):])[0]
		}
	}
	t.Fatalf("%v did not start:\n%s", cmd.Args, p.stderr.String())
	return nil, ""
}

// removeProfileRoot removes the Chromium profiles of a killed serve or
// origin whose data directory args name: a killed process cannot remove
// them, and when Chromium's user cannot enter the test's directory they
// are under os.TempDir (render.ProfileRoot), outside what the test
// removes. The next start on the directory would have removed them.
func removeProfileRoot(args []string) {
	for i, a := range args {
		dir, ok := strings.CutPrefix(a, "--data-dir=")
		if !ok && a == "--data-dir" && i+1 < len(args) {
			dir, ok = args[i+1], true
		}
		if ok {
			if root := render.ProfileRoot(filepath.Join(dir, "chromium")); !strings.HasPrefix(root, dir+string(filepath.Separator)) {
				os.RemoveAll(root)
			}
		}
	}
}

// terminate sends SIGTERM and returns the exit error.
func (p *process) terminate(t *testing.T) error {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(40 * time.Second):
		t.Fatal("no exit within 40s of SIGTERM")
		return nil
	}
}

func TestSeparateEdgeAndOriginProcesses(t *testing.T) {
	dir := t.TempDir()
	creds := orgCreate(t, dir, "acme", "scale")

	origin, originURL := startProcess(t, "origin", "--data-dir", dir, "--addr", "127.0.0.1:0")
	edge, edgeURL := startProcess(t, "edge", "--origin-url", originURL, "--addr", "127.0.0.1:0", "--cache-dir", filepath.Join(t.TempDir(), "cache"))

	r := apitest.Do(t, edgeURL, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &creds})
	apitest.WantStatus(t, r, 200)
	apitest.WantStatus(t, apitest.Do(t, edgeURL, apitest.Request{Method: "GET", Path: "/healthz"}), 200)

	// The edge runs twice the Go processors the origin does (procs.go),
	// unless GOMAXPROCS is set for both.
	procs := func(base string) int {
		t.Helper()
		m := string(apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/metrics"}).Body)
		var n int
		for _, line := range strings.Split(m, "\n") {
			if _, err := fmt.Sscanf(line, "go_sched_gomaxprocs_threads %d", &n); err == nil {
				return n
			}
		}
		t.Fatalf("%s/metrics has no go_sched_gomaxprocs_threads", base)
		return 0
	}
	want := edgeProcsPerCPU * procs(originURL)
	if os.Getenv("GOMAXPROCS") != "" {
		want = procs(originURL)
	}
	if got := procs(edgeURL); got != want {
		t.Fatalf("the edge runs %d Go processors, the origin %d; want %d", got, procs(originURL), want)
	}

	// A second origin on the same data directory fails clearly.
	second := exec.Command(buildBinary(t), "origin", "--data-dir", dir, "--addr", "127.0.0.1:0")
	msg, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "in use by another process") {
		t.Fatalf("second origin: %v\n%s", err, msg)
	}

	// SIGTERM stops both cleanly.
	if err := edge.terminate(t); err != nil {
		t.Fatalf("edge exit: %v\n%s", err, edge.stderr.String())
	}
	if err := origin.terminate(t); err != nil {
		t.Fatalf("origin exit: %v\n%s", err, origin.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "admin.json")); !os.IsNotExist(err) {
		t.Fatalf("admin endpoint file left behind: %v", err)
	}
	// The store was closed cleanly: admin opens it directly now.
	if _, err := runCmd(t, nil, "admin", "org", "create", "--data-dir", dir, "--name", "after", "--plan", "free"); err != nil {
		t.Fatalf("store after shutdown: %v", err)
	}
}

// wasmCache is shared by every server of the run: compiling the template
// sandbox is the slowest part of a start.
var wasmCache = filepath.Join(os.TempDir(), "pictor-wasm-test-cache")

func buildBinary(t *testing.T) string {
	t.Helper()
	path, err := pictor.Build()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// TestStorageFlags: a storage setting out of range stops the origin at
// once with an error naming its flag.
func TestStorageFlags(t *testing.T) {
	for _, tc := range []struct{ flag, value string }{
		{"--storage-part-size", "1"},
		{"--storage-max-attempts", "0"},
		{"--storage-test-timeout", "0s"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			_, err := runCmd(t, nil, "origin", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", tc.flag, tc.value)
			if err == nil || !strings.Contains(err.Error(), tc.flag) {
				t.Fatalf("%s %s: %v, want an error naming the flag", tc.flag, tc.value, err)
			}
		})
	}
}
