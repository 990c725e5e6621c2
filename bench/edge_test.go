package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"
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

func TestNginxConfigText(t *testing.T) {
	conf := NginxConfig{Dir: "/tmp/b/nginx", Root: "/tmp/b/www", Addr: "127.0.0.1:4321"}.Text()
	for _, want := range []string{
		"worker_processes auto;",
		"pid /tmp/b/nginx/nginx.pid;",
		"error_log /tmp/b/nginx/error.log warn;",
		"access_log off;",
		"sendfile on;",
		"keepalive_timeout 75s;",
		"keepalive_requests 1000000;", // one connection per client for the whole run, as on the edge
		"client_body_temp_path /tmp/b/nginx/client_body;",
		"image/jpeg jpg;",
		"image/webp webp;",
		"listen 127.0.0.1:4321;",
		"root /tmp/b/www;",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "daemon") {
		t.Error("daemon off comes from -g; in the file too nginx refuses to start")
	}
	if strings.Count(conf, "{") != strings.Count(conf, "}") {
		t.Errorf("unbalanced braces:\n%s", conf)
	}
	for i, line := range strings.Split(conf, "\n") {
		l := strings.TrimSpace(line)
		if l != "" && !strings.HasPrefix(l, "#") && !strings.HasSuffix(l, ";") && !strings.HasSuffix(l, "{") && l != "}" {
			t.Errorf("line %d %q does not end a directive", i+1, l)
		}
	}
}

func TestComparisonTable(t *testing.T) {
	ms := time.Millisecond
	results := []*Result{
		result("hot-image/pictor", 32, 900, 0, time.Second, ms, 3*ms),
		result("hot-image/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
		result("resize/pictor", 1, 10, 0, time.Second, 90*ms, 90*ms),
		// zipf-10k/nginx missing: no row for zipf.
		result("zipf-10k/pictor", 32, 10, 0, time.Second, ms, ms),
		result("resize/vipsthumbnail", 1, 5, 0, time.Second, 200*ms, 200*ms),
	}
	got := ComparisonTable(Comparisons(), results)
	want := "| Pictor run | baseline | req/s ratio | p50 ratio | p95 ratio | p99 ratio |\n" +
		"|---|---|---:|---:|---:|---:|\n" +
		"| hot-image/pictor | hot-image/nginx | 0.90× | 1.33× | 1.48× | 1.50× |\n" +
		"| resize/pictor | resize/vipsthumbnail | 2.00× | 0.45× | 0.45× | 0.45× |\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if ComparisonTable(Comparisons(), results[:1]) != "" {
		t.Fatal("a table without a complete pair")
	}
}

