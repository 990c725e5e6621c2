package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/proc"
)

// soakSampleEvery is how often the soak reads the server's memory. The
// reading is a measurement, not a synchronization: nothing waits on it.
const soakSampleEvery = 500 * time.Millisecond

// Memory targets of the soak.
const (
	// soakPeakLimit is the most the whole service, Chromium included, may
	// hold at any time.
	soakPeakLimit = 1536 << 20
	// soakFlatFactor bounds growth: the mean PSS of the whole service,
	// the edge's memory cache included, over the last fifth of the renders
	// may exceed the mean over the fifth that follows the cache's filling
	// up (the second fifth at the earliest) by this factor at most
	// (issue 27: 1.15 let 650 → 764 MiB pass as flat).
	soakFlatFactor = 1.05
	// soakFull is the share of its largest size at which the edge's
	// memory cache counts as full.
	soakFull = 0.95
)

func soakScenario() Scenario {
	return Scenario{
		Name: "soak",
		About: "renders of distinct 1200×630 cards (--soak-renders, 1,000 by default) with the pool full on a fresh server: " +
			"memory (PSS) of the whole service, Chromium included, sampled every 0.5 s; peak under 1.5 GiB and flat",
		NeedsPictor: true,
		// A server of its own, so the memory is this run's alone.
		ServeFlags: []string{"--log-level", "warn"},
		Run:        runSoak,
	}
}

func runSoak(ctx context.Context, env *Env) ([]*load.Result, error) {
	cfg := env.Config
	runID := rand.Text()[:8]
	var (
		seq       atomic.Int64
		renders   atomic.Int64
		mu        sync.Mutex
		samples   []load.MemorySample
		scrapeErr error
	)
	pid := env.Pictor.PID()
	sample := func() {
		m := proc.TreeMemory(pid)
		l1, err := scrapeL1Bytes(ctx, env.Pictor)
		mu.Lock()
		samples = append(samples, load.MemorySample{Renders: int(renders.Load()), Memory: m, CacheBytes: l1})
		if err != nil && scrapeErr == nil {
			scrapeErr = err
		}
		mu.Unlock()
	}
	sample()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(soakSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				sample()
			case <-stop:
				return
			}
		}
	})
	op := func(ctx context.Context, _ int) (time.Duration, error) {
		n := int(seq.Add(1))
		lat, err := env.Pictor.RenderCard(ctx, card.HTML(n, fmt.Sprintf("soak-%s-%06d", runID, n)))
		if err == nil {
			renders.Add(1)
		}
		return lat, err
	}
	cpu := env.Pictor.CPU()
	r, err := load.Drive(ctx, "soak/pool-full", "render", load.Load{Clients: cfg.PoolSize, Requests: cfg.SoakRenders}, env.Progress, op)
	close(stop)
	wg.Wait()
	sample()
	if r == nil {
		return nil, err
	}
	r.CPU = env.Pictor.CPU() - cpu
	r.Memory = samples
	r.Note = soakNote(samples)
	if err == nil && scrapeErr != nil {
		err = fmt.Errorf("soak: reading the edge's cache size: %w", scrapeErr)
	}
	return []*load.Result{r}, err
}

// soakWindows returns the mean PSS, edge cache included, of the samples
// taken during the fifth of the renders that begins once the edge's memory
// cache is full (soakFull of its largest size), at the second fifth at the
// earliest (warm), and during the last fifth (end), and the highest PSS of
// all; ok is false when a window has no sample, or the cache filled too
// late for the two not to overlap.
func soakWindows(samples []load.MemorySample) (warm, end, peak int64, ok bool) {
	if len(samples) == 0 {
		return 0, 0, 0, false
	}
	total := samples[len(samples)-1].Renders
	var largest int64
	for _, s := range samples {
		peak = max(peak, s.PSS)
		largest = max(largest, s.CacheBytes)
	}
	from := total / 5
	for _, s := range samples {
		if float64(s.CacheBytes) >= soakFull*float64(largest) {
			from = max(from, s.Renders)
			break
		}
	}
	if from+total/5 > 4*total/5 {
		return 0, 0, peak, false
	}
	var warmSum, endSum, warmN, endN int64
	for _, s := range samples {
		switch {
		case s.Renders >= from && s.Renders < from+total/5:
			warmSum += s.PSS
			warmN++
		case s.Renders >= 4*total/5:
			endSum += s.PSS
			endN++
		}
	}
	if warmN == 0 || endN == 0 {
		return 0, 0, peak, false
	}
	return warmSum / warmN, endSum / endN, peak, true
}

// soakNote describes the memory over the run for the report.
func soakNote(samples []load.MemorySample) string {
	if len(samples) == 0 {
		return "no memory sample"
	}
	first, last := samples[0], samples[len(samples)-1]
	var peakRSS int64
	var procs int
	for _, s := range samples {
		peakRSS = max(peakRSS, s.RSS)
		procs = max(procs, s.Processes)
	}
	warm, end, peak, ok := soakWindows(samples)
	note := fmt.Sprintf("memory (PSS) %s at start, %s after %d renders, peak %s (RSS summed over up to %d processes peaked at %s)",
		formatMiB(first.PSS), formatMiB(last.PSS), last.Renders, formatMiB(peak), procs, formatMiB(peakRSS))
	if ok {
		note += fmt.Sprintf("; edge's memory cache included (%s at the end), mean over the fifth of the renders after it filled %s, over the last fifth %s",
			formatMiB(last.CacheBytes), formatMiB(warm), formatMiB(end))
	}
	return note
}

func formatMiB(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// soakChecks are the memory targets: a peak under 1.5 GiB, and flat.
func soakChecks() []Check {
	return []Check{
		{
			Name: fmt.Sprintf("soak/pool-full peak memory (PSS) < %s", formatMiB(soakPeakLimit)),
			Eval: func(find func(string) *load.Result) (string, bool, bool) {
				r := find("soak/pool-full")
				if r == nil {
					return "", false, false
				}
				_, _, peak, _ := soakWindows(r.Memory)
				return "peak " + formatMiB(peak), peak > 0 && peak < soakPeakLimit, true
			},
		},
		{
			Name: fmt.Sprintf("soak/pool-full memory, edge cache included, flat (last fifth ≤ %g× the fifth after the cache filled)", soakFlatFactor),
			Eval: func(find func(string) *load.Result) (string, bool, bool) {
				r := find("soak/pool-full")
				if r == nil {
					return "", false, false
				}
				warm, end, _, ok := soakWindows(r.Memory)
				if !ok {
					return "too few samples, or the edge cache filled too late", false, true
				}
				ratio := float64(end) / float64(warm)
				return fmt.Sprintf("%.2f× (%s ÷ %s)", ratio, formatMiB(end), formatMiB(warm)), ratio <= soakFlatFactor, true
			},
		},
	}
}
