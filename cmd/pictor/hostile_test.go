package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/render"
)

// TestHostileServe attacks one `pictor serve` as a hostile client would,
// over real sockets, with a real Chromium: each subtest is a defect of
// issue 12 seen from outside. The packages' own hostile tests go deeper
// (edge/hostile_test.go, origin/mainframe_test.go, origin/port_test.go,
// origin/stable_test.go, origin/render/sandbox_test.go,
// cmd/pictor/hostile_edge_test.go).
func TestHostileServe(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, nil, "--header-timeout", "2s", "--body-grace", "1s", "--body-min-rate", "65536")
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(s.Owner.APIID+":"+s.Owner.APIKey))

	// dial opens a raw connection to the edge.
	dial := func(t *testing.T) (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(30 * time.Second))
		return c, bufio.NewReader(c)
	}
	// answer reads one response from br and checks its status and
	// standard body; with closed, that nothing follows it.
	answer := func(t *testing.T, br *bufio.Reader, status int, closed bool) {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		apitest.WantError(t, &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, status)
		if closed {
			if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
				t.Fatalf("after the %d: %q, %v; want the connection closed with nothing more", status, rest, err)
			}
		}
	}

	t.Run("a site that refuses the connection is no image and costs nothing", func(t *testing.T) {
		usage := s.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &s.Owner})
		apitest.WantStatus(t, usage, 200)
		_, path := createImage(t, s.URL, s.Owner, map[string]any{"url": "http://" + apitest.ClosedAddr(t) + "/"})
		for range 2 {
			r := s.do(t, apitest.Request{Method: "GET", Path: path})
			apitest.WantMessage(t, apitest.WantError(t, r, 502), "connection refused")
			if cc := r.Header.Get("Cache-Control"); strings.Contains(cc, "immutable") || !strings.Contains(cc, "no-store") {
				t.Fatalf("a failure answered with Cache-Control %q", cc)
			}
		}
		after := s.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &s.Owner})
		if !bytes.Equal(after.Body, usage.Body) {
			t.Fatalf("usage changed by a render with no page:\nbefore %s\nafter  %s", usage.Body, after.Body)
		}
	})

	t.Run("a malformed chunk ends the connection", func(t *testing.T) {
		c, br := dial(t)
		fmt.Fprintf(c, "POST /v1/image HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/json\r\n"+
			"Transfer-Encoding: chunked\r\n\r\nG\r\n{}\r\n0\r\n\r\n"+
			"GET /v1/images HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n", basic, basic)
		answer(t, br, 400, true)
	})

	t.Run("Content-Length beside chunked ends the connection", func(t *testing.T) {
		c, br := dial(t)
		fmt.Fprintf(c, "POST /v1/image HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Length: 4\r\n"+
			"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v1/images HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n", basic, basic)
		answer(t, br, 400, true)
	})

	t.Run("headers that never end get 408", func(t *testing.T) {
		c, br := dial(t)
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
		answer(t, br, 408, true)
	})

	t.Run("a body that never comes gets 408", func(t *testing.T) {
		c, br := dial(t)
		fmt.Fprintf(c, "POST /v1/image HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Type: application/json\r\n"+
			"Content-Length: 100000\r\n\r\n{\"html\":", basic)
		answer(t, br, 408, true)
	})

	t.Run("a malformed page token is refused", func(t *testing.T) {
		r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/images?page_token=%%%", Creds: &s.Owner})
		apitest.WantField(t, r, "page_token")
	})

	t.Run("an image path with an empty extension is not found", func(t *testing.T) {
		_, path := createImage(t, s.URL, s.Owner, map[string]any{"html": box800})
		apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: path}), 200)
		for _, p := range []string{path + ".", path + "..png", path + ".png."} {
			apitest.WantError(t, s.do(t, apitest.Request{Method: "GET", Path: p}), 404)
		}
	})

	t.Run("oversized headers at the origin's port get the standard body", func(t *testing.T) {
		r := apitest.Do(t, s.OriginURL, apitest.Request{Method: "GET", Path: "/healthz",
			Header: map[string]string{"X-Big": strings.Repeat("a", 100<<10)}})
		apitest.WantError(t, r, 431)
	})

	t.Run("Chromium runs unprivileged and sandboxed", func(t *testing.T) {
		profiles := render.ProfileRoot(filepath.Join(dir, "chromium"))
		pids := render.Processes(profiles)
		renderers := 0
		for _, pid := range pids {
			status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
			if err != nil {
				continue // exited meanwhile
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			for line := range strings.SplitSeq(string(status), "\n") {
				if f := strings.Fields(line); len(f) > 2 && f[0] == "Uid:" && (f[1] == "0" || f[2] == "0") {
					t.Fatalf("Chromium process %d runs as root: %s", pid, line)
				}
				if bytes.Contains(cmdline, []byte("--type=renderer")) && strings.HasPrefix(line, "Seccomp:") {
					renderers++
					if strings.TrimSpace(strings.TrimPrefix(line, "Seccomp:")) != "2" {
						t.Fatalf("renderer %d is not under seccomp-bpf: %s", pid, line)
					}
				}
			}
		}
		if len(pids) < 2 || renderers == 0 {
			t.Fatalf("%d Chromium processes under %s, %d renderers; want the browser, its children and renderers", len(pids), profiles, renderers)
		}
	})
}
