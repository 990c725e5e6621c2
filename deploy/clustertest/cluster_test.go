package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/pictor"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestCluster starts one cluster (starting is slow) and runs the faults on
// it in order. Each fault puts back what it stopped before the next runs,
// also when it fails.
func TestCluster(t *testing.T) {
	c := startCluster(t)
	for _, f := range []struct {
		name string
		run  func(*testing.T, *cluster)
	}{
		{"SecretsArePrivate", testSecretsArePrivate},
		{"KillOriginDuringBurst", testKillOriginDuringBurst},
		{"KillEdge", testKillEdge},
		{"RestartPostgres", testRestartPostgres},
		{"StopS3", testStopS3},
		{"PurgeReachesEveryEdge", testPurgeReachesEveryEdge},
		{"ManagementRateLimitAcrossOrigins", testRateLimitAcrossOrigins},
		{"CreditsAcrossOrigins", testCreditsAcrossOrigins},
	} {
		t.Run(f.name, func(t *testing.T) {
			marks := c.logMarks()
			t.Cleanup(func() {
				if t.Failed() {
					c.dumpLogs(t, marks)
				}
				c.restore(t)
			})
			f.run(t, c)
		})
	}
}

// cluster is a running deploy/cluster.sh cluster: the JSON line of `up`,
// and what its commands need.
type cluster struct {
	Edges   []string `json:"edges"`
	Origins []string `json:"origins"`
	Store   string   `json:"store"`
	APIID   string   `json:"api_id"`
	APIKey  string   `json:"api_key"`

	root, dir, bin string
	env            []string
	owner          apitest.Creds
}

// startCluster builds pictor from this checkout and starts a cluster in a
// temporary directory; the test's cleanup takes it down.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	root := moduleRoot(t)
	tmp := t.TempDir()
	began := time.Now()
	bin, err := pictor.Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built pictor in %v", time.Since(began).Round(time.Millisecond))
	dir := filepath.Join(tmp, "cluster")
	// PostgreSQL runs as the postgres user, which must reach its files
	// under the test's temporary directories (made 0700).
	for _, d := range []string{filepath.Dir(tmp), tmp} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := &cluster{root: root, dir: dir, bin: bin}
	// Only the settings below reach the processes, whatever PICTOR_*
	// variables the test runs with.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PICTOR_") {
			c.env = append(c.env, kv)
		}
	}
	c.env = append(c.env, "PICTOR_BIN="+bin, "PICTOR_ALLOW_PRIVATE_URLS=true", "PICTOR_LOG_LEVEL=info",
		// A killed origin's renders are taken over sooner than the default 30 s.
		"PICTOR_RENDER_LEASE=5s")
	upDone := false
	t.Cleanup(func() {
		running := map[string]int{} // what up and start started, by name
		if upDone {
			for name, p := range c.status(t) {
				if p.PID != nil {
					running[name] = *p.PID
				}
			}
		}
		// A pictor process up did not start, running beside the cluster:
		// down must leave it alone.
		decoy := exec.Command(bin, "edge", "--addr", "127.0.0.1:0", "--origin-url", "http://127.0.0.1:9",
			"--cache-dir", filepath.Join(tmp, "decoy-cache"))
		if err := decoy.Start(); err != nil {
			t.Errorf("start a decoy edge: %v", err)
		}
		began := time.Now()
		if _, err := c.sh("down"); err != nil {
			t.Errorf("cluster.sh down: %v", err)
		}
		t.Logf("cluster.sh down took %v", time.Since(began).Round(time.Millisecond))
		for name, pid := range running {
			if alive(pid) {
				t.Errorf("after cluster.sh down, %s (pid %d) still runs", name, pid)
			}
		}
		if decoy.Process != nil {
			if !alive(decoy.Process.Pid) {
				t.Error("cluster.sh down stopped a pictor process it did not start")
			}
			decoy.Process.Kill()
			decoy.Wait()
		}
	})
	began = time.Now()
	out, err := c.sh("up")
	if err != nil {
		for _, name := range logged {
			if b, rerr := os.ReadFile(filepath.Join(c.dir, name, "log")); rerr == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				t.Logf("the end of %s's log:\n%s", name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
			}
		}
		t.Fatalf("cluster.sh up: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), c); err != nil {
		t.Fatalf("the last line of cluster.sh up is not its JSON object: %v\n%s", err, out)
	}
	if len(c.Edges) != 2 || len(c.Origins) != 2 || c.APIKey == "" || !strings.HasPrefix(c.Store, "postgres://") {
		t.Fatalf("cluster.sh up printed %s", lines[len(lines)-1])
	}
	t.Logf("cluster.sh up took %v", time.Since(began).Round(time.Millisecond))
	checkPortsBelowEphemeral(t, dir)
	c.owner = apitest.Creds{APIID: c.APIID, APIKey: c.APIKey}
	upDone = true
	for name, p := range c.status(t) {
		if !p.Healthy || p.PID == nil {
			t.Fatalf("after up, %s is not healthy: %+v", name, p)
		}
	}
	return c
}

