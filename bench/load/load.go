package load

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/bench/proc"
)

// RequestTimeout bounds one request of a run (one call of an Op),
// rendering included.
const RequestTimeout = 2 * time.Minute

// Result is one measured run: a row of the report.
type Result struct {
	// Name identifies the run, "scenario/variant"; checks find runs by it.
	Name string
	// Clients is how many requests were in flight at once.
	Clients int
	// Unit names one request in the report ("render", "image", "request").
	Unit string
	// Requests counts completed requests, failed ones included.
	Requests int
	// Errors counts failed requests; their latencies are not recorded.
	Errors int
	// FirstError describes the first failure, if any.
	FirstError string
	// Elapsed is the wall time of the run, from the first request sent to
	// the last one answered.
	Elapsed time.Duration
	// Latency holds the latency of every successful request.
	Latency Histogram
	// CPU is the CPU time the system under test used during the run (all
	// processes of the server, or of the tool compared); 0 when unknown.
	CPU time.Duration
	// Note is what else the scenario observed, for the report's notes
	// (rates per round, cache hits); "" for nothing.
	Note string
	// Memory holds the server's memory sampled during the run, oldest
	// first (the soak); nil when not watched.
	Memory []MemorySample
	// Rounds holds the rate of each slice of a run measured in rounds
	// interleaved with another (successful requests per second), in
	// order; nil for a run in one piece.
	Rounds []float64
}

// MemorySample is the server's memory after Renders renders.
type MemorySample struct {
	Renders int
	proc.Memory
	// CacheBytes is what the edge's memory cache held (its cost in bytes),
	// which grows by design up to --cache-mem: the flatness check leaves
	// it out.
	CacheBytes int64
}

// CPUPerRequest returns CPU per successful request; 0 when unknown.
func (r *Result) CPUPerRequest() time.Duration {
	if ok := r.Requests - r.Errors; ok > 0 {
		return r.CPU / time.Duration(ok)
	}
	return 0
}

// Label is the row label of the result in tables and charts.
func (r *Result) Label() string {
	if r.Clients == 1 {
		return r.Name + " (1 client)"
	}
	return fmt.Sprintf("%s (%d clients)", r.Name, r.Clients)
}

// Rate returns successful requests per second.
func (r *Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests-r.Errors) / r.Elapsed.Seconds()
}

// Load shapes a closed-loop run: Clients loops, each sending its next
// request as soon as the previous one is answered, until Duration has
// passed (requests in flight then still complete) or Requests have been
// sent, whichever comes first. A zero Duration or Requests is no limit;
// one of them must be set.
type Load struct {
	Clients  int
	Duration time.Duration
	Requests int
	// now is the clock Duration is measured with; nil is time.Now. Tests
	// inject one they advance themselves.
	now func() time.Time
}

// Op sends one request as client number client (0 to Clients-1) and
// returns the latency to record. It must consume the whole answer before
// returning, so the next request of the client starts on a quiet line.
type Op func(ctx context.Context, client int) (time.Duration, error)

// maxConsecutiveErrors ends a run early: that many failures in a row mean
// the target is down, not slow.
const maxConsecutiveErrors = 50

// Drive runs op under load and measures it. Progress, if not nil, shows
// the run live under name. When ctx ends, Drive returns what it measured
// so far together with ctx's error.
func Drive(ctx context.Context, name, unit string, load Load, progress *Progress, op Op) (*Result, error) {
	if load.Clients < 1 {
		return nil, fmt.Errorf("drive %s: %d clients: want at least 1", name, load.Clients)
	}
	if load.Duration <= 0 && load.Requests <= 0 {
		return nil, fmt.Errorf("drive %s: no duration and no request count", name)
	}
	res := &Result{Name: name, Clients: load.Clients, Unit: unit}
	hists := make([]Histogram, load.Clients)
	var (
		started     atomic.Int64
		errs        atomic.Int64
		done        atomic.Int64
		consecutive atomic.Int64
		firstErr    sync.Once
		wg          sync.WaitGroup
	)
	progress.begin(res.Label(), load.Duration, &done, &errs)
	now := load.now
	if now == nil {
		now = time.Now
	}
	start := now()
	var deadline time.Time
	if load.Duration > 0 {
		deadline = start.Add(load.Duration)
	}
	for c := range load.Clients {
		wg.Go(func() {
			for {
				if ctx.Err() != nil || consecutive.Load() >= maxConsecutiveErrors {
					return
				}
				if !deadline.IsZero() && !now().Before(deadline) {
					return
				}
				if load.Requests > 0 && started.Add(1) > int64(load.Requests) {
					return
				}
				lat, err := op(ctx, c)
				if err != nil && ctx.Err() != nil {
					return // interrupted, not failed
				}
				if err != nil {
					firstErr.Do(func() { res.FirstError = err.Error() })
					errs.Add(1)
					consecutive.Add(1)
				} else {
					hists[c].Record(lat)
					consecutive.Store(0)
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	res.Elapsed = now().Sub(start)
	progress.end()
	for i := range hists {
		res.Latency.Merge(&hists[i])
	}
	res.Requests = int(done.Load())
	res.Errors = int(errs.Load())
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if consecutive.Load() >= maxConsecutiveErrors {
		return res, fmt.Errorf("%s: %w after %d failures in a row: %s", name, ErrAborted, maxConsecutiveErrors, res.FirstError)
	}
	return res, nil
}
