package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/pictor"
	"github.com/pictorhq/pictor/bench/report"
)

// contender is one side of a comparison run by interleave.
type contender struct {
	// name is its result's name, "scenario/what".
	name string
	op   load.Op
	// clients, if positive, replaces interleave's clients for this
	// contender (a server's queue kept full against a tool's pages).
	clients int
	// cpu, if not nil, returns the CPU its system under test used so far.
	cpu func() time.Duration
	// watch, if not nil, is called before each of the contender's slices,
	// and the function it returns after the slice with its result, before
	// the result is merged with the others (it may set the result's CPU).
	watch func() func(*load.Result)
}

// interleave measures contenders against each other on a shared, noisy
// machine: rounds rounds, each giving every contender an equal slice of
// total with clients clients (unless it sets its own), in ABBA order
// (A B, B A, A B, ...) so that a drift in the machine's load favors
// neither; the slices of a contender are merged into one result, and the
// rate of each slice is kept in its Note and its Rounds.
func interleave(ctx context.Context, env *Env, unit string, clients, rounds int, total time.Duration, cs []contender) ([]*load.Result, error) {
	slice := max(total/time.Duration(rounds), 100*time.Millisecond)
	out := make([]*load.Result, len(cs))
	rates := make([][]string, len(cs))
	p99s := make([][]string, len(cs))
	genCPU := make([]time.Duration, len(cs))
	for r := range rounds {
		order := make([]int, len(cs))
		for i := range order {
			order[i] = i
		}
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			c := cs[i]
			env.Progress.Notef("round %d/%d: %s", r+1, rounds, c.name)
			var before time.Duration
			if c.cpu != nil {
				before = c.cpu()
			}
			var watched func(*load.Result)
			if c.watch != nil {
				watched = c.watch()
			}
			n := clients
			if c.clients > 0 {
				n = c.clients
			}
			self := selfCPU()
			res, err := load.Drive(ctx, c.name, unit, load.Load{Clients: n, Duration: slice}, env.Progress, c.op)
			genCPU[i] += selfCPU() - self
			if res != nil {
				if c.cpu != nil {
					res.CPU = c.cpu() - before
				}
				if watched != nil {
					watched(res)
				}
				res.Rounds = []float64{res.Rate()}
				rates[i] = append(rates[i], load.FormatRate(res.Rate()))
				p99s[i] = append(p99s[i], load.FormatLatency(res.Latency.Quantile(0.99)))
				if out[i] == nil {
					out[i] = res
				} else {
					merge(out[i], res)
				}
			}
			if err != nil {
				return compact(out), err
			}
		}
	}
	for i, r := range out {
		if rounds > 1 {
			r.Note = joinNote(r.Note, fmt.Sprintf("%ss/s per round: %s; p99 per round: %s", unit,
				strings.Join(rates[i], ", "), strings.Join(p99s[i], ", ")))
		}
		if r.Requests > 0 && r.Elapsed > 0 {
			r.Note = joinNote(r.Note, fmt.Sprintf("load generator: %s CPU per request, %.2f cores",
				load.FormatLatency(genCPU[i]/time.Duration(r.Requests)), genCPU[i].Seconds()/r.Elapsed.Seconds()))
		}
	}
	return out, nil
}

// selfCPU returns the CPU time this process used so far, its children
// (the servers under test) excepted.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// compact drops nil results.
func compact(rs []*load.Result) []*load.Result {
	return slices.DeleteFunc(slices.Clone(rs), func(r *load.Result) bool { return r == nil })
}

// merge adds the requests, time and latencies of another run of the
// same thing to r.
func merge(r, o *load.Result) {
	r.Requests += o.Requests
	r.Errors += o.Errors
	if r.FirstError == "" {
		r.FirstError = o.FirstError
	}
	r.Elapsed += o.Elapsed
	r.CPU += o.CPU
	r.Latency.Merge(&o.Latency)
	r.Rounds = append(r.Rounds, o.Rounds...)
	r.Note = joinNote(r.Note, o.Note)
}

// joinNote joins two notes with "; ", skipping empty ones.
func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// Comparisons returns the pairs the report sets side by side.
func Comparisons() []report.Comparison {
	return append([]report.Comparison{
		{Subject: "hot-image/pictor", Baseline: "hot-image/nginx"},
		{Subject: "og-hot/pictor", Baseline: "og-hot/nginx"},
		{Subject: "zipf-10k/pictor", Baseline: "zipf-10k/nginx"},
		{Subject: "zipf-10k-heavy/pictor", Baseline: "zipf-10k-heavy/nginx"},
		{Subject: "zipf-100k/pictor", Baseline: "zipf-100k/nginx"},
		{Subject: "resize/pictor", Baseline: "resize/vipsthumbnail"},
		{Subject: clusterResult(clusterCreate, sideCluster), Baseline: clusterResult(clusterCreate, sideEmbedded)},
		{Subject: clusterResult(clusterRead, sideCluster), Baseline: clusterResult(clusterRead, sideEmbedded)},
		{Subject: clusterResult(clusterRender, sideCluster), Baseline: clusterResult(clusterRender, sideEmbedded)},
		{Subject: clusterResult(clusterMaster, sideCluster), Baseline: clusterResult(clusterMaster, sideEmbedded)},
	}, pageComparisons()...)
}

