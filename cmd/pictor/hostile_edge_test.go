package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// Tests of the edge process against hostile clients, and of a shutdown
// that cannot hang.

// startEdgeLimited runs `pictor edge` with at most nofile open files (soft
// and hard, so that it cannot raise them) and returns it and its address.
func startEdgeLimited(t *testing.T, nofile int, environ []string, args ...string) (*process, string) {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed to start the edge with few descriptors: %v", err)
	}
	limit := fmt.Sprintf("--nofile=%d:%d", nofile, nofile)
	cmd := exec.Command(prlimit, append([]string{limit, "--", buildBinary(t), "edge"}, args...)...)
	cmd.Env = append(append(os.Environ(), "PICTOR_LOG_LEVEL=info"), environ...)
	p, url := startCmd(t, cmd)
	return p, strings.TrimPrefix(url, "http://")
}

// openFiles counts the descriptors a process holds.
func openFiles(pid int) int {
	ents, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	return len(ents)
}

// pollUntil polls every 20 ms until cond holds, failing after limit.
func pollUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		<-tick.C
	}
}

// roundTrip sends one request on c and reads the answer.
func roundTrip(c net.Conn, br *bufio.Reader, req string) (*apitest.Response, error) {
	if _, err := io.WriteString(c, req); err != nil {
		return nil, err
	}
	r, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	return &apitest.Response{Status: r.StatusCode, Header: r.Header, Body: body}, nil
}

// TestEdgeSurvivesDescriptorExhaustion: an edge process limited to 64 open
// files, flooded by clients that each send half a request and wait, runs
// out of descriptors. It keeps accepting: every further connection is
// answered at once with 503, the standard body and Retry-After (it frees a
// spare descriptor to accept it), /healthz says "overloaded" to a client
// already connected, and once the flood closes its connections /healthz
// and relayed requests succeed again. Before, fasthttp's Serve returned on
// the first EMFILE and the edge answered nothing more until SIGTERM.
func TestEdgeSurvivesDescriptorExhaustion(t *testing.T) {
	const nofile = 64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data":[]}`))
	}))
	defer origin.Close()
	p, addr := startEdgeLimited(t, nofile, []string{"PICTOR_MAX_CONNS_PER_IP=0"},
		"--origin-url", origin.URL, "--addr", "127.0.0.1:0", "--cache-dir", filepath.Join(t.TempDir(), "cache"),
		"--header-timeout", "5m")
	pid := p.cmd.Process.Pid
	pollUntil(t, 10*time.Second, "the edge logs its open-file limit", func() bool {
		return strings.Contains(p.stderr.String(), fmt.Sprintf(`"msg":"edge open-file limit","limit":%d`, nofile))
	})
	const healthz = "GET /healthz HTTP/1.1\r\nHost: e\r\n\r\n"
	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	checker := dial()
	checks := bufio.NewReader(checker)
	checker.SetDeadline(time.Now().Add(2 * time.Minute))
	r, err := roundTrip(checker, checks, healthz)
	if err != nil {
		t.Fatal(err)
	}
	apitest.WantStatus(t, r, 200)

	// The flood: each connection sends half a request. More than the
	// process can hold: at most nofile of them are admitted, the rest must
	// be answered.
	type answered struct {
		r   *apitest.Response
		err error
	}
	const flood = nofile + 40
	answers := make(chan answered, flood)
	var held []net.Conn
	for range flood {
		c := dial()
		held = append(held, c)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: e\r\n"); err != nil {
			answers <- answered{err: err}
			continue
		}
		go func() {
			c.SetReadDeadline(time.Now().Add(2 * time.Minute)) // the admitted ones never hear back
			br := bufio.NewReader(c)
			r, err := http.ReadResponse(br, nil)
			if err != nil {
				if ne := (net.Error)(nil); errors.As(err, &ne) && ne.Timeout() {
					return
				}
				answers <- answered{err: err}
				return
			}
			body, err := io.ReadAll(r.Body)
			answers <- answered{r: &apitest.Response{Status: r.StatusCode, Header: r.Header, Body: body}, err: err}
		}()
	}
	// Every connection past what the process holds is answered, at once:
	// not after the held ones give up.
	wait := time.After(30 * time.Second)
	for got := 0; got < flood-nofile; got++ {
		select {
		case a := <-answers:
			if a.err != nil {
				t.Fatalf("a connection of the flood: %v", a.err)
			}
			apitest.WantError(t, a.r, http.StatusServiceUnavailable)
			if a.r.Header.Get("Retry-After") == "" {
				t.Fatalf("a refusal without Retry-After: %v", a.r.Header)
			}
		case <-wait:
			t.Fatalf("%d of the %d connections past the limit answered within 30 s; the edge holds %d files\nlogs:\n%s",
				got, flood-nofile, openFiles(pid), p.stderr.String())
		}
	}
	r, err = roundTrip(checker, checks, healthz)
	if err != nil {
		t.Fatal(err)
	}
	apitest.WantStatus(t, r, http.StatusServiceUnavailable)
	if got := strings.TrimSpace(string(r.Body)); got != `{"status":"overloaded"}` {
		t.Fatalf("healthz out of descriptors: %s", got)
	}
	if !strings.Contains(p.stderr.String(), "edge out of file descriptors") {
		t.Errorf("the exhaustion is not logged:\n%s", p.stderr.String())
	}

	// The flood ends; the edge recovers promptly.
	for _, c := range held {
		c.Close()
	}
	pollUntil(t, 30*time.Second, "healthz ok on a new connection", func() bool {
		c := dial()
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		r, err := roundTrip(c, bufio.NewReader(c), healthz)
		if err != nil {
			t.Logf("healthz after the flood: %v", err)
			return false
		}
		return r.Status == 200 && strings.TrimSpace(string(r.Body)) == `{"status":"ok"}`
	})
	apitest.WantStatus(t, apitest.Do(t, "http://"+addr, apitest.Request{Method: "GET", Path: "/v1/api-keys"}), 200)
	r, err = roundTrip(checker, checks, healthz)
	if err != nil {
		t.Fatal(err)
	}
	apitest.WantStatus(t, r, 200)
	if err := p.terminate(t); err != nil {
		t.Fatalf("edge exit: %v\n%s", err, p.stderr.String())
	}
}

