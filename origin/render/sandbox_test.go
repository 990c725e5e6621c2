package render

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
)

// procStatus returns the value of a line of /proc/<pid>/status.
func procStatus(t *testing.T, pid int, key string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatalf("status of %d: %v", pid, err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("status of %d has no %s", pid, key)
	return ""
}

// currentBrowser returns the engine's current browser.
func currentBrowser(t *testing.T, e *Engine) *browser {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current == nil {
		t.Fatal("no current browser")
	}
	return e.current
}

// TestChromiumSandboxed: as root, Chromium runs as an unprivileged user
// with its own sandbox (seccomp-bpf in every renderer), with an
// environment of its own that holds none of Pictor's secrets and whose
// home is the profile; --no-sandbox only where asked for.
func TestChromiumSandboxed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the test suite runs as root (make test); the sandbox's change of user needs it")
	}
	t.Setenv("PICTOR_MASTER_KEY", "secret-of-the-test")
	tests := []struct {
		name      string
		noSandbox bool
		seccomp   string // of every renderer: 2 is seccomp-bpf filtering
	}{
		{"sandbox", false, "2"},
		{"no sandbox, as asked", true, "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, func(c *Config) { c.Tabs = 1; c.NoSandbox = tc.noSandbox })
			if c := renderBox(t, e, 0, boxPage("const ok = true;")); c != boxGreen {
				t.Fatalf("box %v, want green", c)
			}
			b := currentBrowser(t, e)
			uid := strings.Fields(procStatus(t, b.pid, "Uid"))
			if tc.noSandbox {
				if uid[1] != "0" {
					t.Fatalf("browser without sandbox runs as uid %v, want root", uid)
				}
			} else if uid[1] == "0" || uid[1] != strconv.Itoa(int(e.account.uid)) {
				t.Fatalf("browser runs as uid %v, want %s (%d)", uid, e.account.name, e.account.uid)
			}
			if groups := procStatus(t, b.pid, "Groups"); !tc.noSandbox && groups != "" {
				t.Fatalf("browser keeps supplementary groups %q", groups)
			}
			renderers := renderers(e.browserPIDs())
			if len(renderers) == 0 {
				t.Fatal("no renderer process found")
			}
			for _, pid := range renderers {
				if got := procStatus(t, pid, "Seccomp"); got != tc.seccomp {
					t.Fatalf("renderer %d: Seccomp %s, want %s", pid, got, tc.seccomp)
				}
			}
			environ, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(b.pid), "environ"))
			if err != nil {
				t.Fatal(err)
			}
			vars := strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
			if !slices.Contains(vars, "HOME="+b.profile) {
				t.Fatalf("browser environment %q: HOME is not its profile %s", vars, b.profile)
			}
			if bytes.Contains(environ, []byte("secret-of-the-test")) || bytes.Contains(environ, []byte("PICTOR_")) {
				t.Fatalf("browser environment holds Pictor's variables: %q", vars)
			}
		})
	}
}

// TestProfileRoot: profiles stay in the configured directory when any user
// may reach it, and move to a directory of their own, the same for the
// same configured directory, when a directory above is closed.
func TestProfileRoot(t *testing.T) {
	closed := t.TempDir() // 0700
	open := filepath.Join(closed, "open")
	if err := os.MkdirAll(open, 0o755); err != nil {
		t.Fatal(err)
	}
	got := ProfileRoot(filepath.Join(open, "chromium"))
	if filepath.Dir(got) != os.TempDir() || !strings.HasPrefix(filepath.Base(got), "pictor-chromium-") {
		t.Fatalf("profile root under a closed directory: %s", got)
	}
	if again := ProfileRoot(filepath.Join(open, "chromium")); again != got {
		t.Fatalf("profile root changed: %s then %s", got, again)
	}
	if other := ProfileRoot(filepath.Join(open, "other")); other == got {
		t.Fatalf("two directories share the profile root %s", got)
	}
	// The test's own directories (t.TempDir and the one above it, both
	// 0700) opened for passing through.
	for _, dir := range []string{closed, filepath.Dir(closed)} {
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	for dir := filepath.Dir(closed); dir != "/"; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Fatalf("%s above the test's directory is closed: the case cannot be tested here", dir)
		}
	}
	if got := ProfileRoot(filepath.Join(open, "chromium")); got != filepath.Join(open, "chromium") {
		t.Fatalf("profile root under searchable directories: %s", got)
	}
}

// isolationSites serves one page per site on every loopback address: the
// site of 127.0.0.1 frames 127.0.0.2, which frames localhost, whose image
// is held until release is closed. It records the X-Secret header of every
// request.
type isolationSites struct {
	port     int
	mu       sync.Mutex
	secrets  map[string][]string // host/path → X-Secret values
	held     chan struct{}       // closed when the held image is asked for
	release  chan struct{}
	once     sync.Once
	holdOnce sync.Once
}

func newIsolationSites(t *testing.T) *isolationSites {
	s := &isolationSites{secrets: map[string][]string{}, held: make(chan struct{}), release: make(chan struct{})}
	serveSites(t, func(port int) http.Handler { s.port = port; return s })
	t.Cleanup(s.unhold) // before the server closes: cleanups run last first
	return s
}

func (s *isolationSites) unhold() { s.once.Do(func() { close(s.release) }) }

func (s *isolationSites) url(host, path string) string {
	return fmt.Sprintf("http://%s:%d%s", host, s.port, path)
}

