package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/internal/benchtest"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/pictor"
	"github.com/pictorhq/pictor/bench/proc"
)

func TestIsolationConfigs(t *testing.T) {
	common := []string{"--allow-private-urls"}
	tests := []struct {
		name  string
		flags []string
		want  []isolationConfig
		notes []string // a part of each note, in order
	}{
		{
			name:  "as Pictor ships",
			flags: []string{"allow-private-urls", "chromium-no-sandbox", "chromium-site-isolation"},
			want: []isolationConfig{
				{isolationDefault, common},
				{isolationIsolated, []string{"--allow-private-urls", "--chromium-site-isolation"}},
				{isolationUnsandboxed, []string{"--allow-private-urls", "--chromium-no-sandbox"}},
			},
		},
		{
			name:  "site isolation on by default",
			flags: []string{"allow-private-urls", "chromium-no-sandbox", "chromium-no-site-isolation"},
			want: []isolationConfig{
				{isolationDefault, []string{"--allow-private-urls", "--chromium-no-site-isolation"}},
				{isolationIsolated, common},
				{isolationUnsandboxed, []string{"--allow-private-urls", "--chromium-no-sandbox", "--chromium-no-site-isolation"}},
			},
			notes: []string{"pictor serve has --chromium-no-site-isolation, not --chromium-site-isolation: its site isolation is on by default"},
		},
		{
			name:  "no site isolation flag",
			flags: []string{"allow-private-urls", "chromium-no-sandbox"},
			want: []isolationConfig{
				{isolationDefault, common},
				{isolationUnsandboxed, []string{"--allow-private-urls", "--chromium-no-sandbox"}},
			},
			notes: []string{"pictor serve has no --chromium-site-isolation: no isolated server"},
		},
		{
			name:  "neither flag",
			flags: []string{"allow-private-urls"},
			want:  []isolationConfig{{isolationDefault, common}},
			notes: []string{"no --chromium-site-isolation: no isolated server", "no --chromium-no-sandbox: no unsandboxed server"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names := map[string]bool{}
			for _, f := range tt.flags {
				names[f] = true
			}
			got, notes := isolationConfigs("pictor", names, common)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("configs = %v, want %v", got, tt.want)
			}
			if len(notes) != len(tt.notes) {
				t.Fatalf("notes = %q, want %d", notes, len(tt.notes))
			}
			for i, n := range notes {
				if !strings.Contains(n, tt.notes[i]) {
					t.Errorf("note %d = %q, want one containing %q", i, n, tt.notes[i])
				}
			}
		})
	}
	// Each configuration's flags are its own: appending to one must not
	// change another's.
	got, _ := isolationConfigs("pictor", map[string]bool{"chromium-no-sandbox": true, "chromium-site-isolation": true}, slices.Grow(slices.Clone(common), 8))
	got[0].flags = append(got[0].flags, "--x")
	if slices.Contains(got[1].flags, "--x") || slices.Contains(got[2].flags, "--x") {
		t.Errorf("configurations share their flags: %v", got)
	}
}

// samples returns memory samples with PSS from pss and the edge cache
// holding cache, in MiB.
func samples(pss []int64, cache int64) []load.MemorySample {
	var out []load.MemorySample
	for i, v := range pss {
		out = append(out, load.MemorySample{Renders: i, Memory: proc.Memory{PSS: v << 20, RSS: 2 * v << 20, Processes: 8 + i}, CacheBytes: cache << 20})
	}
	return out
}

