package egress

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The credentials the test tinyproxy accepts.
const (
	proxyUser = "pictor-render"
	proxyPass = "Pr0xy-s3cret-Pa55"
	// proxyVia is the name tinyproxy puts in the Via header it adds to
	// what it relays.
	proxyVia = "pictor-test-proxy"
	// proxyOut is the address tinyproxy connects to targets from (its Bind
	// setting): a target that sees it was reached through tinyproxy, one
	// that sees 127.0.0.1 was dialed by the session.
	proxyOut = "127.0.0.2"
)

// secrets are what must never appear in a log, an error or an answer:
// the passwords the tests use and every Proxy-Authorization made of them.
func secrets(passwords ...string) []string {
	var out []string
	for _, p := range passwords {
		out = append(out, p, base64.StdEncoding.EncodeToString([]byte(proxyUser+":"+p)))
	}
	return out
}

func checkNoSecrets(t *testing.T, what, text string, passwords ...string) {
	t.Helper()
	for _, s := range secrets(passwords...) {
		if strings.Contains(text, s) {
			t.Fatalf("%s holds a credential (%q): %s", what, s, text)
		}
	}
}

// tinyproxy is a real tinyproxy (Debian's package) on a loopback port,
// with Basic authentication and its own log.
type tinyproxy struct {
	addr    string // 127.0.0.1:port
	port    int
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	output  *lockedBuffer
	stop    sync.Once
}

// startTinyproxy runs tinyproxy in the foreground on a free port of
// 127.0.0.1 and waits until it accepts connections; Cleanup stops it.
func startTinyproxy(t *testing.T) *tinyproxy {
	t.Helper()
	bin, err := exec.LookPath("tinyproxy")
	if err != nil {
		t.Fatalf("tinyproxy is not installed (%v): the upstream proxy tests run a real one; `make test-deps` installs it (Debian package tinyproxy)", err)
	}
	dir := t.TempDir()
	// The port is free when picked, but something else may take it before
	// tinyproxy binds: then tinyproxy exits and another port is tried.
	for attempt := 0; attempt < 5; attempt++ {
		port := freePort(t)
		tp := &tinyproxy{
			addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			port:    port,
			logPath: filepath.Join(dir, fmt.Sprintf("tinyproxy-%d.log", attempt)),
			exited:  make(chan struct{}),
			output:  &lockedBuffer{},
		}
		conf := filepath.Join(dir, fmt.Sprintf("tinyproxy-%d.conf", attempt))
		text := strings.Join([]string{
			"Port " + strconv.Itoa(port),
			"Listen 127.0.0.1",
			"Bind " + proxyOut,
			"Timeout 30",
			fmt.Sprintf("LogFile %q", tp.logPath),
			"LogLevel Connect",
			"MaxClients 16",
			"Allow 127.0.0.1",
			"BasicAuth " + proxyUser + " " + proxyPass,
			fmt.Sprintf("ViaProxyName %q", proxyVia),
		}, "\n") + "\n"
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		tp.cmd = exec.Command(bin, "-d", "-c", conf)
		tp.cmd.Stdout, tp.cmd.Stderr = tp.output, tp.output
		if err := tp.cmd.Start(); err != nil {
			t.Fatalf("start tinyproxy: %v", err)
		}
		go func() {
			_ = tp.cmd.Wait()
			close(tp.exited)
		}()
		t.Cleanup(tp.close)
		if tp.waitAccepting(t) {
			return tp
		}
		t.Logf("tinyproxy on port %d exited before accepting: %s %s", port, tp.output.String(), tp.log(t))
	}
	t.Fatal("tinyproxy did not start")
	return nil
}

// waitAccepting polls tinyproxy's port until it accepts, it exits (false)
// or the test's network timeout passes (fatal).
func (tp *tinyproxy) waitAccepting(t *testing.T) bool {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.DialTimeout("tcp", tp.addr, time.Second); err == nil {
			c.Close()
			return true
		}
		if time.Now().After(deadline) {
			t.Fatalf("tinyproxy did not accept on %s within %v: %s", tp.addr, testTimeout, tp.output.String())
		}
		select {
		case <-tp.exited:
			return false
		case <-tick.C:
		}
	}
}

// close stops tinyproxy: SIGTERM, then SIGKILL if it lingers.
func (tp *tinyproxy) close() {
	tp.stop.Do(func() {
		_ = tp.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-tp.exited:
		case <-time.After(testTimeout):
			_ = tp.cmd.Process.Kill()
			<-tp.exited
		}
	})
}

// log is tinyproxy's log so far (it writes each line as it happens).
func (tp *tinyproxy) log(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(tp.logPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// requests are the request lines tinyproxy logged so far, in order, e.g.
// "GET http://127.0.0.1:8080/path HTTP/1.1" or "CONNECT host:443 HTTP/1.1".
func (tp *tinyproxy) requests(t *testing.T) []string {
	t.Helper()
	var out []string
	for line := range strings.Lines(tp.log(t)) {
		if _, req, ok := strings.Cut(line, "]: Request (file descriptor "); ok {
			if _, req, ok = strings.Cut(req, "): "); ok {
				out = append(out, strings.TrimSpace(req))
			}
		}
	}
	return out
}

// freePort returns a port of 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// hit is one request a target received.
type hit struct {
	Path      string
	Host      string
	Remote    string // the IP the request came from
	Via       string
	ProxyAuth string
}

// target is a real site on 127.0.0.1 that records who reached it.
type target struct {
	srv *httptest.Server
	mu  sync.Mutex
	all []hit
}

func newTarget(t *testing.T, useTLS bool) *target {
	t.Helper()
	tg := &target{}
	tg.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remote, _, _ := net.SplitHostPort(r.RemoteAddr)
		h := hit{Path: r.URL.Path, Host: r.Host, Remote: remote, Via: r.Header.Get("Via"), ProxyAuth: r.Header.Get("Proxy-Authorization")}
		tg.mu.Lock()
		tg.all = append(tg.all, h)
		tg.mu.Unlock()
		if r.URL.Path == "/unauthorized" {
			w.Header().Set("WWW-Authenticate", `Basic realm="site"`)
			w.WriteHeader(http.StatusUnauthorized)
		}
		_ = json.NewEncoder(w).Encode(h)
	}))
	if useTLS {
		tg.srv.StartTLS()
	} else {
		tg.srv.Start()
	}
	t.Cleanup(tg.srv.Close)
	return tg
}

// port is the target's port.
func (tg *target) port() string {
	return strconv.Itoa(tg.srv.Listener.Addr().(*net.TCPAddr).Port)
}

// hits returns what the target received at path.
func (tg *target) hits(path string) []hit {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	var out []hit
	for _, h := range tg.all {
		if h.Path == path {
			out = append(out, h)
		}
	}
	return out
}

// newLoggedGateway returns a gateway whose log, at Debug, is kept.
func newLoggedGateway(t *testing.T, res Resolver, mutate func(*Config)) (*Gateway, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	cfg := DefaultConfig()
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Resolver = res
	cfg.Registerer = prometheus.NewRegistry()
	if mutate != nil {
		mutate(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g, logs
}

// tinyUpstream is an Upstream for tp with the given password.
func tinyUpstream(tp *tinyproxy, password string, bypass ...string) *Upstream {
	return &Upstream{Host: "127.0.0.1", Port: tp.port, Scheme: "http", Username: proxyUser, Password: password, Bypass: bypass}
}
