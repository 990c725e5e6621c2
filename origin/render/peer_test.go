package render

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/egress/tinyproxytest"
)

// TestHostileEgressPeer: a tab's egress session, routed through an
// organization's proxy (real tinyproxy with its password), serves the
// tab's browser and no other local process: while a render waits on its
// site and after it, connections from this process (root) and from a
// process of another user (nobody) are closed unserved, and nothing they
// ask for reaches the proxy or a canary server on loopback; the renders
// themselves go through the proxy and draw. For the headless shell with
// its sandbox (Chromium as pictor: the user is the rule), without it
// (Chromium as root, Pictor's own user: the process is the rule), and the
// full browser.
func TestHostileEgressPeer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the test suite runs as root (make test): Chromium's user and the hostile processes' need it")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	tp := tinyproxytest.Start(t)
	var canaryHits atomic.Int32
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		canaryHits.Add(1)
		fmt.Fprint(w, "canary")
	}))
	defer canary.Close()
	canaryHost := canary.Listener.Addr().String()

	tests := []struct {
		name      string
		configure func(*Config)
		refused   map[string]float64 // pictor_egress_refused_peers_total by reason
		// byProcess: the rule checks processes, and the browser's
		// connections were found in its network service.
		byProcess bool
	}{
		{"headless shell, sandboxed, as pictor", func(c *Config) {}, map[string]float64{"user": 6}, false},
		{"headless shell without sandbox, as root", func(c *Config) { c.NoSandbox = true }, map[string]float64{"process": 4, "user": 2}, true},
		{"full browser, sandboxed, as pictor", func(c *Config) {
			c.SiteIsolation = true
			if os.Getenv("PICTOR_CHROMIUM") == "" {
				c.Chromium = "" // the engine picks the full browser for site isolation
			}
		}, map[string]float64{"user": 6}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			site := newHeldSite(t)
			reg := prometheus.NewRegistry()
			logs := &apitest.Buffer{}
			gc := egress.DefaultConfig()
			gc.Registerer, gc.Logger = reg, slog.New(slog.NewTextHandler(logs, nil))
			gw, err := egress.New(gc)
			if err != nil {
				t.Fatal(err)
			}
			e := newEngine(t, func(c *Config) {
				c.Tabs = 1
				c.Gateway = gw
				tc.configure(c)
			})
			up := &egress.Upstream{Host: "127.0.0.1", Port: tp.Port, Username: tinyproxytest.User, Password: tinyproxytest.Password}
			req := func(path string) *Request {
				return &Request{OrgID: "o", URL: site.srv.URL + path, Upstream: up, DeviceScale: 1,
					MaxWait: 5 * time.Second, MaxWidth: 16384, MaxHeight: 16384, ViewportWidth: 200, ViewportHeight: 100}
			}
			if c := renderBoxOf(t, e, 0, req("/page")); c != boxGreen {
				t.Fatalf("render through the proxy: %v, want green", c)
			}
			addr := tabSession(t, e)

			hostile := func(phase string) {
				t.Helper()
				for _, head := range []string{
					"GET http://" + canaryHost + "/root-" + phase + " HTTP/1.1\r\nHost: " + canaryHost + "\r\n\r\n",
					"CONNECT " + canaryHost + " HTTP/1.1\r\nHost: " + canaryHost + "\r\n\r\n",
				} {
					if got := rawAsk(t, addr, head); got != "" {
						t.Fatalf("%s: this process (root) was served %q for %q", phase, got, head)
					}
				}
				cmd := exec.Command("curl", "-sS", "--max-time", "10", "--noproxy", "", "-x", "http://"+addr, "http://"+canaryHost+"/nobody-"+phase)
				cmd.Env = []string{"PATH=/usr/bin:/bin"}
				uid, _ := strconv.ParseUint(nobody.Uid, 10, 32)
				gid, _ := strconv.ParseUint(nobody.Gid, 10, 32)
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
				if out, err := cmd.CombinedOutput(); err == nil || strings.Contains(string(out), "canary") {
					t.Fatalf("%s: curl as nobody was served (%v): %s", phase, err, out)
				}
			}
			hostile("after")

			// During a render: the site holds its answer until the hostile
			// connections were refused.
			done := make(chan renderOutcome, 1)
			go func() {
				res, err := e.Render(context.Background(), req("/held"))
				done <- renderOutcome{res, err}
			}()
			select {
			case <-site.arrived:
			case <-time.After(20 * time.Second):
				t.Fatal("the held render never reached its site")
			}
			hostile("during")
			close(site.release)
			out := <-done
			if out.err != nil {
				t.Fatalf("held render: %v", out.err)
			}
			if c := rgba(decodePNG(t, out.res.Data), 50, 25); c != boxGreen {
				t.Fatalf("held render: %v, want green", c)
			}
			if got := tabSession(t, e); got != addr {
				t.Fatalf("the held render's tab has session %s, not %s: the hostile connections went elsewhere", got, addr)
			}

			if tc.byProcess {
				b := currentBrowser(t, e)
				id := b.connector.Load()
				if id == nil {
					t.Fatal("no process of the browser was found holding its connections")
				}
				cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(id.pid) + "/cmdline")
				if !strings.Contains(string(cmdline), "--utility-sub-type=network.mojom.NetworkService") {
					t.Fatalf("the browser connected from process %d, not its network service: %q", id.pid, cmdline)
				}
			}
			if n := canaryHits.Load(); n != 0 {
				t.Fatalf("the canary got %d requests", n)
			}
			requests := tp.Requests(t)
			for _, r := range requests {
				if strings.Contains(r, canaryHost) {
					t.Fatalf("tinyproxy relayed a hostile request: %s", r)
				}
			}
			for _, p := range []string{"/page", "/held"} {
				if !slices.ContainsFunc(requests, func(r string) bool { return strings.Contains(r, site.srv.URL+p) }) {
					t.Fatalf("tinyproxy did not relay the render's %s: %q", p, requests)
				}
				if from := site.from(p); len(from) == 0 || slices.ContainsFunc(from, func(a string) bool { return a != tinyproxytest.Out }) {
					t.Fatalf("the site got %s from %v, want only through tinyproxy (%s)", p, from, tinyproxytest.Out)
				}
			}
			for _, reason := range []string{"user", "process", "lookup"} {
				if got := refusedPeers(t, reg, reason); got != tc.refused[reason] {
					t.Errorf("refused peers (%s) = %v, want %v", reason, got, tc.refused[reason])
				}
			}
			warns := 0
			for line := range strings.Lines(logs.String()) {
				if strings.Contains(line, "level=WARN") && strings.Contains(line, "egress connection refused") {
					warns++
				}
			}
			if warns != 2 {
				t.Errorf("want one Warn per refused user (root, nobody), got %d:\n%s", warns, logs.String())
			}
			if strings.Contains(logs.String(), tinyproxytest.Password) {
				t.Errorf("the egress log holds the proxy's password:\n%s", logs.String())
			}
		})
	}
}