func TestIsolationChecks(t *testing.T) {
	ms := time.Millisecond
	run := func(page, config string, lo, hi time.Duration, pss []int64, cache int64) *load.Result {
		r := benchtest.Result(isolationResult(page, config), 1, 100, 0, 20*time.Second, lo, hi)
		r.Memory = samples(pss, cache)
		return r
	}
	const (
		sandboxP50   = "render-isolation: sandbox (on by default), benchmark card p50 ≤ 1.05× unsandboxed (--chromium-no-sandbox): renders within 5 % of before the sandbox"
		sandboxMem   = "render-isolation: sandbox (on by default), benchmark card peak memory (PSS less the edge's memory cache) ≤ 1.05× unsandboxed (--chromium-no-sandbox): memory within 5 % of before the sandbox"
		isolationP50 = "render-isolation: site isolation (--chromium-site-isolation), embed card p50 ≤ 1.10× default: would justify turning it on"
	)
	cardUnsandboxed := run(isolationCard, isolationUnsandboxed, 200*ms, 400*ms, []int64{1000, 1100}, 100)
	embedDefault := run(isolationEmbed, isolationDefault, 200*ms, 400*ms, []int64{1000, 1100}, 100)
	tests := []struct {
		name    string
		results []*load.Result
		want    []string // "name: pass" or "name: FAIL", in order
	}{
		{"not run", nil, nil},
		{
			name: "the sandbox within its targets, site isolation over its bar",
			results: []*load.Result{
				run(isolationCard, isolationDefault, 210*ms, 410*ms, []int64{1000, 1140}, 100), // p50 1.03×, memory 1.04×
				run(isolationCard, isolationIsolated, 210*ms, 410*ms, []int64{1000, 1140}, 100),
				cardUnsandboxed,
				embedDefault,
				run(isolationEmbed, isolationIsolated, 380*ms, 760*ms, []int64{1000, 1100}, 100), // 1.9×
				run(isolationEmbed, isolationUnsandboxed, 200*ms, 400*ms, []int64{1000, 1100}, 100),
			},
			want: []string{sandboxP50 + ": pass", sandboxMem + ": pass", isolationP50 + ": FAIL"},
		},
		{
			name: "site isolation within its bar, the sandbox over its targets",
			results: []*load.Result{
				run(isolationCard, isolationDefault, 220*ms, 440*ms, []int64{1200}, 100), // 1.10×, 1.10×
				cardUnsandboxed,
				embedDefault,
				run(isolationEmbed, isolationIsolated, 216*ms, 432*ms, []int64{1000, 1100}, 100), // 1.08×
			},
			want: []string{sandboxP50 + ": FAIL", sandboxMem + ": FAIL", isolationP50 + ": pass"},
		},
		{
			name: "no isolated server: the sandbox alone",
			results: []*load.Result{
				run(isolationCard, isolationDefault, 210*ms, 410*ms, []int64{1000, 1140}, 100),
				cardUnsandboxed,
				embedDefault,
			},
			want: []string{sandboxP50 + ": pass", sandboxMem + ": pass"},
		},
		{
			name:    "the default server alone: nothing to compare",
			results: []*load.Result{run(isolationCard, isolationDefault, 210*ms, 410*ms, []int64{1000}, 0), embedDefault},
		},
		{
			name: "no memory sampled",
			results: []*load.Result{
				benchtest.Result(isolationResult(isolationCard, isolationDefault), 1, 10, 0, time.Second, ms, ms),
				benchtest.Result(isolationResult(isolationCard, isolationUnsandboxed), 1, 10, 0, time.Second, ms, ms),
			},
			want: []string{sandboxP50 + ": pass", sandboxMem + ": FAIL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range Evaluate(Checks(), tt.results) {
				if strings.HasPrefix(c.Name, "render-isolation") {
					verdict := "FAIL"
					if c.Pass {
						verdict = "pass"
					}
					got = append(got, c.Name+": "+verdict)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("checks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}

	// The measured figure says which configurations it divides.
	find := func(rs ...*load.Result) func(string) *load.Result {
		return func(name string) *load.Result {
			if i := slices.IndexFunc(rs, func(r *load.Result) bool { return r.Name == name }); i >= 0 {
				return rs[i]
			}
			return nil
		}
	}
	def := &load.Result{Name: isolationResult(isolationCard, isolationDefault), Memory: samples([]int64{1000, 1100}, 80)}
	unsandboxed := &load.Result{Name: isolationResult(isolationCard, isolationUnsandboxed), Memory: samples([]int64{1000, 1100}, 100)}
	m, _, _ := sandboxCost.memoryCheck(isolationCard, 1.05, "").Eval(find(def, unsandboxed))
	if want := "default ÷ unsandboxed: 1.02× (1020 MiB ÷ 1000 MiB; whole tree 1100 MiB ÷ 1100 MiB, 1.00×)"; m != want {
		t.Errorf("measured %q, want %q", m, want)
	}
	iso := benchtest.Result(isolationResult(isolationEmbed, isolationIsolated), 1, 100, 0, 20*time.Second, 380*ms, 760*ms)
	m, pass, _ := siteIsolationCost.latencyCheck(isolationEmbed, 0.50, 1.10, "").Eval(find(embedDefault, iso))
	if !strings.HasPrefix(m, "isolated ÷ default: 1.9") || !strings.Contains(m, "p50") || pass {
		t.Errorf("measured %q, pass %v; want isolated ÷ default 1.9× of p50, failing", m, pass)
	}
}

func TestIsolationNotes(t *testing.T) {
	ms := time.Millisecond
	def := benchtest.Result(isolationResult(isolationCard, isolationDefault), 1, 100, 0, 20*time.Second, 220*ms, 440*ms)
	unsandboxed := benchtest.Result(isolationResult(isolationCard, isolationUnsandboxed), 1, 100, 0, 20*time.Second, 200*ms, 400*ms)
	def.Memory, unsandboxed.Memory = samples([]int64{900, 1200, 1100}, 100), samples([]int64{1000}, 0)
	def.CPU, unsandboxed.CPU = 60*time.Second, 50*time.Second
	if got, want := memoryNote(def.Memory), "server's peak memory (PSS, whole tree) 1200 MiB, 1100 MiB less the edge's memory cache, up to 10 processes (3 samples)"; got != want {
		t.Errorf("memoryNote = %q\nwant %q", got, want)
	}
	if got := memoryNote(nil); got != "no memory sample" {
		t.Errorf("memoryNote(nil) = %q", got)
	}
	if got, want := sandboxCost.note(def, unsandboxed), "the sandbox's cost, default ÷ unsandboxed: p50 1.10× (328 ms ÷ 299 ms), p95 1.10× (429 ms ÷ 389 ms), "+
		"CPU per render 1.20× (600 ms ÷ 500 ms), "+
		"peak memory less the edge's memory cache 1.10× (1100 MiB ÷ 1000 MiB; whole tree 1.20×, 1200 MiB ÷ 1000 MiB)"; got != want {
		t.Errorf("note = %q\nwant %q", got, want)
	}
	if got := siteIsolationCost.note(&load.Result{}, &load.Result{}); got != "" {
		t.Errorf("note of empty runs = %q", got)
	}
	embed := func(config string, pss int64) *load.Result {
		return &load.Result{Name: isolationResult(isolationEmbed, config), Memory: samples([]int64{pss}, 0)}
	}
	servers := []*isolationServer{{config: isolationDefault}, {config: isolationIsolated}, {config: isolationUnsandboxed}}
	got := scenarioPeakNote(servers, []*load.Result{def, unsandboxed, embed(isolationDefault, 1300), embed(isolationIsolated, 1560), embed(isolationUnsandboxed, 1040)})
	want := "peak memory over all pages, less the edge's memory cache: default 1300 MiB (1300 MiB whole tree), " +
		"isolated 1560 MiB (1560 MiB whole tree), unsandboxed 1040 MiB (1040 MiB whole tree); " +
		"site isolation's cost 1.20× (isolated ÷ default); the sandbox's cost 1.25× (default ÷ unsandboxed)"
	if got != want {
		t.Errorf("scenarioPeakNote = %q\nwant %q", got, want)
	}
	if got := scenarioPeakNote(servers[:1], []*load.Result{def}); got != "peak memory over all pages, less the edge's memory cache: default 1100 MiB (1200 MiB whole tree)" {
		t.Errorf("scenarioPeakNote of the default server alone = %q", got)
	}
}

// TestMemoryWatch samples a child process as a server's tree, with an
// edge whose memory cache holds 5 MiB.
func TestMemoryWatch(t *testing.T) {
	cmd := exec.Command("cat") // blocks on its stdin until it closes
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	edge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE pictor_edge_cache_bytes gauge\n%s %d\n", metricL1Bytes, 5<<20)
	}))
	defer edge.Close()
	s := &isolationServer{config: isolationDefault, p: &pictor.Server{URL: edge.URL, Client: edge.Client()}, pid: cmd.Process.Pid}
	s.renders.Store(3)
	w := watchMemory(context.Background(), []*isolationServer{s})
	first := w.take()
	w.stop()
	w.stop() // harmless
	if len(first) != 1 || len(first[0]) < 2 {
		t.Fatalf("took %v, want at least the first and the last sample of one server", first)
	}
	for _, m := range first[0] {
		if m.Processes != 1 || m.PSS <= 0 || m.CacheBytes != 5<<20 || m.Renders != 3 {
			t.Errorf("sample %+v: want the child's memory, a 5 MiB cache and 3 renders", m)
		}
	}
	if again := w.take(); len(again[0]) != 1 {
		t.Errorf("a second take has %d samples, want only its own", len(again[0]))
	}
	if err := w.err(); err != nil {
		t.Errorf("err = %v", err)
	}
}

// TestRenderIsolationWithoutPrivateURLs runs the scenario on a binary
// whose serve lacks --allow-private-urls: it fails before starting
// anything.
func TestRenderIsolationWithoutPrivateURLs(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "pictor")
	script := "#!/bin/sh\nprintf 'Usage of serve:\\n  -addr string\\n    \\tlisten address\\n' >&2\nexit 2\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Pictor, cfg.OutDir = bin, dir
	_, err := runRenderIsolation(context.Background(), &Env{Config: &cfg})
	if err == nil || !strings.Contains(err.Error(), "has no --allow-private-urls") {
		t.Fatalf("err = %v, want one naming --allow-private-urls", err)
	}
	cfg.Pictor = filepath.Join(dir, "missing")
	if _, err := runRenderIsolation(context.Background(), &Env{Config: &cfg}); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("err = %v, want one saying to build", err)
	}
}

