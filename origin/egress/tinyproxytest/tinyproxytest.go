package tinyproxytest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// The credentials the test tinyproxy accepts, and how a target tells a
// request it relayed.
const (
	User     = "pictor-render"
	Password = "Pr0xy-s3cret-Pa55"
	// Via is the name tinyproxy puts in the Via header it adds to what it
	// relays.
	Via = "pictor-test-proxy"
	// Out is the address tinyproxy connects to targets from (its Bind
	// setting): a target that sees it was reached through tinyproxy, one
	// that sees 127.0.0.1 was dialed directly.
	Out = "127.0.0.2"
)

// timeout bounds tinyproxy's start and stop.
const timeout = 10 * time.Second

// Proxy is a real tinyproxy (Debian's package) on a loopback port,
// with Basic authentication and its own log.
type Proxy struct {
	Addr    string // 127.0.0.1:port
	Port    int
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	output  *apitest.Buffer
	stop    sync.Once
}

// Start runs tinyproxy in the foreground on a free port of
// 127.0.0.1 and waits until it accepts connections; Cleanup stops it.
func Start(t *testing.T) *Proxy {
	t.Helper()
	bin, err := exec.LookPath("tinyproxy")
	if err != nil {
		t.Fatalf("tinyproxy is not installed (%v): the upstream proxy tests run a real one; `make test-deps` installs it (Debian package tinyproxy)", err)
	}
	dir := t.TempDir()
	// The port is free when picked, but something else may take it before
	// tinyproxy binds: then tinyproxy exits and another port is tried.
	for attempt := 0; attempt < 5; attempt++ {
		port := FreePort(t)
		tp := &Proxy{
			Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Port:    port,
			logPath: filepath.Join(dir, fmt.Sprintf("tinyproxy-%d.log", attempt)),
			exited:  make(chan struct{}),
			output:  &apitest.Buffer{},
		}
		conf := filepath.Join(dir, fmt.Sprintf("tinyproxy-%d.conf", attempt))
		text := strings.Join([]string{
			"Port " + strconv.Itoa(port),
			"Listen 127.0.0.1",
			"Bind " + Out,
			"Timeout 30",
			fmt.Sprintf("LogFile %q", tp.logPath),
			"LogLevel Connect",
			"MaxClients 16",
			"Allow 127.0.0.1",
			"BasicAuth " + User + " " + Password,
			fmt.Sprintf("ViaProxyName %q", Via),
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
		t.Cleanup(tp.Close)
		if tp.waitAccepting(t) {
			return tp
		}
		t.Logf("tinyproxy on port %d exited before accepting: %s %s", port, tp.output.String(), tp.Log(t))
	}
	t.Fatal("tinyproxy did not start")
	return nil
}

// waitAccepting polls tinyproxy's port until it accepts, it exits (false)
// or the test's network timeout passes (fatal).
func (tp *Proxy) waitAccepting(t *testing.T) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if c, err := net.DialTimeout("tcp", tp.Addr, time.Second); err == nil {
			c.Close()
			return true
		}
		if time.Now().After(deadline) {
			t.Fatalf("tinyproxy did not accept on %s within %v: %s", tp.Addr, timeout, tp.output.String())
		}
		select {
		case <-tp.exited:
			return false
		case <-tick.C:
		}
	}
}

// Close stops tinyproxy: SIGTERM, then SIGKILL if it lingers.
func (tp *Proxy) Close() {
	tp.stop.Do(func() {
		_ = tp.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-tp.exited:
		case <-time.After(timeout):
			_ = tp.cmd.Process.Kill()
			<-tp.exited
		}
	})
}

// Log is tinyproxy's log so far (it writes each line as it happens).
func (tp *Proxy) Log(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(tp.logPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// Requests are the request lines tinyproxy logged so far, in order, e.g.
// "GET http://127.0.0.1:8080/path HTTP/1.1" or "CONNECT host:443 HTTP/1.1".
func (tp *Proxy) Requests(t *testing.T) []string {
	t.Helper()
	var out []string
	for line := range strings.Lines(tp.Log(t)) {
		if _, req, ok := strings.Cut(line, "]: Request (file descriptor "); ok {
			if _, req, ok = strings.Cut(req, "): "); ok {
				out = append(out, strings.TrimSpace(req))
			}
		}
	}
	return out
}

// FreePort returns a port of 127.0.0.1 that nothing listens on now.
func FreePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
