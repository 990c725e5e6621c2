package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// result builds a Result whose samples are spread evenly over [lo, hi].
func result(name string, clients, ok, errs int, elapsed, lo, hi time.Duration) *Result {
	r := &Result{Name: name, Clients: clients, Unit: "render", Requests: ok + errs, Errors: errs, Elapsed: elapsed}
	for i := range ok {
		v := lo
		if ok > 1 {
			v = lo + (hi-lo)*time.Duration(i)/time.Duration(ok-1)
		}
		r.Latency.Record(v)
	}
	if errs > 0 {
		r.FirstError = "POST /v1/image: 503 Service Unavailable"
	}
	return r
}

func TestMarkdownTable(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		results []*Result
		want    string
	}{
		{
			name:    "no results",
			results: nil,
			want: "| scenario | requests | req/s | p50 | p95 | p99 | errors |\n" +
				"|---|---:|---:|---:|---:|---:|---:|\n",
		},
		{
			name: "rows",
			results: []*Result{
				result("render-card/sequential", 1, 101, 0, 10*time.Second, 50*ms, 150*ms),
				result("render-card/pool-full", 4, 300, 2, 10*time.Second, 100*ms, 100*ms),
				result("chromium-cli/parallel", 2, 0, 3, 5*time.Second, 0, 0),
			},
			want: "| scenario | requests | req/s | p50 | p95 | p99 | errors |\n" +
				"|---|---:|---:|---:|---:|---:|---:|\n" +
				"| render-card/sequential (1 client) | 101 | 10.1 | 99.9 ms | 145 ms | 149 ms | 0 |\n" +
				"| render-card/pool-full (4 clients) | 302 | 30.0 | 100 ms | 100 ms | 100 ms | 2 |\n" +
				"| chromium-cli/parallel (2 clients) | 3 | 0.00 | – | – | – | 3 |\n",
		},
		{
			name:    "pipes are escaped",
			results: []*Result{result("a|b", 1, 1, 0, time.Second, 2*ms, 2*ms)},
			want: "| scenario | requests | req/s | p50 | p95 | p99 | errors |\n" +
				"|---|---:|---:|---:|---:|---:|---:|\n" +
				"| a\\|b (1 client) | 1 | 1.00 | 2.00 ms | 2.00 ms | 2.00 ms | 0 |\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MarkdownTable(tt.results); got != tt.want {
				t.Fatalf("table:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestFormatLatency(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{"zero", 0, "0.000 ms"},
		{"microseconds", 42 * time.Microsecond, "0.042 ms"},
		{"single ms", 4210 * time.Microsecond, "4.21 ms"},
		{"tens of ms", 42100 * time.Microsecond, "42.1 ms"},
		{"hundreds of ms", 421 * time.Millisecond, "421 ms"},
		{"seconds stay in ms", 1523 * time.Millisecond, "1523 ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatLatency(tt.d); got != tt.want {
				t.Fatalf("formatLatency(%v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

func TestFormatRate(t *testing.T) {
	tests := []struct {
		name string
		r    float64
		want string
	}{
		{"zero", 0, "0.00"},
		{"slow", 0.745, "0.74"},
		{"tens", 18.26, "18.3"},
		{"thousands", 75123.4, "75123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatRate(tt.r); got != tt.want {
				t.Fatalf("formatRate(%v) = %q, want %q", tt.r, got, tt.want)
			}
		})
	}
}

func TestChecks(t *testing.T) {
	ms := time.Millisecond
	seqFast := result("render-card/sequential", 1, 100, 0, 10*time.Second, 60*ms, 120*ms)
	seqSlow := result("render-card/sequential", 1, 100, 0, 10*time.Second, 140*ms, 400*ms)
	seqNone := result("render-card/sequential", 1, 0, 5, 10*time.Second, 0, 0)
	pool := result("render-card/pool-full", 4, 200, 0, 10*time.Second, 100*ms, 200*ms) // 20/s
	cliSeq := result("chromium-cli/sequential", 1, 7, 0, 10*time.Second, time.Second, 2*time.Second)
	cliPar := result("chromium-cli/parallel", 2, 13, 0, 10*time.Second, time.Second, 2*time.Second)
	cliFast := result("chromium-cli/parallel", 2, 50, 0, 10*time.Second, time.Second, 2*time.Second)
	tests := []struct {
		name    string
		results []*Result
		want    []CheckResult
	}{
		{
			name:    "nothing ran",
			results: nil,
			want:    nil,
		},
		{
			name:    "render only: no ratio",
			results: []*Result{seqFast, pool},
			want:    []CheckResult{{Name: "render-card/sequential p50 < 150 ms", Measured: "p50 89.9 ms", Pass: true}},
		},
		{
			name:    "both pass, against the best CLI run",
			results: []*Result{seqFast, pool, cliSeq, cliPar},
			want: []CheckResult{
				{Name: "render-card/sequential p50 < 150 ms", Measured: "p50 89.9 ms", Pass: true},
				{Name: "render-card/pool-full throughput ≥ 5× chromium-cli",
					Measured: "15.4× (20.0 renders/s ÷ 1.30 renders/s of chromium-cli/parallel)", Pass: true},
			},
		},
		{
			name:    "both fail",
			results: []*Result{seqSlow, pool, cliFast},
			want: []CheckResult{
				{Name: "render-card/sequential p50 < 150 ms", Measured: "p50 269 ms", Pass: false},
				{Name: "render-card/pool-full throughput ≥ 5× chromium-cli",
					Measured: "4.0× (20.0 renders/s ÷ 5.00 renders/s of chromium-cli/parallel)", Pass: false},
			},
		},
		{
			name:    "no successful render",
			results: []*Result{seqNone},
			want:    []CheckResult{{Name: "render-card/sequential p50 < 150 ms", Measured: "no successful requests", Pass: false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(Checks(), tt.results)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d checks %+v, want %d %+v", len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("check %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestReportMarkdown(t *testing.T) {
	ms := time.Millisecond
	rep := &Report{
		Meta: Meta{
			Started:   time.Date(2026, 11, 22, 1, 40, 0, 0, time.UTC),
			Host:      "linux/amd64, 2 CPUs",
			CPUs:      2,
			LoadAvg:   3.5,
			Pictor:    "pictor dev",
			Duration:  10 * time.Second,
			PoolSize:  2,
			Scenarios: []Scenario{{Name: "render-card", About: "renders cards"}},
		},
		Results: []*Result{
			result("render-card/sequential", 1, 100, 0, 10*time.Second, 60*ms, 120*ms),
			result("render-card/pool-full", 4, 200, 1, 10*time.Second, 100*ms, 200*ms),
		},
		Failures: []string{"chromium-cli: --chromium \"nope\": not found\nsecond line"},
	}
	rep.Checks = Evaluate(Checks(), rep.Results)
	md := rep.Markdown()
	for _, want := range []string{
		"# Pictor load benchmark\n",
		"2026-11-22 01:40 UTC · linux/amd64, 2 CPUs · pictor dev · 10s per run · render pool 2 · load average 3.50 at start\n",
		"**Warning:** the machine was busy",
		"| render-card/sequential (1 client) | 100 | 10.0 |",
		"| render-card/sequential p50 < 150 ms | p50 89.9 ms | pass |",
		"- **render-card**: renders cards\n",
		"- render-card/pool-full: 1 of 201 failed; first: POST /v1/image: 503 Service Unavailable\n",
		"- chromium-cli: --chromium \"nope\": not found second line\n",
		"[latency.svg](latency.svg)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}

	quiet := *rep
	quiet.Meta.LoadAvg = 0.2
	if strings.Contains(quiet.Markdown(), "Warning") {
		t.Error("a quiet machine got the busy warning")
	}
}

func TestReportWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	rep := &Report{Results: []*Result{result("x", 1, 3, 0, time.Second, time.Millisecond, 3*time.Millisecond)}}
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ReportFile, ChartFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v (%d bytes)", f, err, len(b))
		}
	}
}

func TestCPUTable(t *testing.T) {
	withCPU := func(r *Result, cpu time.Duration) *Result { r.CPU = cpu; return r }
	tests := []struct {
		name    string
		results []*Result
		want    string
	}{
		{"none measured", []*Result{result("a", 1, 10, 0, time.Second, time.Millisecond, time.Millisecond)}, ""},
		{
			name: "measured rows only",
			results: []*Result{
				withCPU(result("render-card/pool-full", 4, 20, 0, 10*time.Second, time.Millisecond, time.Millisecond), 17*time.Second),
				result("b", 1, 10, 0, time.Second, time.Millisecond, time.Millisecond),
				withCPU(result("chromium-cli/sequential", 1, 0, 2, 4*time.Second, 0, 0), 2*time.Second),
			},
			want: "| scenario | CPU per request | cores busy |\n|---|---:|---:|\n" +
				"| render-card/pool-full (4 clients) | 850 ms | 1.70 |\n" +
				"| chromium-cli/sequential (1 client) | – | 0.50 |\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CPUTable(tt.results); got != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