// fakePictor writes a script that runs this test binary as a `pictor
// serve` whose usage lists flags (see TestFakePictorServe), and returns
// its path.
func fakePictor(t *testing.T, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pictor")
	script := fmt.Sprintf("#!/bin/sh\nBENCH_FAKE_PICTOR_FLAGS='%s' exec '%s' -test.run='^TestFakePictorServe$' -- \"$@\"\n",
		strings.Join(flags, " "), os.Args[0])
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestFakePictorServe is no test: run by fakePictor's script, it is
// enough of `pictor serve` for the scenarios. serve -h lists the flags of
// BENCH_FAKE_PICTOR_FLAGS; serve logs its arguments, announces itself
// (its origin on the same address), and renders: a URL is fetched with
// the iframes it holds, as Chromium would, and every image is the card's
// PNG. Automatic OG images work as fakeOG says.
func TestFakePictorServe(t *testing.T) {
	flags, ok := os.LookupEnv("BENCH_FAKE_PICTOR_FLAGS")
	if !ok {
		return
	}
	args := flag.Args()
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprintf(os.Stderr, "fake pictor: want serve, got %q\n", args)
		os.Exit(2)
	}
	if slices.Contains(args, "-h") {
		fmt.Fprintln(os.Stderr, "Usage of serve:")
		for _, f := range strings.Fields(flags) {
			fmt.Fprintf(os.Stderr, "  -%s\n    \tflag %s\n", f, f)
		}
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "fake pictor: %s\n", strings.Join(args, " "))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	base := "http://" + ln.Addr().String()
	iframe := regexp.MustCompile(`<iframe src="([^"]+)"`)
	fetch := func(u string) (string, error) {
		resp, err := http.Get(u)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s", u, resp.Status)
		}
		return string(b), err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/image", func(w http.ResponseWriter, r *http.Request) {
		var body struct{ URL string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if body.URL != "" {
			page, err := fetch(body.URL)
			for _, m := range iframe.FindAllStringSubmatch(page, -1) {
				if err == nil {
					_, err = fetch(html.UnescapeString(m[1]))
				}
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
		}
		fmt.Fprintf(w, `{"id":"img1","url":"%s/v1/image/img1"}`, base)
	})
	mux.HandleFunc("GET /v1/image/img1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(append(benchtest.PNGHead(2*card.Width, 2*card.Height), make([]byte, 1000)...))
	})
	og := fakeOG{seen: map[string]bool{}}
	mux.HandleFunc("POST /v1/og-configs", og.create)
	mux.HandleFunc("GET /v1/og/{domain}/{path...}", og.image)
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %d\n", metricL1Bytes, 1<<20)
		og.metrics(w)
	})
	srv := &http.Server{Handler: mux}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Printf("  api_id:  id\n  api_key: key\n\nPictor is listening on %s (origin API on %s)\nBase URL: %s\n", base, base, base)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestRenderIsolationServers runs the scenario on fake binaries: a
