package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"
)

// contender is one side of a comparison run by interleave.
type contender struct {
	// name is its result's name, "scenario/what".
	name string
	op   Op
	// cpu, if not nil, returns the CPU its system under test used so far.
	cpu func() time.Duration
}

// interleave measures contenders against each other on a shared, noisy
// machine: rounds rounds, each giving every contender an equal slice of
// total, in ABBA order (A B, B A, A B, ...) so that a drift in the
// machine's load favors neither; the slices of a contender are merged
// into one result, and the rate of each slice is kept in its Note.
func interleave(ctx context.Context, env *Env, unit string, clients, rounds int, total time.Duration, cs []contender) ([]*Result, error) {
	slice := max(total/time.Duration(rounds), 100*time.Millisecond)
	out := make([]*Result, len(cs))
	rates := make([][]string, len(cs))
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
			self := selfCPU()
			res, err := Drive(ctx, c.name, unit, Load{Clients: clients, Duration: slice}, env.Progress, c.op)
			genCPU[i] += selfCPU() - self
			if res != nil {
				if c.cpu != nil {
					res.CPU = c.cpu() - before
				}
				rates[i] = append(rates[i], formatRate(res.Rate()))
				if out[i] == nil {
					out[i] = res
				} else {
					out[i].merge(res)
				}
			}
			if err != nil {
				return compact(out), err
			}
		}
	}
	for i, r := range out {
		if rounds > 1 {
			r.Note = joinNote(r.Note, fmt.Sprintf("%ss/s per round: %s", unit, strings.Join(rates[i], ", ")))
		}
		if r.Requests > 0 && r.Elapsed > 0 {
			r.Note = joinNote(r.Note, fmt.Sprintf("load generator: %s CPU per request, %.2f cores",
				formatLatency(genCPU[i]/time.Duration(r.Requests)), genCPU[i].Seconds()/r.Elapsed.Seconds()))
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
func compact(rs []*Result) []*Result {
	return slices.DeleteFunc(slices.Clone(rs), func(r *Result) bool { return r == nil })
}

// merge adds the requests, time and latencies of another run of the
// same thing to r.
func (r *Result) merge(o *Result) {
	r.Requests += o.Requests
	r.Errors += o.Errors
	if r.FirstError == "" {
		r.FirstError = o.FirstError
	}
	r.Elapsed += o.Elapsed
	r.CPU += o.CPU
	r.Latency.Merge(&o.Latency)
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

// Comparison pairs a Pictor run with the baseline run it is compared with.
type Comparison struct {
	Subject, Baseline string
}

// Comparisons returns the pairs the report sets side by side.
func Comparisons() []Comparison {
	return []Comparison{
		{"hot-image/pictor", "hot-image/nginx"},
		{"zipf-10k/pictor", "zipf-10k/nginx"},
		{"resize/pictor", "resize/vipsthumbnail"},
	}
}

// ComparisonTable renders one row per comparison whose two runs are in
// results: req/s and latency quantiles of Pictor divided by the
// baseline's (a rate above 1 and latencies below 1 favor Pictor), or ""
// when no pair is complete.
func ComparisonTable(cmps []Comparison, results []*Result) string {
	find := func(name string) *Result {
		for _, r := range results {
			if r.Name == name {
				return r
			}
		}
		return nil
	}
	ratio := func(a, b float64) string {
		if b <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f×", a/b)
	}
	q := func(r *Result, p float64) float64 {
		if r.Latency.Count() == 0 {
			return 0
		}
		return r.Latency.Quantile(p).Seconds()
	}
	var b strings.Builder
	for _, c := range cmps {
		s, base := find(c.Subject), find(c.Baseline)
		if s == nil || base == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| Pictor run | baseline | req/s ratio | p50 ratio | p95 ratio | p99 ratio |\n")
			b.WriteString("|---|---|---:|---:|---:|---:|\n")
		}
		rate := ratio(s.Rate(), base.Rate())
		p50, p95, p99 := "–", "–", "–"
		if s.Latency.Count() > 0 {
			p50, p95, p99 = ratio(q(s, 0.50), q(base, 0.50)), ratio(q(s, 0.95), q(base, 0.95)), ratio(q(s, 0.99), q(base, 0.99))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(c.Subject), cell(c.Baseline), rate, p50, p95, p99)
	}
	return b.String()
}

// versusNginx measures Pictor's edge against nginx serving the same bytes,
// for scenario: both warmed up with warmup requests each (any failure there
// ends the scenario), then interleaved. It returns the two results, Pictor's
// first, and what the edge's caches counted during the measured runs.
func versusNginx(ctx context.Context, env *Env, scenario string, warmup int, pictor, nginx *getRun, nginxCPU func() time.Duration) ([]*Result, edgeCounters, error) {
	cfg := env.Config
	for _, w := range []struct {
		name string
		run  *getRun
	}{{scenario + "/pictor-warm-up", pictor}, {scenario + "/nginx-warm-up", nginx}} {
		r, err := Drive(ctx, w.name, "request", Load{Clients: cfg.EdgeClients, Requests: warmup}, env.Progress, w.run.op)
		if err != nil {
			return nil, edgeCounters{}, err
		}
		if r.Errors > 0 {
			return nil, edgeCounters{}, fmt.Errorf("%s: %d of %d failed, first: %s", w.name, r.Errors, r.Requests, r.FirstError)
		}
	}
	before, err := scrapeEdge(ctx, env.Pictor)
	if err != nil {
		return nil, edgeCounters{}, err
	}
	results, err := interleave(ctx, env, "request", cfg.EdgeClients, cfg.Rounds, cfg.Duration, []contender{
		{name: scenario + "/pictor", op: pictor.op, cpu: env.Pictor.CPU},
		{name: scenario + "/nginx", op: nginx.op, cpu: nginxCPU},
	})
	if err != nil {
		return results, edgeCounters{}, err
	}
	after, err := scrapeEdge(ctx, env.Pictor)
	if err != nil {
		return results, edgeCounters{}, err
	}
	return results, after.sub(before), nil
}
