package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/internal/benchtest"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/report"
)

func TestZipf(t *testing.T) {
	z, err := NewZipf(10000, 1.1)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("probabilities", func(t *testing.T) {
		sum := 0.0
		for k := range z.N() {
			sum += z.P(k)
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Fatalf("probabilities sum to %v", sum)
		}
		for _, k := range []int{1, 9, 99, 9999} {
			want := math.Pow(float64(k+1), 1.1) // P(0)/P(k)
			if got := z.P(0) / z.P(k); math.Abs(got/want-1) > 1e-9 {
				t.Errorf("P(0)/P(%d) = %v, want %v", k, got, want)
			}
		}
	})
	t.Run("rank boundaries", func(t *testing.T) {
		tests := []struct {
			name string
			u    float64
			want int
		}{
			{"zero", 0, 0},
			{"just below rank 1", z.cdf[0] - 1e-12, 0},
			{"rank 1 starts at cdf[0]", z.cdf[0], 1},
			{"last", math.Nextafter(1, 0), z.N() - 1},
		}
		for _, tt := range tests {
			if got := z.Rank(tt.u); got != tt.want {
				t.Errorf("%s: Rank(%v) = %d, want %d", tt.name, tt.u, got, tt.want)
			}
		}
	})
	t.Run("draws follow the distribution", func(t *testing.T) {
		// Fixed seeds: the outcome is the same every run. Buckets of ranks
		// [0], [1], [2,4), [4,16), [16,256), [256,4096), [4096,10000).
		edges := []int{0, 1, 2, 4, 16, 256, 4096, 10000}
		const draws = 400000
		counts := make([]int, len(edges)-1)
		for c := range 4 {
			r := zipfRand(c)
			for range draws / 4 {
				k := z.Draw(r)
				for b := range counts {
					if k < edges[b+1] {
						counts[b]++
						break
					}
				}
			}
		}
		chi2 := 0.0
		for b, n := range counts {
			p := z.cdf[edges[b+1]-1]
			if edges[b] > 0 {
				p -= z.cdf[edges[b]-1]
			}
			exp := p * draws
			chi2 += (float64(n) - exp) * (float64(n) - exp) / exp
			if math.Abs(float64(n)-exp) > 5*math.Sqrt(exp) {
				t.Errorf("ranks [%d,%d): %d draws, expected %.0f", edges[b], edges[b+1], n, exp)
			}
		}
		// 6 degrees of freedom: 22.5 is the 0.1% critical value.
		if chi2 > 22.5 {
			t.Errorf("chi-square %.1f over %v", chi2, counts)
		}
	})
	t.Run("same seeds, same sequence", func(t *testing.T) {
		a, b := zipfRand(3), zipfRand(3)
		for i := range 1000 {
			if x, y := z.Draw(a), z.Draw(b); x != y {
				t.Fatalf("draw %d: %d != %d", i, x, y)
			}
		}
	})
	t.Run("bad parameters", func(t *testing.T) {
		for _, p := range []struct {
			n int
			s float64
		}{{0, 1.1}, {10, 0}, {10, math.NaN()}} {
			if _, err := NewZipf(p.n, p.s); err == nil {
				t.Errorf("NewZipf(%d, %v) accepted", p.n, p.s)
			}
		}
	})
}

func TestComparisonTable(t *testing.T) {
	ms := time.Millisecond
	results := []*load.Result{
		benchtest.Result("hot-image/pictor", 32, 900, 0, time.Second, ms, 3*ms),
		benchtest.Result("hot-image/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
		benchtest.Result("resize/pictor", 1, 10, 0, time.Second, 90*ms, 90*ms),
		// zipf-10k/nginx missing: no row for zipf.
		benchtest.Result("zipf-10k/pictor", 32, 10, 0, time.Second, ms, ms),
		benchtest.Result("resize/vipsthumbnail", 1, 5, 0, time.Second, 200*ms, 200*ms),
	}
	got := report.ComparisonTable(Comparisons(), results)
	want := "| Pictor run | baseline | req/s ratio | p50 ratio | p95 ratio | p99 ratio |\n" +
		"|---|---|---:|---:|---:|---:|\n" +
		"| hot-image/pictor | hot-image/nginx | 0.90× | 1.33× | 1.48× | 1.50× |\n" +
		"| resize/pictor | resize/vipsthumbnail | 2.00× | 0.45× | 0.45× | 0.45× |\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if report.ComparisonTable(Comparisons(), results[:1]) != "" {
		t.Fatal("a table without a complete pair")
	}
}