func (s *isolationSites) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.Host)
	s.mu.Lock()
	s.secrets[host+r.URL.Path] = append(s.secrets[host+r.URL.Path], r.Header.Get("X-Secret"))
	s.mu.Unlock()
	frame := func(src string) string {
		return `<iframe src="` + src + `" style="display:block;border:0;width:300px;height:200px"></iframe>`
	}
	switch r.URL.Path {
	case "/top":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<body style="margin:0">`+frame(s.url("127.0.0.2", "/middle")))
	case "/middle":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<body style="margin:0"><img src="/pixel.svg">`+frame(s.url("localhost", "/inner")))
	case "/inner":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<body style="margin:0;background:rgb(0,128,0)"><img src="/pixel.svg"><img src="/held.svg?hold=1"><script>fetch("/fetched")</script>`)
	case "/held.svg":
		s.holdOnce.Do(func() { close(s.held) })
		<-s.release
		fallthrough
	default:
		w.Header().Set("Content-Type", "image/svg+xml")
		fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>`)
	}
}

// TestSiteIsolation: with SiteIsolation, a cross-site iframe, and one
// inside it, run in targets of their own (without, in the page's);
// their requests get the custom headers of include_headers_on_subrequests
// either way; and the tab is left as it was: the next render on it,
// without custom headers, shows its cross-site frames and sends no header.
func TestSiteIsolation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		isolated bool
	}{{"off by default", false}, {"on, as asked", true}} {
		t.Run(tc.name, func(t *testing.T) { testSiteIsolation(t, tc.isolated) })
	}
}

func testSiteIsolation(t *testing.T, isolated bool) {
	reg := prometheus.NewRegistry()
	var e *Engine
	if isolated {
		e = isolatedEngine(t, reg)
	} else {
		e = newEngine(t, metered(reg, func(c *Config) { c.Tabs = 1 }))
	}
	sites := newIsolationSites(t)
	top := sites.url("127.0.0.1", "/top")
	render := func(headers map[string]string) <-chan error {
		done := make(chan error, 1)
		go func() {
			res, err := e.Render(context.Background(), &Request{OrgID: "o", URL: top, MaxWait: 10 * time.Second,
				Headers: headers, HeadersOnSubrequests: headers != nil,
				HeaderOrigins: []string{sites.url("127.0.0.2", ""), sites.url("localhost", "")},
				MaxWidth:      16384, MaxHeight: 16384})
			if err == nil {
				// Inside the innermost frame, two levels down.
				if c := rgba(decodePNG(t, res.Data), 150, 150); c != boxGreen {
					err = fmt.Errorf("pixel in the innermost frame %v, want green", c)
				}
			}
			done <- err
		}()
		return done
	}

	first := render(map[string]string{"X-Secret": "s3"})
	select {
	case <-sites.held: // the innermost frame's image is held: every frame is there
	case err := <-first:
		t.Fatalf("render ended before the innermost frame loaded: %v", err)
	}
	infos, err := chromedp.Targets(currentBrowser(t, e).ctx)
	if err != nil {
		t.Fatal(err)
	}
	var frames []string
	for _, info := range infos {
		if info.Type == "iframe" {
			frames = append(frames, info.URL)
		}
	}
	for _, want := range []string{sites.url("127.0.0.2", "/middle"), sites.url("localhost", "/inner")} {
		if slices.Contains(frames, want) != isolated {
			t.Errorf("cross-site frame %s has a target of its own: %v, want %v; frame targets: %v",
				want, !isolated, isolated, frames)
		}
	}
	sites.unhold()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// Both cross-site frames show, so an isolated capture waited for both.
	want := map[string]float64{}
	if isolated {
		want[frameDrawn] = 2
	}
	if got := frameWaits(t, reg); !maps.Equal(got, want) {
		t.Errorf("frame waits %v, want %v", got, want)
	}
	wantAll := []string{"127.0.0.1/top", "127.0.0.2/middle", "127.0.0.2/pixel.svg", "localhost/inner",
		"localhost/pixel.svg", "localhost/held.svg", "localhost/fetched"}
	sites.mu.Lock()
	for _, k := range wantAll {
		if v := sites.secrets[k]; len(v) == 0 || slices.ContainsFunc(v, func(s string) bool { return s != "s3" }) {
			t.Errorf("%s: X-Secret %q, want s3 on every request", k, v)
		}
	}
	sites.secrets = map[string][]string{}
	sites.mu.Unlock()

	if err := <-render(nil); err != nil {
		t.Fatalf("next render on the tab: %v", err)
	}
	sites.mu.Lock()
	defer sites.mu.Unlock()
	for _, k := range wantAll {
		if v := sites.secrets[k]; len(v) == 0 || slices.ContainsFunc(v, func(s string) bool { return s != "" }) {
			t.Errorf("next render: %s: X-Secret %q, want the request without it", k, v)
		}
	}
}

// TestResolveAccount: who Chromium runs as, for each setting, as root.
func TestResolveAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the test suite runs as root (make test)")
	}
	tests := []struct {
		name      string
		user      string
		noSandbox bool
		want      string // account name, or "" when an error is wanted
		other     bool
	}{
		{"default is the pictor user", "", false, DefaultUser, true},
		{"a named user", "nobody", false, "nobody", true},
		{"no sandbox without a user stays root", "", true, "root", false},
		{"root with the sandbox is refused", "root", false, "", false},
		{"root without the sandbox", "root", true, "root", false},
		{"an unknown user is refused", "no-such-user-of-pictor", false, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := resolveAccount(tc.user, tc.noSandbox)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "--chromium-user") {
					t.Fatalf("got %+v, %v; want an error naming --chromium-user", a, err)
				}
				return
			}
			if err != nil || a.name != tc.want || a.other != tc.other || (tc.other && a.uid == 0) {
				t.Fatalf("got %+v, %v; want %s (another user: %v)", a, err, tc.want, tc.other)
			}
		})
	}
}