// checkPortsBelowEphemeral fails unless every port up gave out (DIR/ports)
// lies below the kernel's ephemeral range, where no outgoing connection
// can take it between its pick and its bind.
func checkPortsBelowEphemeral(t *testing.T, dir string) {
	t.Helper()
	r, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	var lo int
	if _, err := fmt.Sscan(string(r), &lo); err != nil {
		t.Fatalf("ip_local_port_range %q: %v", r, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "ports"))
	if err != nil {
		t.Fatal(err)
	}
	ports := strings.Fields(string(b))
	if len(ports) != 6 { // PostgreSQL, S3, two edges, two origins
		t.Errorf("up gave out %d ports, want 6: %q", len(ports), ports)
	}
	for _, p := range ports {
		if n, err := strconv.Atoi(p); err != nil || n < 1024 || n >= lo {
			t.Errorf("up gave out port %s, want one in [1024, %d) (below the ephemeral range)", p, lo)
		}
	}
}

// moduleRoot is the directory of go.mod above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := pictor.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// sh runs deploy/cluster.sh with args on the cluster's directory and
// returns its standard output; an error carries its standard error.
func (c *cluster) sh(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.root, "deploy", "cluster.sh"), append(args, "--dir", c.dir)...)
	cmd.Env = c.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The processes it starts write to their own logs; should one keep an
	// inherited descriptor, do not wait for it.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%v: %w\n%s", args, err, stderr.String())
	}
	return stdout.String(), nil
}

// proc is one process in `cluster.sh status`.
type proc struct {
	PID     *int   `json:"pid"`
	URL     string `json:"url"`
	Healthy bool   `json:"healthy"`
}

func (c *cluster) status(t *testing.T) map[string]proc {
	t.Helper()
	out, err := c.sh("status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Processes map[string]proc `json:"processes"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("cluster.sh status: %v\n%s", err, out)
	}
	for _, name := range []string{"postgres", "s3", "origin-1", "origin-2", "edge-1", "edge-2"} {
		if _, ok := st.Processes[name]; !ok {
			t.Fatalf("cluster.sh status has no %s: %s", name, out)
		}
	}
	return st.Processes
}

// stop stops one process of the cluster: SIGTERM and wait, or SIGKILL.
func (c *cluster) stop(t *testing.T, name string, kill bool) {
	t.Helper()
	args := []string{"stop", name}
	if kill {
		args = append(args, "--kill")
	}
	if _, err := c.sh(args...); err != nil {
		t.Fatal(err)
	}
	if p := c.status(t)[name]; p.PID != nil || p.Healthy {
		t.Fatalf("after cluster.sh stop %s, status says %+v", name, p)
	}
}

