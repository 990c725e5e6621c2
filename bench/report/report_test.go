package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/internal/benchtest"
	"github.com/pictorhq/pictor/bench/load"
)

func TestMarkdownTable(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		results []*load.Result
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
			results: []*load.Result{
				benchtest.Result("render-card/sequential", 1, 101, 0, 10*time.Second, 50*ms, 150*ms),
				benchtest.Result("render-card/pool-full", 4, 300, 2, 10*time.Second, 100*ms, 100*ms),
				benchtest.Result("chromium-cli/parallel", 2, 0, 3, 5*time.Second, 0, 0),
			},
			want: "| scenario | requests | req/s | p50 | p95 | p99 | errors |\n" +
				"|---|---:|---:|---:|---:|---:|---:|\n" +
				"| render-card/sequential (1 client) | 101 | 10.1 | 99.9 ms | 145 ms | 149 ms | 0 |\n" +
				"| render-card/pool-full (4 clients) | 302 | 30.0 | 100 ms | 100 ms | 100 ms | 2 |\n" +
				"| chromium-cli/parallel (2 clients) | 3 | 0.00 | – | – | – | 3 |\n",
		},
		{
			name:    "pipes are escaped",
			results: []*load.Result{benchtest.Result("a|b", 1, 1, 0, time.Second, 2*ms, 2*ms)},
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
		Results: []*load.Result{
			benchtest.Result("render-card/sequential", 1, 100, 0, 10*time.Second, 60*ms, 120*ms),
			benchtest.Result("render-card/pool-full", 4, 200, 1, 10*time.Second, 100*ms, 200*ms),
		},
		Failures: []string{"chromium-cli: --chromium \"nope\": not found\nsecond line"},
	}
	rep.Checks = []CheckResult{{Name: "render-card/sequential p50 < 150 ms", Measured: "p50 89.9 ms", Pass: true}}
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
	rep := &Report{Results: []*load.Result{benchtest.Result("x", 1, 3, 0, time.Second, time.Millisecond, 3*time.Millisecond)}}
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{MarkdownFile, ChartFile, JSONFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v (%d bytes)", f, err, len(b))
		}
	}
}

func TestReportJSON(t *testing.T) {
	ms := time.Millisecond
	ok := benchtest.Result("cluster/create-cluster", 1, 101, 1, 10*time.Second, 50*ms, 150*ms)
	ok.CPU, ok.Rounds, ok.Note = 202*ms, []float64{9.5, 10.5}, "a note"
	failed := benchtest.Result("cluster/render-cluster", 4, 0, 3, time.Second, 0, 0)
	rep := &Report{Meta: Meta{Host: "h", Duration: 20 * time.Second, Scenarios: []Scenario{{"cluster", "about"}}},
		Results: []*load.Result{ok, failed}, Checks: []CheckResult{{Name: "c", Measured: "+1 ms", Pass: true}}}
	b, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		DurationS float64 `json:"duration_s"`
		Results   []map[string]any
		Checks    []map[string]any
		Scenarios []map[string]any
		Failures  []string
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.DurationS != 20 || len(got.Results) != 2 || len(got.Checks) != 1 || got.Checks[0]["pass"] != true ||
		got.Scenarios[0]["name"] != "cluster" || got.Failures == nil {
		t.Fatalf("report.json = %s", b)
	}
	r := got.Results[0]
	if r["name"] != "cluster/create-cluster" || r["requests"] != 102.0 || r["errors"] != 1.0 || r["rate"] != 10.1 ||
		r["p50_ms"] != float64(ok.Latency.Quantile(0.5))/1e6 || r["cpu_per_request_ms"] != 2.0 ||
		fmt.Sprint(r["rounds"]) != "[9.5 10.5]" || r["note"] != "a note" {
		t.Fatalf("result %v", r)
	}
	if _, has := got.Results[1]["p50_ms"]; has || got.Results[1]["cpu_per_request_ms"] != nil {
		t.Fatalf("a result without successes has latencies or CPU: %v", got.Results[1])
	}
}

func TestCPUTable(t *testing.T) {
	withCPU := func(r *load.Result, cpu time.Duration) *load.Result { r.CPU = cpu; return r }
	tests := []struct {
		name    string
		results []*load.Result
		want    string
	}{
		{"none measured", []*load.Result{benchtest.Result("a", 1, 10, 0, time.Second, time.Millisecond, time.Millisecond)}, ""},
		{
			name: "measured rows only",
			results: []*load.Result{
				withCPU(benchtest.Result("render-card/pool-full", 4, 20, 0, 10*time.Second, time.Millisecond, time.Millisecond), 17*time.Second),
				benchtest.Result("b", 1, 10, 0, time.Second, time.Millisecond, time.Millisecond),
				withCPU(benchtest.Result("chromium-cli/sequential", 1, 0, 2, 4*time.Second, 0, 0), 2*time.Second),
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

func TestReportNotesAndComparisons(t *testing.T) {
	ms := time.Millisecond
	p := benchtest.Result("hot-image/pictor", 32, 900, 0, time.Second, ms, 3*ms)
	p.Note = "edge cache: L1 hits 900"
	n := benchtest.Result("hot-image/nginx", 32, 1000, 0, time.Second, ms, 2*ms)
	md := (&Report{Results: []*load.Result{p, n}, Comparisons: []Comparison{{"hot-image/pictor", "hot-image/nginx"}}}).Markdown()
	for _, want := range []string{
		"| hot-image/pictor | hot-image/nginx | 0.90× |",
		"## Notes\n\n- hot-image/pictor: edge cache: L1 hits 900\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