func TestEdgeChecks(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		results []*load.Result
		want    []report.CheckResult
	}{
		{
			name: "hot image as fast as nginx",
			results: []*load.Result{
				benchtest.Result("hot-image/pictor", 32, 1000, 0, time.Second, ms, 2*ms),
				benchtest.Result("hot-image/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
			},
			want: []report.CheckResult{
				{Name: "hot-image/pictor throughput ≥ 1× nginx",
					Measured: "1.00× (1000 requests/s ÷ 1000 requests/s of hot-image/nginx)", Pass: true},
				{Name: "hot-image/pictor p99 ≤ 1× hot-image/nginx's", Measured: "1.00× (p99 1.99 ms ÷ 1.99 ms)", Pass: true},
			},
		},
		{
			name: "hot image slower, zipf below 0.9 with its p99 within 1.25, resize too slow",
			results: []*load.Result{
				benchtest.Result("hot-image/pictor", 32, 990, 0, time.Second, ms, 4*ms),
				benchtest.Result("hot-image/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
				benchtest.Result("zipf-10k/pictor", 32, 890, 0, time.Second, ms, 2*ms),
				benchtest.Result("zipf-10k/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
				benchtest.Result("resize/pictor", 1, 10, 0, time.Second, 160*ms, 160*ms),
				benchtest.Result("resize/vipsthumbnail", 1, 10, 0, time.Second, 100*ms, 100*ms),
			},
			want: []report.CheckResult{
				{Name: "hot-image/pictor throughput ≥ 1× nginx",
					Measured: "0.99× (990 requests/s ÷ 1000 requests/s of hot-image/nginx)", Pass: false},
				{Name: "hot-image/pictor p99 ≤ 1× hot-image/nginx's", Measured: "2.00× (p99 3.97 ms ÷ 1.99 ms)", Pass: false},
				{Name: "zipf-10k/pictor throughput ≥ 0.9× nginx",
					Measured: "0.89× (890 requests/s ÷ 1000 requests/s of zipf-10k/nginx)", Pass: false},
				{Name: "zipf-10k/pictor p99 ≤ 1.25× zipf-10k/nginx's", Measured: "1.00× (p99 1.99 ms ÷ 1.99 ms)", Pass: true},
				{Name: "resize/pictor p50 ≤ 1.5× resize/vipsthumbnail's", Measured: "1.60× (p50 160 ms ÷ 100 ms)", Pass: false},
			},
		},
		{
			name: "the heavy tail's p99 over 1.25, zipf-100k at 0.9",
			results: []*load.Result{
				benchtest.Result("zipf-10k-heavy/pictor", 32, 950, 0, time.Second, ms, 3*ms),
				benchtest.Result("zipf-10k-heavy/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
				benchtest.Result("zipf-100k/pictor", 32, 900, 0, time.Second, ms, 2*ms),
				benchtest.Result("zipf-100k/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
			},
			want: []report.CheckResult{
				{Name: "zipf-10k-heavy/pictor throughput ≥ 0.9× nginx",
					Measured: "0.95× (950 requests/s ÷ 1000 requests/s of zipf-10k-heavy/nginx)", Pass: true},
				{Name: "zipf-10k-heavy/pictor p99 ≤ 1.25× zipf-10k-heavy/nginx's", Measured: "1.50× (p99 2.97 ms ÷ 1.99 ms)", Pass: false},
				{Name: "zipf-100k/pictor throughput ≥ 0.9× nginx",
					Measured: "0.90× (900 requests/s ÷ 1000 requests/s of zipf-100k/nginx)", Pass: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range tt.results {
				r.Unit = "request"
			}
			got := Evaluate(Checks(), tt.results)
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("check %d:\ngot  %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestEdgeRounds: a comparison with nginx keeps every slice within 2 s,
// in an even number of rounds, whatever --rounds asks below that.
func TestEdgeRounds(t *testing.T) {
	for _, tt := range []struct {
		duration time.Duration
		rounds   int
		want     int
	}{
		{20 * time.Second, 4, 10},  // make bench's defaults: 2 s slices
		{10 * time.Second, 4, 6},   // 5 slices of 2 s, made even
		{11 * time.Second, 4, 6},   // 1.83 s slices
		{3 * time.Second, 4, 4},    // --rounds gives slices short enough
		{40 * time.Second, 20, 20}, // as asked
		{40 * time.Second, 25, 25}, // as asked, odd included
		{time.Hour, 4, 100},        // at most 100
	} {
		cfg := DefaultConfig()
		cfg.Duration, cfg.Rounds = tt.duration, tt.rounds
		if got := edgeRounds(&cfg); got != tt.want {
			t.Errorf("--duration %v --rounds %d: %d rounds, want %d", tt.duration, tt.rounds, got, tt.want)
		}
		if got := edgeRounds(&cfg); got > tt.rounds && got < 100 && tt.duration/time.Duration(got) > edgeSliceMax {
			t.Errorf("--duration %v: %d rounds leave slices over %v", tt.duration, got, edgeSliceMax)
		}
	}
}

func TestRoundRatios(t *testing.T) {
	a := &load.Result{Name: "x/pictor", Rounds: []float64{104, 91, 103, 80}}
	b := &load.Result{Name: "x/nginx", Rounds: []float64{89, 81, 85, 80}}
	if got, want := roundRatios(a, b), "round by round against x/nginx: median 1.15×, 1.00–1.21×"; got != want {
		t.Errorf("roundRatios = %q, want %q", got, want)
	}
	a.Rounds = a.Rounds[:3]
	if got, want := roundRatios(a, b), ""; got != want {
		t.Errorf("rounds of unequal counts: %q, want %q", got, want)
	}
	b.Rounds = []float64{89, 0, 85}
	if got := roundRatios(a, b); got != "" {
		t.Errorf("a round of the baseline at 0: %q, want none", got)
	}
	a.Rounds, b.Rounds = []float64{100, 90, 120}, []float64{100, 100, 100}
	if got, want := roundRatios(a, b), "round by round against x/nginx: median 1.00×, 0.90–1.20×"; got != want {
		t.Errorf("odd count: %q, want %q", got, want)
	}
}

func TestInterleave(t *testing.T) {
	var order []string
	op := func(name string) load.Op {
		return func(context.Context, int) (time.Duration, error) {
			if len(order) == 0 || order[len(order)-1] != name {
				order = append(order, name)
			}
			return time.Microsecond, nil
		}
	}
	env := &Env{}
	cpu := time.Duration(0)
	// b's watch sees each of its slices, before and after, and sets its CPU.
	var watched []string
	watch := func() func(*load.Result) {
		watched = append(watched, "before")
		return func(r *load.Result) {
			watched = append(watched, fmt.Sprintf("after %d", len(r.Rounds)))
			r.CPU = 2 * time.Second
		}
	}
	rs, err := interleave(context.Background(), env, "request", 1, 3, 300*time.Millisecond, []contender{
		{name: "x/a", op: op("a"), cpu: func() time.Duration { cpu += time.Second; return cpu }},
		{name: "x/b", op: op("b"), watch: watch},
	})
	if err != nil {
		t.Fatal(err)
	}
	// a b, b a, a b with back-to-back runs of one contender joined.
	if got := strings.Join(order, ""); got != "abab" {
		t.Fatalf("slices ran in order %s, want abab (ABBA: a b, b a, a b)", got)
	}
	if len(rs) != 2 || rs[0].Name != "x/a" || rs[1].Name != "x/b" {
		t.Fatalf("results %+v", rs)
	}
	for _, r := range rs {
		if r.Latency.Count() != r.Requests || r.Requests == 0 || r.Elapsed < 300*time.Millisecond {
			t.Errorf("%s: %d requests, %d latencies over %v", r.Name, r.Requests, r.Latency.Count(), r.Elapsed)
		}
		_, rounds, _ := strings.Cut(r.Note, "requests/s per round: ")
		rounds, _, _ = strings.Cut(rounds, ";")
		if len(strings.Split(rounds, ", ")) != 3 {
			t.Errorf("%s: note %q lacks the rate of each of 3 rounds", r.Name, r.Note)
		}
		_, p99s, _ := strings.Cut(r.Note, "p99 per round: ")
		p99s, _, _ = strings.Cut(p99s, ";")
		if got := strings.Split(p99s, ", "); len(got) != 3 || slices.ContainsFunc(got, func(p string) bool {
			return !strings.HasSuffix(p, " ms") || strings.HasPrefix(p, "0.000 ")
		}) {
			t.Errorf("%s: note %q lacks the p99 of each of 3 rounds", r.Name, r.Note)
		}
		if len(r.Rounds) != 3 || slices.Contains(r.Rounds, 0) {
			t.Errorf("%s: Rounds %v, want 3 rates", r.Name, r.Rounds)
		}
	}
	if rs[0].CPU != 3*time.Second || rs[1].CPU != 6*time.Second {
		t.Errorf("CPU %v and %v, want 3s (1s per slice) and 6s (2s per slice, set by watch)", rs[0].CPU, rs[1].CPU)
	}
	if got := strings.Join(watched, ","); got != "before,after 0,before,after 0,before,after 0" {
		t.Errorf("watch saw %s, want each of 3 slices before and after, unmerged", got)
	}
}

func TestResultMerge(t *testing.T) {
	ms := time.Millisecond
	a := benchtest.Result("x", 2, 10, 1, time.Second, ms, 10*ms)
	a.CPU, a.Note = time.Second, "first"
	b := benchtest.Result("x", 2, 30, 2, 3*time.Second, ms, 10*ms)
	b.CPU, b.FirstError, b.Note = 2*time.Second, "other", ""
	merge(a, b)
	if a.Requests != 43 || a.Errors != 3 || a.Elapsed != 4*time.Second || a.CPU != 3*time.Second ||
		a.Latency.Count() != 40 || a.Note != "first" || a.FirstError == "other" {
		t.Fatalf("merged %+v", a)
	}
	if r := a.Rate(); r != 10 {
		t.Fatalf("rate %v, want 40 successes / 4 s", r)
	}
}

func TestResizeJobs(t *testing.T) {
	jobs := resizeJobs(4, 600, 300)
	if len(jobs) != 1200 {
		t.Fatalf("%d jobs", len(jobs))
	}
	seen := map[resizeJob]bool{}
	for _, j := range jobs {
		if seen[j] || j.m < 0 || j.m >= 4 || j.w < 600 || j.w > 899 {
			t.Fatalf("job %+v repeated or out of range", j)
		}
		seen[j] = true
	}
	if jobs[0] != (resizeJob{0, 600}) || jobs[1] != (resizeJob{1, 600}) || jobs[4] != (resizeJob{0, 601}) {
		t.Fatalf("jobs start %v: want the masters in turn, widths ascending", jobs[:5])
	}
}

func TestZipfKeys(t *testing.T) {
	tests := []struct {
		name               string
		spec               *zipfSpec
		images             int
		minWidth, maxWidth int
	}{
		{"zipf-10k", &zipf10k, 10000, 300, 399},
		{"zipf-10k-heavy", &zipf10kHeavy, 10000, 600, 1194},
		{"zipf-100k", &zipf100k, 100000, 150, 399},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z := tt.spec
			if z.images() != tt.images || z.minWidth != tt.minWidth || z.maxWidth() != tt.maxWidth {
				t.Fatalf("%d images of %d–%d px, want %d of %d–%d", z.images(), z.minWidth, z.maxWidth(), tt.images, tt.minWidth, tt.maxWidth)
			}
			seen := map[[2]int]bool{}
			widths := map[int]bool{}
			for i := range z.images() {
				m, w := z.key(i)
				if m < 0 || m >= z.masters || w < tt.minWidth || w > tt.maxWidth || w > z.tileW || seen[[2]int{m, w}] {
					t.Fatalf("key %d: master %d width %d out of range or repeated", i, m, w)
				}
				seen[[2]int{m, w}] = true
				widths[w] = true
			}
			if len(seen) != tt.images || len(widths) != z.widths {
				t.Fatalf("%d distinct images of %d widths, want %d of %d", len(seen), len(widths), tt.images, z.widths)
			}
		})
	}
}

func TestZipfSpecCheck(t *testing.T) {
	heavy := zipf10kHeavy
	big := zipf100k
	sizes := func(ns ...int) *zipfSizes {
		var s zipfSizes
		for _, n := range ns {
			s.add(n)
		}
		return &s
	}
	tests := []struct {
		name    string
		spec    *zipfSpec
		sizes   *zipfSizes
		images  int
		wantErr string
	}{
		{"heavy, 119 KB on average", &heavy, sizes(10000 * 119 << 10), 10000, ""},
		{"heavy, too light", &heavy, sizes(10000 * 40 << 10), 10000, "weigh 40960 bytes on average, want 51200 to 204800"},
		{"heavy, too heavy", &heavy, sizes(10000 * 210 << 10), 10000, "weigh 215040 bytes on average"},
		{"heavy, total at twice the L1", &heavy, sizes(2 * 16 << 20), 10, "not above 2 times the L1"},
		{"100k, 8.5 KB each", &big, sizes(100000 * 17 << 9), 100000, ""},
		{"100k, under 8 L1s", &big, sizes(8 * 64 << 20), 100000, "not above 8 times the L1"},
		{"100k, above half the L2", &big, sizes(4<<30 + 1), 100000, "above half the L2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.check(tt.sizes, tt.images)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("check = %v, want an error with %q", err, tt.wantErr)
			}
		})
	}
}

func TestZipfSizes(t *testing.T) {
	var s zipfSizes
	for _, n := range []int{5000, 900, 120000, 61000} {
		s.add(n)
	}
	if s.total.Load() != 186900 || s.smallest.Load() != 900 || s.largest.Load() != 120000 {
		t.Fatalf("total %d, smallest %d, largest %d", s.total.Load(), s.smallest.Load(), s.largest.Load())
	}
	if got, want := zipf10kHeavy.note(&s, 4), "4 images, 0.2 MiB in all (45.6 KiB on average, 0.9 to 117.2 KiB), L1 16 MiB"; got != want {
		t.Errorf("note %q, want %q", got, want)
	}
}

func TestZipfScenarios(t *testing.T) {
	tests := []struct {
		name  string
		flags string
		about []string
	}{
		{"zipf-10k", "--cache-mem 16777216", []string{"10000 distinct JPEGs (100 Chromium renders of a 600×315 tile", "widths 300–399 px"}},
		{"zipf-10k-heavy", "--cache-mem 16777216",
			[]string{"10000 distinct JPEGs (100 Chromium renders of a 1200×630 social card", "widths 600–1194 px",
				"entry), 50–200 KB on average (checked during the fill), drawn by Zipf"}},
		{"zipf-100k", "--cache-mem 67108864 --cache-disk 8589934592",
			[]string{"100000 distinct JPEGs (400 Chromium renders of a 600×315 tile", "250 GET-time widths 150–399 px", "L1 is 64 MiB (serve --cache-mem), far below their total, and whose L2 of 8 GiB (--cache-disk) holds them all, after"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(Scenarios(), []string{tt.name})
			if err != nil {
				t.Fatal(err)
			}
			s := got[0]
			if s.Name != tt.name || !s.NeedsPictor || !s.OwnServer || s.Run == nil || strings.Join(s.ServeFlags, " ") != tt.flags {
				t.Fatalf("scenario %s: pictor %v, own server %v, flags %q, want %q", s.Name, s.NeedsPictor, s.OwnServer, s.ServeFlags, tt.flags)
			}
			for _, a := range tt.about {
				if !strings.Contains(s.About, a) {
					t.Errorf("About %q lacks %q", s.About, a)
				}
			}
		})
	}
	names := map[string]bool{}
	for _, s := range Scenarios() {
		if names[s.Name] {
			t.Errorf("two scenarios named %s", s.Name)
		}
		names[s.Name] = true
	}
}

func TestZipfComparisonsAndChecks(t *testing.T) {
	ms := time.Millisecond
	results := []*load.Result{
		benchtest.Result("zipf-10k-heavy/pictor", 32, 400, 0, time.Second, ms, 4*ms),
		benchtest.Result("zipf-10k-heavy/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
		benchtest.Result("zipf-100k/pictor", 32, 800, 0, time.Second, ms, 2*ms),
		benchtest.Result("zipf-100k/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
	}
	for _, r := range results {
		r.Unit = "request"
	}
	table := report.ComparisonTable(Comparisons(), results)
	for _, row := range []string{
		"| zipf-10k-heavy/pictor | zipf-10k-heavy/nginx | 0.40× | 1.66× | 1.97× | 2.00× |\n",
		"| zipf-100k/pictor | zipf-100k/nginx | 0.80× | 1.00× | 1.00× | 1.00× |\n",
	} {
		if !strings.Contains(table, row) {
			t.Errorf("table lacks row %q:\n%s", row, table)
		}
	}
	got := Evaluate(Checks(), results)
	want := []report.CheckResult{
		{Name: "zipf-10k-heavy/pictor throughput ≥ 0.9× nginx",
			Measured: "0.40× (400 requests/s ÷ 1000 requests/s of zipf-10k-heavy/nginx)", Pass: false},
		{Name: "zipf-10k-heavy/pictor p99 ≤ 1.25× zipf-10k-heavy/nginx's", Measured: "2.00× (p99 3.97 ms ÷ 1.99 ms)", Pass: false},
		{Name: "zipf-100k/pictor throughput ≥ 0.9× nginx",
			Measured: "0.80× (800 requests/s ÷ 1000 requests/s of zipf-100k/nginx)", Pass: false},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("checks\n%+v\nwant\n%+v", got, want)
	}
}

func TestServerShares(t *testing.T) {
	flags := []string{"--cache-mem", "16777216"}
	tests := []struct {
		name     string
		running  bool
		started  []string
		startOwn bool
		flags    []string
		own      bool
		want     bool
	}{
		{"nothing started", false, nil, false, nil, false, false},
		{"same flags", true, flags, false, flags, false, true},
		{"other flags", true, flags, false, []string{"--cache-mem", "1"}, false, false},
		{"wants its own", true, flags, false, flags, true, false},
		{"after one's own", true, flags, true, flags, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &server{flags: tt.started, own: tt.startOwn}
			if tt.running {
				s.startErr = errors.New("failed start") // started, not running: shared the same way
			}
			if got := s.shares(tt.flags, tt.own); got != tt.want {
				t.Fatalf("shares = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEdgeCountersString(t *testing.T) {
	c := edgeCounters{L1: 80, L2: 15, Misses: 5, Transforms: 4, TransformSeconds: 0.2}
	if got, want := c.String(), "edge cache: L1 hits 80 (80.0%), L2 hits 15 (15.0%), misses 5 (5.0%); transforms 4, 50.0 ms each on average"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