// start starts a stopped process again; cluster.sh waits until it is
// healthy.
func (c *cluster) start(t *testing.T, name string) {
	t.Helper()
	if _, err := c.sh("start", name); err != nil {
		t.Fatal(err)
	}
	if p := c.status(t)[name]; p.PID == nil || !p.Healthy {
		t.Fatalf("after cluster.sh start %s, status says %+v", name, p)
	}
}

// restore starts again every process a fault left stopped, stores first.
func (c *cluster) restore(t *testing.T) {
	t.Helper()
	st := c.status(t)
	for _, name := range []string{"postgres", "s3", "origin-1", "origin-2", "edge-1", "edge-2"} {
		if st[name].PID == nil {
			t.Logf("restoring %s", name)
			c.start(t, name)
		}
	}
}

// logged are the processes whose logs a failed fault shows.
var logged = []string{"origin-1", "origin-2", "edge-1", "edge-2", "s3"}

// logMarks returns the sizes of the processes' logs now.
func (c *cluster) logMarks() map[string]int64 {
	marks := map[string]int64{}
	for _, name := range logged {
		if fi, err := os.Stat(filepath.Join(c.dir, name, "log")); err == nil {
			marks[name] = fi.Size()
		}
	}
	return marks
}

// dumpLogs logs the warnings and errors the processes logged since marks,
// for a failed fault.
func (c *cluster) dumpLogs(t *testing.T, marks map[string]int64) {
	for _, name := range logged {
		b, err := os.ReadFile(filepath.Join(c.dir, name, "log"))
		if err != nil {
			t.Logf("%s log: %v", name, err)
			continue
		}
		b = b[min(marks[name], int64(len(b))):]
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`) {
				keep = append(keep, l)
			}
		}
		if len(keep) > 20 {
			keep = append(keep[:10], append([]string{"..."}, keep[len(keep)-10:]...)...)
		}
		t.Logf("%s logged %d warnings and errors during the fault:\n%s", name, len(keep), strings.Join(keep, "\n"))
	}
}

// orgCreate creates an organization on plan with `pictor admin org create`
// on the cluster's store (PICTOR_STORE: its password stays off the command
// line) and returns its key.
func (c *cluster) orgCreate(t *testing.T, name, plan string) apitest.Creds {
	t.Helper()
	master, err := os.ReadFile(filepath.Join(c.dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(c.bin, "admin", "org", "create", "--name", name, "--plan", plan)
	cmd.Env = append(c.env, "PICTOR_MASTER_KEY="+strings.TrimSpace(string(master)), "PICTOR_STORE="+c.Store)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("admin org create: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("admin org create: %v", err)
	}
	var created struct {
		OrgID string `json:"org_id"`
		Key   struct {
			APIID  string `json:"api_id"`
			APIKey string `json:"api_key"`
		} `json:"key"`
	}
	if err := json.Unmarshal(out, &created); err != nil || created.Key.APIKey == "" {
		t.Fatalf("admin org create printed %q: %v", out, err)
	}
	return apitest.Creds{APIID: created.Key.APIID, APIKey: created.Key.APIKey}
}

// client reaches the cluster only, on loopback: no proxy from the
// environment. Each call has its own deadline through its context.
var client = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}}

// request is one HTTP call to the cluster.
type request struct {
	method, url string
	creds       *apitest.Creds
	json        any
}

// do sends r and reads the whole answer; an error is one without an
// answer (refused, reset, cut short, or ctx's end).
func do(ctx context.Context, r request) (*apitest.Response, error) {
	var body io.Reader
	if r.json != nil {
		b, err := json.Marshal(r.json)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return nil, err
	}
	if r.json != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.creds != nil {
		req.SetBasicAuth(r.creds.APIID, r.creds.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: body: %w", r.method, r.url, err)
	}
	return &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// mustDo is do for the test's goroutine, with a minute's deadline.
func mustDo(t *testing.T, r request) *apitest.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := do(ctx, r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.url, err)
	}
	return resp
}

// retryable tells whether an answer may change by waiting: none at all,
// or a 5xx. A 4xx is final.
func retryable(resp *apitest.Response, err error) bool {
	return err != nil || resp.Status >= 500
}

// until sends r until it gets an answer that is not retryable or ctx ends,
// and returns the last answer (or error).
func until(ctx context.Context, r request) (*apitest.Response, error) {
	for {
		resp, err := do(ctx, r)
		if !retryable(resp, err) {
			return resp, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("%s %s still answers %d when the deadline passes: %s", r.method, r.url, resp.Status, resp.Body)
			}
			return resp, fmt.Errorf("%w (%v)", err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// standardError checks an error answer: one of statuses, with the
// standard JSON error body whose statusCode is the status.
func standardError(resp *apitest.Response, statuses ...int) error {
	ok := false
	for _, s := range statuses {
		ok = ok || resp.Status == s
	}
	if !ok {
		return fmt.Errorf("status %d, want one of %v; body %.300s", resp.Status, statuses, resp.Body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("error answer %d has Content-Type %q", resp.Status, ct)
	}
	var m struct {
		Error      string `json:"error"`
		Message    string `json:"message"`
		StatusCode int    `json:"statusCode"`
	}
	if err := json.Unmarshal(resp.Body, &m); err != nil || m.Error == "" || m.Message == "" || m.StatusCode != resp.Status {
		return fmt.Errorf("answer %d is not the standard error body: %s", resp.Status, resp.Body)
	}
	return nil
}

// card is a small HTML card of its own colour: a distinct image each
// (no dedupe), whose size and colour the served PNG must have.
type card struct {
	label string
	rgb   color.NRGBA
}

const cardW, cardH = 160, 90

func newCard(label string, n int) card {
	return card{label: label, rgb: color.NRGBA{R: uint8(40 + 37*n%180), G: uint8(40 + 91*n%180), B: uint8(40 + 53*n%180), A: 255}}
}

// body is the create request of the card.
func (c card) body() map[string]any {
	return map[string]any{
		"html": fmt.Sprintf(`<html><body style="margin:0;background:rgb(%d,%d,%d)">`+
			`<div style="font:14px sans-serif;color:#fff;padding:6px">%s</div></body></html>`, c.rgb.R, c.rgb.G, c.rgb.B, c.label),
		"viewport_width": cardW, "viewport_height": cardH, "device_scale": 1,
	}
}

// check decodes a served card: a PNG of the card's size whose bottom
// right corner (clear of the text) has its colour.
func (c card) check(resp *apitest.Response) error {
	if resp.Status != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" {
		return fmt.Errorf("card %s: status %d, Content-Type %q, body %.200s", c.label, resp.Status, resp.Header.Get("Content-Type"), resp.Body)
	}
	img, err := decodePNG(resp.Body)
	if err != nil {
		return fmt.Errorf("card %s: %w", c.label, err)
	}
	if b := img.Bounds(); b.Dx() != cardW || b.Dy() != cardH {
		return fmt.Errorf("card %s is %dx%d, want %dx%d", c.label, b.Dx(), b.Dy(), cardW, cardH)
	}
	if got := apitest.Pixel(img, cardW-10, cardH-10); !apitest.Near(got, c.rgb, 3) {
		return fmt.Errorf("card %s: pixel (%d,%d) = %v, want %v", c.label, cardW-10, cardH-10, got, c.rgb)
	}
	return nil
}

// created is an acknowledged creation: the card and its id.
type created struct {
	card card
	id   string
}

// create sends the card's create request to base (an edge or an origin)
// and returns the id when it was acknowledged (200 with an id); otherwise
// the answer, or the error of a request without one.
func create(ctx context.Context, base string, creds apitest.Creds, c card) (string, *apitest.Response, error) {
	resp, err := do(ctx, request{method: "POST", url: base + "/v1/image", creds: &creds, json: c.body()})
	if err != nil || resp.Status != http.StatusOK {
		return "", resp, err
	}
	var out struct {
		ID  string `json:"id"`
		URL string `json:"url"`
	}
	if err := json.Unmarshal(resp.Body, &out); err != nil || out.ID == "" || !strings.HasSuffix(out.URL, "/v1/image/"+out.ID) {
		return "", resp, fmt.Errorf("create answered 200 with %s", resp.Body)
	}
	return out.ID, resp, nil
}

// mustCreate creates the card through base and fails the test unless it
// is acknowledged.
func (c *cluster) mustCreate(t *testing.T, base string, cd card) created {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, resp, err := create(ctx, base, c.owner, cd)
	if err != nil {
		t.Fatalf("create %s through %s: %v", cd.label, base, err)
	}
	if id == "" {
		t.Fatalf("create %s through %s: %d %s", cd.label, base, resp.Status, resp.Body)
	}
	return created{card: cd, id: id}
}

// fetch GETs an image's PNG from base, retrying while the answer may
// change (no answer, 5xx) until ctx ends, and checks it is the card.
func fetch(ctx context.Context, base string, im created) (*apitest.Response, error) {
	resp, err := until(ctx, request{method: "GET", url: base + "/v1/image/" + im.id + ".png"})
	if err != nil {
		return nil, fmt.Errorf("GET %s from %s: %w", im.id, base, err)
	}
	if err := im.card.check(resp); err != nil {
		return nil, fmt.Errorf("GET %s from %s: %w", im.id, base, err)
	}
	return resp, nil
}

// mustFetch is fetch for the test's goroutine, with a deadline of deadline.
func mustFetch(t *testing.T, base string, im created, deadline time.Duration) *apitest.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	resp, err := fetch(ctx, base, im)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sameImage tells whether two answers for one image agree: the same
// bytes, or, when the origin's compactor re-encoded the master between
// the two fills (same pixels, smaller file, ETag kept), the same ETag and
// the same pixels.
func sameImage(a, b *apitest.Response) error {
	if bytes.Equal(a.Body, b.Body) {
		return nil
	}
	if ea, eb := a.Header.Get("ETag"), b.Header.Get("ETag"); ea == "" || ea != eb {
		return fmt.Errorf("different bytes (%d and %d) and ETags %q and %q", len(a.Body), len(b.Body), ea, eb)
	}
	ia, err := decodePNG(a.Body)
	if err != nil {
		return err
	}
	ib, err := decodePNG(b.Body)
	if err != nil {
		return err
	}
	if ia.Bounds() != ib.Bounds() {
		return fmt.Errorf("same ETag, sizes %v and %v", ia.Bounds(), ib.Bounds())
	}
	r := ia.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if pa, pb := apitest.Pixel(ia, x, y), apitest.Pixel(ib, x, y); pa != pb {
				return fmt.Errorf("same ETag, pixel (%d,%d) %v and %v", x, y, pa, pb)
			}
		}
	}
	return nil
}

// metric reads one sample (name with its labels) of base's /metrics; ok is
// false when it is absent.
func metric(t *testing.T, base, sample string) (float64, bool) {
	t.Helper()
	resp := mustDo(t, request{method: "GET", url: base + "/metrics"})
	if resp.Status != http.StatusOK {
		t.Fatalf("%s/metrics: %d", base, resp.Status)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` ([0-9.e+]+)$`).FindSubmatch(resp.Body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("%s: %s", sample, m[1])
	}
	return v, true
}

// eventually runs check until it returns nil or the deadline passes, and
// fails the test with its last error then.
func eventually(t *testing.T, deadline time.Duration, what string, check func() error) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v: %v", what, deadline, err)
		}
		<-time.After(200 * time.Millisecond)
	}
}

func decodePNG(b []byte) (image.Image, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("decode PNG: %w", err)
	}
	return img, nil
}

// alive reports whether a process runs with the pid (a zombie does not:
// its parent has not reaped it yet, but it stopped).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