// edgeSliceMax is the longest slice of an edge comparison's rounds. On a
// shared two-CPU VM the host's speed flips between regimes (85k against
// 105k req/s of og-hot) that last from seconds to tens of seconds, and
// both servers flip together. With 5 s slices one side could spend whole
// slices in a fast stretch that its neighbours missed, which moved a run's
// ratio by up to a tenth; 2 s slices let both sides sample every stretch
// (docs/performance-history.md, the twentieth session).
const edgeSliceMax = 2 * time.Second

// edgeRounds is how many rounds an edge comparison runs: --rounds, or as
// many more as keep every slice within edgeSliceMax (an even number, so
// that the ABBA order leaves neither side first more often), at most 100.
func edgeRounds(cfg *Config) int {
	n := int((cfg.Duration + edgeSliceMax - 1) / edgeSliceMax)
	if n <= cfg.Rounds {
		return cfg.Rounds
	}
	return min(n+n%2, 100)
}

// versusNginx measures Pictor's edge against nginx serving the same bytes,
// for scenario: both warmed up with warmup requests each (any failure there
// ends the scenario), then interleaved. It returns the two results, Pictor's
// first, and what the edge's caches counted during the measured runs.
func versusNginx(ctx context.Context, env *Env, scenario string, warmup int, pictorRun, nginxRun *getRun, nginxCPU func() time.Duration) ([]*load.Result, edgeCounters, error) {
	return versusNginxCounting(ctx, env, scenario, warmup, pictorRun, nginxRun, nginxCPU, scrapeEdge)
}

// versusNginxCounting is versusNginx with the counters of the edge that
// scrape reads (the image cache's, or the OG cache's), counted over the
// measured runs.
func versusNginxCounting[C interface{ sub(C) C }](ctx context.Context, env *Env, scenario string, warmup int, pictorRun, nginxRun *getRun,
	nginxCPU func() time.Duration, scrape func(context.Context, *pictor.Server) (C, error)) ([]*load.Result, C, error) {
	cfg := env.Config
	var none C
	for _, w := range []struct {
		name string
		run  *getRun
	}{{scenario + "/pictor-warm-up", pictorRun}, {scenario + "/nginx-warm-up", nginxRun}} {
		r, err := load.Drive(ctx, w.name, "request", load.Load{Clients: cfg.EdgeClients, Requests: warmup}, env.Progress, w.run.op)
		if err != nil {
			return nil, none, err
		}
		if r.Errors > 0 {
			return nil, none, fmt.Errorf("%s: %d of %d failed, first: %s", w.name, r.Errors, r.Requests, r.FirstError)
		}
	}
	before, err := scrape(ctx, env.Pictor)
	if err != nil {
		return nil, none, err
	}
	results, err := interleave(ctx, env, "request", cfg.EdgeClients, edgeRounds(cfg), cfg.Duration, []contender{
		{name: scenario + "/pictor", op: pictorRun.op, cpu: env.Pictor.CPU},
		{name: scenario + "/nginx", op: nginxRun.op, cpu: nginxCPU},
	})
	if err != nil {
		return results, none, err
	}
	after, err := scrape(ctx, env.Pictor)
	if err != nil {
		return results, none, err
	}
	if note := roundRatios(results[0], results[1]); note != "" {
		results[0].Note = joinNote(results[0].Note, note)
	}
	return results, after.sub(before), nil
}

// roundRatios describes the ratios of subject's rate to baseline's in
// each round, which ran next to each other: their median and range. A run's
// ratio is its totals'; a round that caught a change of the host's speed
// the other side's round missed moves it, and the median does not follow.
func roundRatios(subject, baseline *load.Result) string {
	if len(subject.Rounds) < 2 || len(subject.Rounds) != len(baseline.Rounds) {
		return ""
	}
	ratios := make([]float64, len(subject.Rounds))
	for i, r := range subject.Rounds {
		if baseline.Rounds[i] <= 0 {
			return ""
		}
		ratios[i] = r / baseline.Rounds[i]
	}
	slices.Sort(ratios)
	n := len(ratios)
	median := ratios[n/2]
	if n%2 == 0 {
		median = (ratios[n/2-1] + ratios[n/2]) / 2
	}
	return fmt.Sprintf("round by round against %s: median %.2f×, %.2f–%.2f×", baseline.Name, median, ratios[0], ratios[n-1])
}
