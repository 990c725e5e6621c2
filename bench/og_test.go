package bench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/internal/benchtest"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/report"
)

// startFileServer stands in for nginx: Go's file server on loopback.
func startFileServer(_ context.Context, _ *Env, root string) (*staticServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(root))}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return &staticServer{addr: ln.Addr().String(), about: "Go's file server", stop: func() error {
		err := srv.Close()
		if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}}, nil
}

// startOGServer starts the fake serve with the OG scenarios' flags, as
// the runner does, and returns its Env.
func startOGServer(t *testing.T, cfg *Config) *Env {
	t.Helper()
	log, err := os.Create(filepath.Join(cfg.OutDir, PictorLogFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	srv := &server{cfg: cfg, rep: &report.Report{}, log: log}
	p, err := srv.ensure(context.Background(), ogHotScenario().ServeFlags, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	return &Env{Config: cfg, Pictor: p, WorkDir: t.TempDir()}
}

// TestOGScenarios runs both OG scenarios against the fake serve, og-hot
// with Go's file server as its baseline.
func TestOGScenarios(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Pictor, cfg.OutDir = fakePictor(t, "allow-private-urls", "og-render-budget"), t.TempDir()
	cfg.Duration, cfg.Rounds, cfg.Warmup, cfg.EdgeClients = 400*time.Millisecond, 2, 2, 4
	env := startOGServer(t, &cfg)
	ctx := context.Background()

	t.Run("og-hot", func(t *testing.T) {
		results, err := ogHot(ctx, env, startFileServer, 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(results) != 2 || results[0].Name != "og-hot/pictor" || results[1].Name != "og-hot/nginx" {
			t.Fatalf("results %v", results)
		}
		for _, r := range results {
			if r.Errors > 0 || r.Requests == 0 || r.Clients != 4 || r.Latency.Count() != r.Requests {
				t.Errorf("%s: %d requests, %d errors (%s), %d clients", r.Name, r.Requests, r.Errors, r.FirstError, r.Clients)
			}
		}
		note := results[0].Note
		t.Logf("og-hot/pictor: %s\nog-hot/nginx: %s", note, results[1].Note)
		// The warm-up request and the check missed and hit; the measured
		// runs only hit.
		for _, want := range []string{"-byte 1200×600 PNG, User-Agent Twitterbot/1.0", "misses 0 (0.0%)",
			"the site served 1 page reads", "1 other loads", "requests/s per round: ",
			"round by round against og-hot/nginx: median "} {
			if !strings.Contains(note, want) {
				t.Errorf("og-hot/pictor's note %q lacks %q", note, want)
			}
		}
		if !strings.Contains(results[1].Note, "Go's file server") {
			t.Errorf("og-hot/nginx's note %q does not name the baseline", results[1].Note)
		}
		checks := Evaluate(Checks(), results)
		if !slices.ContainsFunc(checks, func(c report.CheckResult) bool {
			return c.Name == "og-hot/pictor throughput ≥ 1× nginx" && strings.Contains(c.Measured, "of og-hot/nginx")
		}) {
			t.Errorf("no og-hot target in %+v", checks)
		}
	})

	t.Run("og-first", func(t *testing.T) {
		results, err := runOGFirst(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		if len(results) != 1 || results[0].Name != "og-first/sequential" {
			t.Fatalf("results %v", results)
		}
		r := results[0]
		t.Logf("og-first/sequential: %d requests, %s", r.Requests, r.Note)
		if r.Errors > 0 || r.Requests == 0 || r.Clients != 1 || r.CPU <= 0 {
			t.Fatalf("%d requests, %d errors (%s), %d clients, CPU %v", r.Requests, r.Errors, r.FirstError, r.Clients, r.CPU)
		}
		// Every measured request read and rendered a new page, the
		// warm-up's excepted.
		n := strconv.Itoa(r.Requests)
		for _, want := range []string{"(" + n + " reads)", "(" + n + " renders)", "over " + n + " fits", n + " first requests",
			"the site served " + n + " page reads", "and " + n + " other loads", "render queue wait 0.050 ms", "fit to 1200×600 0.100 ms",
			"on average over " + n + " answers"} {
			if !strings.Contains(r.Note, want) {
				t.Errorf("note %q lacks %q", r.Note, want)
			}
		}
		m := regexp.MustCompile(`mean first request (\S+) ms = page read (\S+) ms .* \+ render (\S+) ms in a tab .* \+ service overhead (\S+) ms`).FindStringSubmatch(r.Note)
		if m == nil {
			t.Fatalf("note %q does not split the mean", r.Note)
		}
		var v [4]float64
		for i := range v {
			if v[i], err = strconv.ParseFloat(m[i+1], 64); err != nil {
				t.Fatal(err)
			}
		}
		if v[1] <= 0 || v[2] < 2 || v[3] <= 0 || v[0] < v[1]+v[2] {
			t.Errorf("split %v: want a positive read, a render of at least the fake's 2 ms and a positive overhead", v)
		}
	})

	log, err := os.ReadFile(filepath.Join(cfg.OutDir, PictorLogFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "--allow-private-urls --og-render-budget 100000") {
		t.Errorf("serve's log %q lacks the OG flags", log)
	}
}

// TestOGServeFlags: the runner checks the OG scenarios' flags against
// serve's usage, boolean --allow-private-urls included, and refuses a
// binary without one of them.
func TestOGServeFlags(t *testing.T) {
	og, first := ogHotScenario(), ogFirstScenario()
	if !slices.Equal(og.ServeFlags, first.ServeFlags) {
		t.Fatalf("og-hot's serve flags %v and og-first's %v differ: they would not share a server", og.ServeFlags, first.ServeFlags)
	}
	for _, tt := range []struct {
		flags   []string
		wantErr string
	}{
		{[]string{"allow-private-urls"}, "serve has no --og-render-budget"},
		{[]string{"og-render-budget"}, "serve has no --allow-private-urls"},
	} {
		cfg := DefaultConfig()
		cfg.Pictor = fakePictor(t, tt.flags...)
		srv := &server{cfg: &cfg, rep: &report.Report{}}
		if _, err := srv.ensure(context.Background(), og.ServeFlags, og.OwnServer); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("flags %v: ensure = %v, want %q", tt.flags, err, tt.wantErr)
		}
	}
}

func TestOGSelected(t *testing.T) {
	got, err := Select(Scenarios(), []string{"og-first", "og-hot"})
	if err != nil || len(got) != 2 || got[0].Name != "og-first" || got[1].Name != "og-hot" {
		t.Fatalf("Select = %v, %v", got, err)
	}
	for _, s := range got {
		if !s.NeedsPictor || !strings.Contains(s.About, "Twitterbot/1.0") {
			t.Errorf("%s: NeedsPictor %v, About %q", s.Name, s.NeedsPictor, s.About)
		}
	}
}

func TestOGSplitNote(t *testing.T) {
	ms := time.Millisecond
	r := benchtest.Result("og-first/sequential", 1, 100, 0, 10*time.Second, 80*ms, 120*ms) // mean 100 ms
	s := ogSplit{Read: stat{100, 0.3}, Render: stat{100, 7}, Wait: stat{100, 0.01}, Fit: stat{100, 0.9}}
	want := "mean first request 100 ms = page read 3.00 ms (100 reads) + render 70.0 ms in a tab (100 renders) + service overhead 27.0 ms: " +
		"of which render queue wait 0.100 ms, the edge's fit to 1200×600 9.00 ms over 100 fits; 100 first requests"
	if got := s.note(r); got != want {
		t.Errorf("note\n%s\nwant\n%s", got, want)
	}
	// With the origin's answers timed, the overhead splits between the
	// origin and the edge.
	s.Answer = stat{100, 8.5}
	want = "mean first request 100 ms = page read 3.00 ms (100 reads) + render 70.0 ms in a tab (100 renders) + service overhead 27.0 ms: " +
		"the origin's 12.0 ms beyond read and render (it answered the edge in 85.0 ms on average over 100 answers; render queue wait 0.100 ms) " +
		"and the edge's and HTTP's 15.0 ms (the edge's fit to 1200×600 9.00 ms over 100 fits); 100 first requests"
	if got := s.note(r); got != want {
		t.Errorf("note\n%s\nwant\n%s", got, want)
	}
	s.Answer = stat{}
	// Counters that moved more than the requests (renders of other
	// scenarios, say) can leave less than nothing: said, not hidden.
	s.Render = stat{10, 1.2}
	if got := s.note(r); !strings.Contains(got, "service overhead −23.0 ms") {
		t.Errorf("note %q: want a negative overhead", got)
	}
	if got := s.note(&load.Result{}); got != "" {
		t.Errorf("note of no request = %q", got)
	}
	before := ogSplit{Read: stat{1, 0.1}, Render: stat{2, 0.2}, Wait: stat{3, 0.3}, Answer: stat{5, 0.5}, Fit: stat{4, 0.4}}
	after := ogSplit{Read: stat{11, 1.1}, Render: stat{12, 1.2}, Wait: stat{13, 1.3}, Answer: stat{15, 1.5}, Fit: stat{14, 1.4}}
	if d := after.sub(before); d.Read.N != 10 || d.Render.N != 10 || d.Wait.N != 10 || d.Answer.N != 10 || d.Fit.N != 10 || d.Fit.mean() != 100*ms {
		t.Errorf("sub = %+v", d)
	}
}

func TestOGCountersString(t *testing.T) {
	c := ogCounters{Fresh: 120, Stale: 5, Misses: 10}.sub(ogCounters{Fresh: 20, Misses: 5})
	if got, want := c.String(), "edge OG cache: fresh hits 100 (90.9%), stale hits 5 (4.5%), misses 5 (4.5%)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (ogCounters{}).String(); !strings.Contains(got, "fresh hits 0 (–)") {
		t.Errorf("String() of nothing = %q", got)
	}
}

func TestOGChecks(t *testing.T) {
	for _, tt := range []struct {
		pictor int
		pass   bool
		want   string
	}{
		{1000, true, "1.00× (1000 requests/s ÷ 1000 requests/s of og-hot/nginx)"},
		{999, false, "1.00× (999 requests/s ÷ 1000 requests/s of og-hot/nginx)"},
	} {
		results := []*load.Result{
			benchtest.Result("og-hot/pictor", 32, tt.pictor, 0, time.Second, time.Millisecond, 2*time.Millisecond),
			benchtest.Result("og-hot/nginx", 32, 1000, 0, time.Second, time.Millisecond, 2*time.Millisecond),
		}
		for _, r := range results {
			r.Unit = "request"
		}
		got := Evaluate(Checks(), results)
		want := report.CheckResult{Name: "og-hot/pictor throughput ≥ 1× nginx", Measured: tt.want, Pass: tt.pass}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%d req/s: checks %+v, want %+v", tt.pictor, got, want)
		}
	}
	// The comparison table pairs them.
	results := []*load.Result{
		benchtest.Result("og-hot/pictor", 32, 950, 0, time.Second, time.Millisecond, 2*time.Millisecond),
		benchtest.Result("og-hot/nginx", 32, 1000, 0, time.Second, time.Millisecond, 2*time.Millisecond),
	}
	if got := report.ComparisonTable(Comparisons(), results); !strings.Contains(got, "| og-hot/pictor | og-hot/nginx | 0.95× |") {
		t.Errorf("comparison table %q lacks og-hot", got)
	}
}

func TestOGPage(t *testing.T) {
	a, b := ogPage("/p/1", "n1"), ogPage("/p/2", "n1")
	if a == b || ogPage("/p/1", "n2") == a || ogPage("/p/1", "n1") != a {
		t.Fatal("pages are not unique per path and nonce, or not deterministic")
	}
	for _, want := range []string{"<title>Pictor OG benchmark /p/1</title>", `<meta property="og:title" content="Pictor OG benchmark /p/1">`,
		"width:1200px;height:630px"} {
		if !strings.Contains(a, want) {
			t.Errorf("page lacks %q:\n%s", want, a)
		}
	}
	if !strings.Contains(ogPage(`/p/"<x>`, "n"), "<title>Pictor OG benchmark /p/&#34;&lt;x&gt;</title>") {
		t.Error("the path is not escaped")
	}
}