// stuckComponent starts, and never finishes stopping until released.
type stuckComponent struct{ release chan struct{} }

func (stuckComponent) Start(context.Context) error { return nil }

func (s stuckComponent) Stop(context.Context) error {
	<-s.release
	return nil
}

// TestServeUntilDoneIsBounded: a component that never finishes stopping
// does not keep serve from returning: past the grace and the stop bound it
// returns an error naming it.
func TestServeUntilDoneIsBounded(t *testing.T) {
	grace, bound := shutdownGrace, stopBound
	shutdownGrace, stopBound = 200*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { shutdownGrace, stopBound = grace, bound })
	stuck := stuckComponent{release: make(chan struct{})}
	defer close(stuck.release)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, logs apitest.Buffer
	done := make(chan error, 1)
	go func() { done <- serveUntilDone(ctx, env{stdout: &out, stderr: &logs}, "up\n", stuck) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "main.stuckComponent still stopping") {
			t.Fatalf("serveUntilDone: %v, want it to name the component still stopping", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serveUntilDone waits for a component that never stops")
	}
}

// TestEdgeLimitFlags: the edge's limits are flags of serve and edge, read
// from PICTOR_* too, and a bad value is refused naming its flag before
// anything starts.
func TestEdgeLimitFlags(t *testing.T) {
	for _, cmd := range []string{"serve", "edge"} {
		for _, tt := range []struct {
			name    string
			environ map[string]string
			args    []string
			want    string
		}{
			{"no connections", nil, []string{"--max-conns", "0"}, "--max-conns"},
			{"per-address limit from the environment", map[string]string{"PICTOR_MAX_CONNS_PER_IP": "-1"}, nil, "--max-conns-per-ip"},
			{"no header timeout", map[string]string{"PICTOR_HEADER_TIMEOUT": "0s"}, nil, "--header-timeout"},
			{"header timeout not a duration", map[string]string{"PICTOR_HEADER_TIMEOUT": "soon"}, nil, "PICTOR_HEADER_TIMEOUT"},
			{"negative body grace", nil, []string{"--body-grace", "-1s"}, "--body-grace"},
			{"no minimum body rate", map[string]string{"PICTOR_BODY_MIN_RATE": "0"}, nil, "--body-min-rate"},
		} {
			t.Run(cmd+"/"+tt.name, func(t *testing.T) {
				args := []string{cmd, "--addr", "127.0.0.1:0"}
				if cmd == "serve" {
					args = append(args, "--data-dir", t.TempDir(), "--origin-addr", "127.0.0.1:0")
				} else {
					args = append(args, "--origin-url", "http://127.0.0.1:1", "--cache-dir", t.TempDir())
				}
				// Bounded: a setting that were ignored would let the command run.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var out, logs apitest.Buffer
				err := run(ctx, append(args, tt.args...), env{stdout: &out, stderr: &logs, getenv: func(k string) string { return tt.environ[k] }})
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want it to name %s", err, tt.want)
				}
			})
		}
	}
	// The origin's own port has the header timeout and body rate too.
	for _, tt := range []struct {
		name    string
		environ map[string]string
		args    []string
		want    string
	}{
		{"header timeout not a duration", map[string]string{"PICTOR_HEADER_TIMEOUT": "soon"}, nil, "PICTOR_HEADER_TIMEOUT"},
		{"negative header timeout", nil, []string{"--header-timeout", "-1s"}, "--header-timeout"},
		{"no header timeout", map[string]string{"PICTOR_HEADER_TIMEOUT": "0s"}, nil, "--header-timeout"},
		{"negative body grace", nil, []string{"--body-grace", "-1s"}, "--body-grace"},
		{"negative minimum body rate", map[string]string{"PICTOR_BODY_MIN_RATE": "-1"}, nil, "--body-min-rate"},
		{"render lease too short", nil, []string{"--render-lease", "10ms"}, "--render-lease"},
		{"render lease not a duration", map[string]string{"PICTOR_RENDER_LEASE": "long"}, nil, "PICTOR_RENDER_LEASE"},
		{"no OG render budget", nil, []string{"--og-render-budget", "0"}, "--og-render-budget"},
		{"no previews", nil, []string{"--previews-per-minute", "0"}, "--previews-per-minute"},
		{"previews past the bound", map[string]string{"PICTOR_PREVIEWS_PER_MINUTE": "10001"}, nil, "--previews-per-minute"},
	} {
		t.Run("origin/"+tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, logs apitest.Buffer
			args := append([]string{"origin", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, tt.args...)
			err := run(ctx, args, env{stdout: &out, stderr: &logs, getenv: func(k string) string { return tt.environ[k] }})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to name %s", err, tt.want)
			}
		})
	}
}