// server per configuration the binary's flags allow, with those flags,
// and the checks that then apply.
func TestRenderIsolationServers(t *testing.T) {
	benchtest.RequireLoopbackAliases(t)
	tests := []struct {
		name  string
		flags []string
		// servers are the flags each server got, after the common ones.
		servers map[string]string
		checks  int
		note    string // a part of card-default's note
	}{
		{
			name:  "as Pictor ships",
			flags: []string{"allow-private-urls", "render-tabs", "chromium-no-sandbox", "chromium-site-isolation"},
			servers: map[string]string{
				isolationDefault: "", isolationIsolated: " --chromium-site-isolation", isolationUnsandboxed: " --chromium-no-sandbox",
			},
			checks: 3,
		},
		{
			name:    "no site isolation flag",
			flags:   []string{"allow-private-urls", "render-tabs", "chromium-no-sandbox"},
			servers: map[string]string{isolationDefault: "", isolationUnsandboxed: " --chromium-no-sandbox"},
			checks:  2,
			note:    "serve has no --chromium-site-isolation: no isolated server, site isolation's cost is not measured",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Pictor, cfg.OutDir = fakePictor(t, tt.flags...), t.TempDir()
			cfg.Duration, cfg.Rounds, cfg.Warmup, cfg.PoolSize = 600*time.Millisecond, 2, 1, 1
			results, err := runRenderIsolation(context.Background(), &Env{Config: &cfg})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, page := range []string{isolationCard, isolationEmbed} {
				for _, config := range []string{isolationDefault, isolationIsolated, isolationUnsandboxed} {
					if _, ok := tt.servers[config]; ok {
						names = append(names, isolationResult(page, config))
					}
				}
			}
			var got []string
			for _, r := range results {
				got = append(got, r.Name)
				if r.Errors > 0 || r.Requests == 0 || r.CPU <= 0 || len(r.Memory) == 0 {
					t.Errorf("%s: %d requests, %d errors (%s), CPU %v, %d memory samples", r.Name, r.Requests, r.Errors, r.FirstError, r.CPU, len(r.Memory))
				}
				if strings.HasPrefix(r.Name, "render-isolation/embed-") && !strings.Contains(r.Note, "(3.00 per card, 3 expected)") {
					t.Errorf("%s: note %q, want three posts per card", r.Name, r.Note)
				}
			}
			slices.Sort(names)
			slices.Sort(got)
			if !slices.Equal(got, names) {
				t.Fatalf("results %v, want %v", got, names)
			}
			for config, flags := range tt.servers {
				log, err := os.ReadFile(filepath.Join(cfg.OutDir, "render-isolation-"+config+".log"))
				if err != nil {
					t.Fatal(err)
				}
				if want := "--allow-private-urls --render-tabs 1" + flags + "\n"; !strings.Contains(string(log), want) {
					t.Errorf("%s server's log %q, want its flags ending %q", config, log, want)
				}
			}
			byName := map[string]*load.Result{}
			for _, r := range results {
				byName[r.Name] = r
			}
			cardDefault := byName[isolationResult(isolationCard, isolationDefault)]
			if !strings.Contains(cardDefault.Note, "the sandbox's cost, default ÷ unsandboxed: p50 ") || !strings.Contains(cardDefault.Note, tt.note) {
				t.Errorf("card-default's note %q lacks the sandbox's cost or %q", cardDefault.Note, tt.note)
			}
			if iso := byName[isolationResult(isolationEmbed, isolationIsolated)]; iso != nil && !strings.Contains(iso.Note, "site isolation's cost, isolated ÷ default: p50 ") {
				t.Errorf("embed-isolated's note %q lacks site isolation's cost", iso.Note)
			}
			var checks []string
			for _, c := range Evaluate(Checks(), results) {
				if strings.HasPrefix(c.Name, "render-isolation") {
					checks = append(checks, c.Name+": "+c.Measured)
				}
			}
			t.Logf("checks:\n%s", strings.Join(checks, "\n"))
			if len(checks) != tt.checks {
				t.Errorf("checks:\n%s\nwant %d", strings.Join(checks, "\n"), tt.checks)
			}
		})
	}
}

