package load

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestDrive(t *testing.T) {
	errBoom := errors.New("boom")
	// Each request of the duration case takes 5 ms of a clock that moves
	// only with requests: 50 ms is 10 requests, plus at most one more in
	// flight per client when the deadline passes.
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	tests := []struct {
		name       string
		load       Load
		op         func(n int64) (time.Duration, error)
		minN, maxN int // Requests
		minE, maxE int // Errors
		wantErr    error
	}{
		{
			name: "request count",
			load: Load{Clients: 3, Requests: 30},
			op:   func(n int64) (time.Duration, error) { return time.Duration(n) * time.Millisecond, nil },
			minN: 30, maxN: 30,
		},
		{
			name: "some failures",
			load: Load{Clients: 2, Requests: 20},
			op:   func(n int64) (time.Duration, error) { return time.Millisecond, map[bool]error{true: errBoom}[n%4 == 0] },
			minN: 20, maxN: 20,
			minE: 5, maxE: 5,
		},
		{
			name: "a dead target aborts the run",
			load: Load{Clients: 2, Duration: time.Minute},
			op:   func(int64) (time.Duration, error) { return 0, errBoom },
			minN: maxConsecutiveErrors, maxN: maxConsecutiveErrors + 2, // clients in flight finish
			minE: maxConsecutiveErrors, maxE: maxConsecutiveErrors + 2,
			wantErr: ErrAborted,
		},
		{
			name: "duration",
			load: Load{Clients: 2, Duration: 50 * time.Millisecond, now: clock.now},
			op: func(int64) (time.Duration, error) {
				clock.advance(5 * time.Millisecond)
				return 5 * time.Millisecond, nil
			},
			minN: 10, maxN: 11,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			res, err := Drive(context.Background(), "test/run", "request", tt.load, nil, func(context.Context, int) (time.Duration, error) {
				return tt.op(calls.Add(1))
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if res.Requests < tt.minN || res.Requests > tt.maxN {
				t.Errorf("Requests = %d, want %d to %d", res.Requests, tt.minN, tt.maxN)
			}
			if res.Errors < tt.minE || res.Errors > tt.maxE {
				t.Errorf("Errors = %d, want %d to %d", res.Errors, tt.minE, tt.maxE)
			}
			if res.Latency.Count() != res.Requests-res.Errors {
				t.Errorf("%d latencies for %d successes", res.Latency.Count(), res.Requests-res.Errors)
			}
			if res.Errors > 0 && res.FirstError != "boom" {
				t.Errorf("FirstError = %q", res.FirstError)
			}
			if res.Elapsed <= 0 || res.Clients != tt.load.Clients || res.Name != "test/run" {
				t.Errorf("result %+v", res)
			}
		})
	}

	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int64
		res, err := Drive(ctx, "test/cancel", "request", Load{Clients: 1, Duration: time.Minute}, nil,
			func(ctx context.Context, _ int) (time.Duration, error) {
				if calls.Add(1) == 3 {
					cancel()
					return 0, ctx.Err()
				}
				return time.Millisecond, nil
			})
		if !errors.Is(err, context.Canceled) || res.Requests != 2 || res.Errors != 0 {
			t.Fatalf("got %d requests, %d errors, %v; want 2, 0, context.Canceled", res.Requests, res.Errors, err)
		}
	})

	t.Run("bad load", func(t *testing.T) {
		for _, l := range []Load{{Clients: 0, Requests: 1}, {Clients: 1}} {
			if _, err := Drive(context.Background(), "x", "request", l, nil, nil); err == nil {
				t.Errorf("Drive accepted %+v", l)
			}
		}
	})
}

func TestProgressLine(t *testing.T) {
	tests := []struct {
		name    string
		done    int64
		errs    int64
		cur     float64
		elapsed time.Duration
		total   time.Duration
		want    string
	}{
		{"timed run", 120, 1, 18.04, 6230 * time.Millisecond, 20 * time.Second,
			"render-card/pool-full (4 clients): 120 done, 1 errors, 18.0/s now, 19.3/s avg, 6.2s/20s"},
		{"request-count run", 2, 0, 0.5, 4 * time.Second, 0,
			"render-card/pool-full (4 clients): 2 done, 0 errors, 0.50/s now, 0.50/s avg, 4s"},
		{"start", 0, 0, 0, 0, time.Second,
			"render-card/pool-full (4 clients): 0 done, 0 errors, 0.00/s now, 0.00/s avg, 0s/1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := progressLine("render-card/pool-full (4 clients)", tt.done, tt.errs, tt.cur, tt.elapsed, tt.total)
			if got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestProgressWrites(t *testing.T) {
	tests := []struct {
		name string
		tty  bool
		want []string
	}{
		{"terminal redraws in place", true, []string{"\r\033[K", "scenario x\n", "x (1 client): 5 done"}},
		{"log gets lines", false, []string{"scenario x\n", "x (1 client): 5 done"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			p := NewProgress(&out, tt.tty)
			p.Notef("scenario %s", "x")
			_, err := Drive(context.Background(), "x", "request", Load{Clients: 1, Requests: 5}, p,
				func(context.Context, int) (time.Duration, error) { return 0, nil })
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %q lacks %q", out.String(), w)
				}
			}
			if !tt.tty && strings.Contains(out.String(), "\r") {
				t.Errorf("non-terminal output has carriage returns: %q", out.String())
			}
		})
	}
	var nilProgress *Progress
	nilProgress.Notef("nothing") // must not panic
}