func TestEdgeChecks(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		results []*Result
		want    []CheckResult
	}{
		{
			name: "hot image as fast as nginx",
			results: []*Result{
				result("hot-image/pictor", 32, 1000, 0, time.Second, ms, 2*ms),
				result("hot-image/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
			},
			want: []CheckResult{
				{Name: "hot-image/pictor throughput ≥ 1× nginx",
					Measured: "1.00× (1000 requests/s ÷ 1000 requests/s of hot-image/nginx)", Pass: true},
				{Name: "hot-image/pictor p99 ≤ 1× hot-image/nginx's", Measured: "1.00× (p99 1.99 ms ÷ 1.99 ms)", Pass: true},
			},
		},
		{
			name: "hot image slower, zipf above half, resize too slow",
			results: []*Result{
				result("hot-image/pictor", 32, 990, 0, time.Second, ms, 4*ms),
				result("hot-image/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
				result("zipf-10k/pictor", 32, 600, 0, time.Second, ms, 2*ms),
				result("zipf-10k/nginx", 32, 1000, 0, time.Second, ms, 2*ms),
				result("resize/pictor", 1, 10, 0, time.Second, 160*ms, 160*ms),
				result("resize/vipsthumbnail", 1, 10, 0, time.Second, 100*ms, 100*ms),
			},
			want: []CheckResult{
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
	op := func(name string) Op {
		return func(context.Context, int) (time.Duration, error) {
			if len(order) == 0 || order[len(order)-1] != name {
				order = append(order, name)
			}
			return time.Microsecond, nil
		}
	}
	env := &Env{}
	cpu := time.Duration(0)
	rs, err := interleave(context.Background(), env, "request", 1, 3, 300*time.Millisecond, []contender{
		{name: "x/a", op: op("a"), cpu: func() time.Duration { cpu += time.Second; return cpu }},
		{name: "x/b", op: op("b")},
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
	}
	if rs[0].CPU != 3*time.Second || rs[1].CPU != 0 {
		t.Errorf("CPU %v and %v, want 3s (1s per slice) and 0", rs[0].CPU, rs[1].CPU)
	}
}

func TestResultMerge(t *testing.T) {
	ms := time.Millisecond
	a := result("x", 2, 10, 1, time.Second, ms, 10*ms)
	a.CPU, a.Note = time.Second, "first"
	b := result("x", 2, 30, 2, 3*time.Second, ms, 10*ms)
	b.CPU, b.FirstError, b.Note = 2*time.Second, "other", ""
	a.merge(b)
	if a.Requests != 43 || a.Errors != 3 || a.Elapsed != 4*time.Second || a.CPU != 3*time.Second ||
		a.Latency.Count() != 40 || a.Note != "first" || a.FirstError == "other" {
		t.Fatalf("merged %+v", a)
	}
	if r := a.Rate(); r != 10 {
		t.Fatalf("rate %v, want 40 successes / 4 s", r)
	}
}

func TestWebPSize(t *testing.T) {
	riff := func(chunk string, payload []byte) []byte {
		b := append([]byte("RIFF\x00\x00\x00\x00WEBP"), chunk...)
		b = append(b, 0, 0, 0, 0) // chunk size
		b = append(b, payload...)
		return append(b, make([]byte, 32)...)
	}
	vp8 := []byte{0, 0, 0, 0x9d, 0x01, 0x2a}
	vp8 = binary.LittleEndian.AppendUint16(vp8, 600)
	vp8 = binary.LittleEndian.AppendUint16(vp8, 315|2<<14) // scale bits are not the size
	vp8l := binary.LittleEndian.AppendUint32([]byte{0x2f}, uint32(641-1)|uint32(336-1)<<14)
	vp8x := []byte{0, 0, 0, 0, 0x57, 0x02, 0, 0x3a, 0x01, 0} // 600-1 = 0x257, 315-1 = 0x13a
	tests := []struct {
		name    string
		b       []byte
		w, h    int
		wantErr string
	}{
		{"lossy", riff("VP8 ", vp8), 600, 315, ""},
		{"lossless", riff("VP8L", vp8l), 641, 336, ""},
		{"extended", riff("VP8X", vp8x), 600, 315, ""},
		{"PNG", pngHead(600, 315), 0, 0, "not a WebP"},
		{"VP8 without start code", riff("VP8 ", make([]byte, 10)), 0, 0, "start code"},
		{"unknown chunk", riff("ALPH", nil), 0, 0, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, h, err := webpSize(tt.b)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || w != tt.w || h != tt.h {
				t.Fatalf("got %d×%d, %v; want %d×%d", w, h, err, tt.w, tt.h)
			}
		})
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

func TestParseCounters(t *testing.T) {
	text := `# HELP pictor_edge_hits_l1_total Image requests answered from memory.
# TYPE pictor_edge_hits_l1_total counter
pictor_edge_hits_l1_total 12345
pictor_edge_hits_l2_total 6.5e+06
pictor_edge_forwarded_total{code="200"} 3
pictor_edge_misses_total 0
`
	tests := []struct {
		name    string
		names   []string
		want    map[string]float64
		wantErr string
	}{
		{"present", []string{metricHitsL1, metricHitsL2, metricMisses},
			map[string]float64{metricHitsL1: 12345, metricHitsL2: 6.5e6, metricMisses: 0}, ""},
		{"missing", []string{metricHitsL1, metricTransformCount}, nil, "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCounters(bufio.NewScanner(strings.NewReader(text)), tt.names...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("got %v, %v", got, err)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
		})
	}
	c := edgeCounters{L1: 80, L2: 15, Misses: 5, Transforms: 4, TransformSeconds: 0.2}
	if got, want := c.String(), "edge cache: L1 hits 80 (80.0%), L2 hits 15 (15.0%), misses 5 (5.0%); transforms 4, 50.0 ms each on average"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestReportNotesAndComparisons(t *testing.T) {
	ms := time.Millisecond
	p := result("hot-image/pictor", 32, 900, 0, time.Second, ms, 3*ms)
	p.Note = "edge cache: L1 hits 900"
	n := result("hot-image/nginx", 32, 1000, 0, time.Second, ms, 2*ms)
	md := (&Report{Results: []*Result{p, n}}).Markdown()
	for _, want := range []string{
		"| hot-image/pictor | hot-image/nginx | 0.90× |",
		"## Notes\n\n- hot-image/pictor: edge cache: L1 hits 900\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