type renderOutcome struct {
	res *Result
	err error
}

// heldSite serves a green box at every path, and at /held only once the
// test closes release, telling arrived when that request came; it records
// where each path was asked from.
type heldSite struct {
	srv     *httptest.Server
	arrived chan struct{}
	release chan struct{}
	mu      sync.Mutex
	remote  map[string][]string
}

func newHeldSite(t *testing.T) *heldSite {
	s := &heldSite{arrived: make(chan struct{}, 1), release: make(chan struct{}), remote: map[string][]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		s.mu.Lock()
		s.remote[r.URL.Path] = append(s.remote[r.URL.Path], host)
		s.mu.Unlock()
		if r.URL.Path == "/held" {
			select {
			case s.arrived <- struct{}{}:
			default:
			}
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><body style="margin:0;background:rgb(0,128,0)"></body></html>`)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *heldSite) from(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.remote[path])
}

// tabSession is the egress address of the engine's one tab, once the last
// render gave it back (quiesce: a render holds its slot until then).
func tabSession(t *testing.T, e *Engine) string {
	t.Helper()
	quiesce(t, e)
	e.mu.Lock()
	tabs := append(slices.Clone(e.idle), e.dirty...)
	e.mu.Unlock()
	if len(tabs) != 1 {
		t.Fatalf("%d tabs idle or dirty, want the one", len(tabs))
	}
	return tabs[0].session.Addr()
}

// rawAsk writes head to addr on a connection of its own and returns what
// came back first ("" when the connection was closed unanswered).
func rawAsk(t *testing.T, addr, head string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write([]byte(head)) // the session may have closed it already
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	if n == 0 && err != nil && os.IsTimeout(err) {
		t.Fatalf("the session neither answered nor closed the connection: %v", err)
	}
	return string(buf[:n])
}

// refusedPeers reads pictor_egress_refused_peers_total{reason}.
func refusedPeers(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "pictor_egress_refused_peers_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestPeerRule: who may connect to a tab's egress session, by the user
// Chromium runs as: a user of its own is the rule; a shared one (nobody,
// Pictor's own user, root without the sandbox) also needs the socket to be
// held by one of the browser's processes.
func TestPeerRule(t *testing.T) {
	tests := []struct {
		name string
		a    account
		want string
	}{
		{"a user of its own", account{name: DefaultUser, uid: 999, other: true}, "uid 999"},
		{"another user of its own", account{name: "chromium-renders", uid: 1234, other: true}, "uid 1234"},
		{"nobody, shared with other daemons", account{name: FallbackUser, uid: 65534, other: true}, "uid 65534, its processes"},
		{"Pictor's own user", account{uid: 1000}, "uid 1000, its processes"},
		{"root without the sandbox", account{name: "root"}, "uid 0, its processes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{account: tc.a}
			if got := e.peer(&browser{pid: 1}).String(); got != tc.want {
				t.Fatalf("peer rule %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConnectors: the processes a tab's session reads for its browser's
// sockets: the whole group until one was found holding one, then that one
// and the main process only, and the whole group again once it is gone.
func TestConnectors(t *testing.T) {
	// The shell prints its children's pids once it forked both: they are
	// in its process group from then on.
	cmd := exec.Command("/bin/sh", "-c", "sleep 60 & a=$!; sleep 60 & echo $a $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startGroup(t, cmd)
	var forked [2]int
	if _, err := fmt.Fscan(out, &forked[0], &forked[1]); err != nil {
		t.Fatalf("the shell's children: %v", err)
	}
	b := &browser{pid: cmd.Process.Pid}
	all := func() []int {
		var got []int
		for pid := range b.connectors {
			got = append(got, pid)
		}
		return got
	}
	got := all()
	if len(got) != 3 || got[0] != b.pid {
		t.Fatalf("connectors yielded %v, want the main process %d first, then its two children %v", got, b.pid, forked)
	}
	children := got[1:]
	if !slices.Equal(slices.Sorted(slices.Values(children)), slices.Sorted(slices.Values(forked[:]))) {
		t.Fatalf("connectors yielded the children %v, want %v", children, forked)
	}

	// A consumer stops at the second child: it holds the socket.
	found := children[1]
	for pid := range b.connectors {
		if pid == found {
			break
		}
	}
	if got := all(); !slices.Equal(got, []int{found, b.pid}) {
		t.Fatalf("after %d held a socket, connectors yielded %v, want it and the main process", found, got)
	}

	if err := syscall.Kill(found, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(found, 10*time.Second); err != nil {
		t.Fatalf("process %d: %v", found, err)
	}
	if got := all(); !slices.Equal(got, []int{b.pid, children[0]}) {
		t.Fatalf("once %d was gone, connectors yielded %v, want the main process and %d", found, got, children[0])
	}
}
