package bench

import (
	"context"
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
			name: "hot image slower, zipf above half, resize too slow",
			results: []*load.Result{
				benchtest.Result("hot-image/pictor", 32, 990, 0, time.Second, ms, 4*ms),
				benchtest.Result("hot-image/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
				benchtest.Result("zipf-10k/pictor", 32, 600, 0, time.Second, ms, 2*ms),
				benchtest.Result("zipf-10k/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
				benchtest.Result("resize/pictor", 1, 10, 0, time.Second, 160*ms, 160*ms),
				benchtest.Result("resize/vipsthumbnail", 1, 10, 0, time.Second, 100*ms, 100*ms),
			},
			want: []report.CheckResult{
				{Name: "hot-image/pictor throughput ≥ 1× nginx",
					Measured: "0.99× (990 requests/s ÷ 1000 requests/s of hot-image/nginx)", Pass: false},
				{Name: "hot-image/pictor p99 ≤ 1× hot-image/nginx's", Measured: "2.00× (p99 3.97 ms ÷ 1.99 ms)", Pass: false},
				{Name: "zipf-10k/pictor throughput ≥ 0.5× nginx",
					Measured: "0.60× (600 requests/s ÷ 1000 requests/s of zipf-10k/nginx)", Pass: true},
				{Name: "resize/pictor p50 ≤ 1.5× resize/vipsthumbnail's", Measured: "1.60× (p50 160 ms ÷ 100 ms)", Pass: false},
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
	seen := map[[2]int]bool{}
	for i := range zipfImages {
		m, w := zipfKey(i)
		if m < 0 || m >= zipfMasters || w < zipfMinWidth || w >= zipfMinWidth+zipfWidths || w > zipfTileW || seen[[2]int{m, w}] {
			t.Fatalf("key %d: master %d width %d out of range or repeated", i, m, w)
		}
		seen[[2]int{m, w}] = true
	}
	if len(seen) != 10000 {
		t.Fatalf("%d distinct images, want 10,000", len(seen))
	}
}

func TestEdgeCountersString(t *testing.T) {
	c := edgeCounters{L1: 80, L2: 15, Misses: 5, Transforms: 4, TransformSeconds: 0.2}
	if got, want := c.String(), "edge cache: L1 hits 80 (80.0%), L2 hits 15 (15.0%), misses 5 (5.0%); transforms 4, 50.0 ms each on average"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