// fakeOG is the fake serve's automatic OG images, for one configuration
// whose domain id is dom1: the first request of a page (per platform)
// reads it with the origin's User-Agent, checks its head has a title and
// og:title, loads it once more as the render would and counts both, and
// the whole answer, in the origin's histograms; every request answers a
// PNG of the platform's size (1200×600 for Twitterbot, else 1200×630)
// whose bytes follow the path, and is counted by the edge's OG counters.
type fakeOG struct {
	mu   sync.Mutex
	base string
	seen map[string]bool
	// counts and sums of seconds: page reads, renders, fits, answers; hits, misses
	reads, renders, fits, answers         int
	readSec, renderSec, fitSec, answerSec float64
	fresh, misses                         int
}

func (f *fakeOG) create(w http.ResponseWriter, r *http.Request) {
	if id, key, ok := r.BasicAuth(); !ok || id != "id" || key != "key" {
		http.Error(w, "credentials", http.StatusUnauthorized)
		return
	}
	var body struct {
		ConfigType string `json:"config_type"`
		BaseURL    string `json:"base_url"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.ConfigType != "html_css" || body.BaseURL == "" {
		http.Error(w, fmt.Sprintf("want an html_css configuration with a base_url (%v)", err), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.base = body.BaseURL
	f.mu.Unlock()
	fmt.Fprint(w, `{"id":"ogc1","domain_id":"dom1","config_type":"html_css"}`)
}

func (f *fakeOG) image(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	base := f.base
	f.mu.Unlock()
	if r.PathValue("domain") != "dom1" || base == "" {
		http.Error(w, "no such configuration", http.StatusNotFound)
		return
	}
	path := "/" + r.PathValue("path")
	width, height := 1200, 630
	if strings.HasPrefix(r.UserAgent(), "Twitterbot/") {
		height = 600
	}
	key := fmt.Sprint(height, path)
	f.mu.Lock()
	seen := f.seen[key]
	f.mu.Unlock()
	if !seen {
		answer := time.Now()
		get := func(ua string) (string, error) {
			req, err := http.NewRequest(http.MethodGet, base+path, nil)
			if err != nil {
				return "", err
			}
			req.Header.Set("User-Agent", ua)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("GET %s: %s", path, resp.Status)
			}
			return string(b), err
		}
		start := time.Now()
		page, err := get("Mozilla/5.0 (compatible; PictorOG/1.0)")
		read := time.Since(start)
		if err == nil && (!strings.Contains(page, "<title>") || !strings.Contains(page, `property="og:title"`)) {
			err = fmt.Errorf("page %s has no title or og:title", path)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		start = time.Now()
		if _, err := get("Mozilla/5.0 HeadlessChrome"); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		// The fake's capture: at least 2 ms of CPU after the page load, as a
		// render spends it (worked, not slept: the time is the render's).
		for time.Since(start) < 2*time.Millisecond {
			crc32.ChecksumIEEE([]byte(path))
		}
		render := time.Since(start)
		f.mu.Lock()
		f.seen[key] = true
		f.reads, f.readSec = f.reads+1, f.readSec+read.Seconds()
		f.renders, f.renderSec = f.renders+1, f.renderSec+render.Seconds()
		f.fits, f.fitSec = f.fits+1, f.fitSec+0.0001
		f.answers, f.answerSec = f.answers+1, f.answerSec+time.Since(answer).Seconds()
		f.misses++
		f.mu.Unlock()
	} else {
		f.mu.Lock()
		f.fresh++
		f.mu.Unlock()
	}
	body := append(benchtest.PNGHead(uint32(width), uint32(height)), bytes.Repeat([]byte(path), 2000/len(path))...)
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.Write(body)
}

// metrics writes the edge's OG counters and the origin's histograms.
func (f *fakeOG) metrics(w io.Writer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintf(w, "%s %d\n%s 0\n%s %d\n", metricOGFresh, f.fresh, metricOGStale, metricOGMisses, f.misses)
	for _, h := range []struct {
		name string
		n    int
		sec  float64
	}{
		{"pictor_edge_transform_duration_seconds", f.fits, f.fitSec},
		{"pictor_ogpage_fetch_duration_seconds", f.reads, f.readSec},
		{"pictor_render_duration_seconds", f.renders, f.renderSec},
		{"pictor_render_queue_wait_seconds", f.renders, 0.00005 * float64(f.renders)},
	} {
		fmt.Fprintf(w, "%s_sum %g\n%s_count %d\n", h.name, h.sec, h.name, h.n)
	}
	if f.answers > 0 { // as the origin's labelled series, from the first
		fmt.Fprintf(w, "%s %g\n%s %d\n", metricOGAnswerSum, f.answerSec, metricOGAnswerCount, f.answers)
	}
}
