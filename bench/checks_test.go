package bench

import (
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/internal/benchtest"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/report"
)

func TestChecks(t *testing.T) {
	ms := time.Millisecond
	seqFast := benchtest.Result("render-card/sequential", 1, 100, 0, 10*time.Second, 60*ms, 120*ms)
	seqSlow := benchtest.Result("render-card/sequential", 1, 100, 0, 10*time.Second, 140*ms, 400*ms)
	seqNone := benchtest.Result("render-card/sequential", 1, 0, 5, 10*time.Second, 0, 0)
	pool := benchtest.Result("render-card/pool-full", 4, 200, 0, 10*time.Second, 100*ms, 200*ms) // 20/s
	cliSeq := benchtest.Result("chromium-cli/sequential", 1, 7, 0, 10*time.Second, time.Second, 2*time.Second)
	cliPar := benchtest.Result("chromium-cli/parallel", 2, 13, 0, 10*time.Second, time.Second, 2*time.Second)
	cliFast := benchtest.Result("chromium-cli/parallel", 2, 50, 0, 10*time.Second, time.Second, 2*time.Second)
	tests := []struct {
		name    string
		results []*load.Result
		want    []report.CheckResult
	}{
		{
			name:    "nothing ran",
			results: nil,
			want:    nil,
		},
		{
			name:    "render only: no ratio",
			results: []*load.Result{seqFast, pool},
			want:    []report.CheckResult{{Name: "render-card/sequential p50 < 150 ms", Measured: "p50 89.9 ms", Pass: true}},
		},
		{
			name:    "both pass, against the best CLI run",
			results: []*load.Result{seqFast, pool, cliSeq, cliPar},
			want: []report.CheckResult{
				{Name: "render-card/sequential p50 < 150 ms", Measured: "p50 89.9 ms", Pass: true},
				{Name: "render-card/pool-full throughput ≥ 5× chromium-cli",
					Measured: "15.4× (20.0 renders/s ÷ 1.30 renders/s of chromium-cli/parallel)", Pass: true},
			},
		},
		{
			name:    "both fail",
			results: []*load.Result{seqSlow, pool, cliFast},
			want: []report.CheckResult{
				{Name: "render-card/sequential p50 < 150 ms", Measured: "p50 269 ms", Pass: false},
				{Name: "render-card/pool-full throughput ≥ 5× chromium-cli",
					Measured: "4.0× (20.0 renders/s ÷ 5.00 renders/s of chromium-cli/parallel)", Pass: false},
			},
		},
		{
			name:    "no successful render",
			results: []*load.Result{seqNone},
			want:    []report.CheckResult{{Name: "render-card/sequential p50 < 150 ms", Measured: "no successful requests", Pass: false}},
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
