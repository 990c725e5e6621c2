package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/contract/apierr"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// limiter is one implementation under test, with how many logs it keeps.
type limiter struct {
	Limiter
	logs func(t *testing.T) int
}

// limiters are the implementations every behaviour test runs on: each
// must keep the same exact sliding log.
var limiters = []struct {
	name string
	open func(t *testing.T, now func() time.Time) limiter
}{
	{"memory", func(t *testing.T, now func() time.Time) limiter {
		m := NewMemory(now)
		return limiter{m, func(*testing.T) int {
			total := 0
			for i := range m.shards {
				m.shards[i].mu.Lock()
				total += len(m.shards[i].logs)
				m.shards[i].mu.Unlock()
			}
			return total
		}}
	}},
	{"store", func(t *testing.T, now func() time.Time) limiter {
		s := storetest.Pebble.Open(t, 1)[0]
		return limiter{NewStore(s, now), func(t *testing.T) int { return countLogs(t, s) }}
	}},
}

func countLogs(t *testing.T, s kv.Store) int {
	t.Helper()
	it := s.Iterate(t.Context(), []byte(storePrefix), kv.IterOptions{})
	defer it.Close()
	n := 0
	for it.Next() {
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func allow(t *testing.T, l Limiter, key string, limit int, window time.Duration) Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), key, limit, window)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSlidingWindow(t *testing.T) {
	for _, tc := range limiters {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Unix(1_700_000_000, 0)}
			m := tc.open(t, c.now)
			for i := range 3 {
				d := allow(t, m, "org|g", 3, time.Minute)
				if !d.Allowed || d.Remaining != 2-i || d.Limit != 3 {
					t.Fatalf("call %d: %+v", i, d)
				}
				c.advance(10 * time.Second)
			}
			// Calls at t=0,10,20; now t=30.
			if d := allow(t, m, "org|g", 3, time.Minute); d.Allowed || d.RetryAfter != 30*time.Second || d.Remaining != 0 {
				t.Fatalf("4th call: %+v, want rejected with RetryAfter 30s", d)
			}
			c.advance(30 * time.Second) // t=60: the t=0 call leaves the window.
			if d := allow(t, m, "org|g", 3, time.Minute); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("after window slid: %+v", d)
			}
			if d := allow(t, m, "org|g", 3, time.Minute); d.Allowed || d.RetryAfter != 10*time.Second {
				t.Fatalf("next: %+v, want RetryAfter 10s", d)
			}
			if d := allow(t, m, "other|g", 3, time.Minute); !d.Allowed || d.Remaining != 2 {
				t.Fatalf("independent key: %+v", d)
			}
		})
	}
}

func TestRejectionsDoNotConsume(t *testing.T) {
	for _, tc := range limiters {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Unix(0, 0)}
			m := tc.open(t, c.now)
			allow(t, m, "k", 1, time.Minute)
			for range 10 {
				allow(t, m, "k", 1, time.Minute)
			}
			c.advance(time.Minute)
			if d := allow(t, m, "k", 1, time.Minute); !d.Allowed {
				t.Fatalf("rejected calls extended the window: %+v", d)
			}
		})
	}
}

// TestHammer runs many goroutines on a few keys; exactly limit calls per key
// get through. Run with -race.
func TestHammer(t *testing.T) {
	for _, tc := range limiters {
		t.Run(tc.name, func(t *testing.T) {
			hammer(t, []Limiter{tc.open(t, nil)}, 32, 60)
		})
	}
}

// hammer calls the limiters from many goroutines (goroutine g uses
// limiters[g%len]) on three keys and checks that exactly 20 calls per key
// got through, whichever limiter took them.
func hammer(t *testing.T, ls []Limiter, goroutines, calls int) {
	t.Helper()
	ctx := context.Background()
	keys := []string{"a|api-key:write", "b|api-key:write", "a|api-key:read"}
	var allowed [3]atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				k := (g + i) % len(keys)
				d, err := ls[g%len(ls)].Allow(ctx, keys[k], 20, time.Hour)
				if err != nil {
					failed.Store(err)
					return
				}
				if d.Allowed {
					allowed[k].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if got := allowed[i].Load(); got != 20 {
			t.Fatalf("%s: %d allowed, want exactly 20", keys[i], got)
		}
	}
}

func TestSweepDropsIdleLogs(t *testing.T) {
	for _, tc := range limiters {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Unix(0, 0)}
			m := tc.open(t, c.now)
			const idleKeys = 600 // more than one sweep page of the store
			for i := range idleKeys {
				allow(t, m, string(rune('a'+i%26))+string(rune(i)), 5, time.Minute)
			}
			if n := m.logs(t); n != idleKeys {
				t.Fatalf("%d logs kept, want %d", n, idleKeys)
			}
			c.advance(2 * time.Minute)
			for range 4 * sweepEvery {
				allow(t, m, "live", 5, time.Minute)
			}
			if n := m.logs(t); n != 1 {
				t.Fatalf("%d logs kept after sweeps, want only the live one", n)
			}
		})
	}
}

// TestLimitChangeStartsAgain: a key asked with another limit starts a new
// log, on both limiters.
func TestLimitChangeStartsAgain(t *testing.T) {
	for _, tc := range limiters {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Unix(0, 0)}
			m := tc.open(t, c.now)
			allow(t, m, "k", 1, time.Minute)
			if d := allow(t, m, "k", 1, time.Minute); d.Allowed {
				t.Fatalf("second call within limit 1: %+v", d)
			}
			if d := allow(t, m, "k", 2, time.Minute); !d.Allowed || d.Remaining != 1 {
				t.Fatalf("new limit: %+v, want a fresh log", d)
			}
		})
	}
}

// TestStoreExpiredLogReplaced: the next admission on a log whose every
// entry left the window writes a log of that admission alone.
func TestStoreExpiredLogReplaced(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	s := storetest.Pebble.Open(t, 1)[0]
	l := NewStore(s, c.now)
	for range 3 {
		allow(t, l, "k", 5, time.Minute)
	}
	c.advance(time.Minute)
	allow(t, l, "k", 5, time.Minute)
	raw, err := s.Get(t.Context(), logKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	times, err := readLog(t.Context(), s, logKey("k"), 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != 1 || !times[0].Equal(c.now()) {
		t.Fatalf("log %x holds %v, want only the admission at %v", raw, times, c.now())
	}
}

// TestStoreError: a store that fails makes Allow fail, with the cause
// recognizable, and admits nothing.
func TestStoreError(t *testing.T) {
	s := storetest.Pebble.Open(t, 1)[0]
	l := NewStore(s, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := l.Allow(context.Background(), "k", 5, time.Minute)
	if !errors.Is(err, kv.ErrClosed) || d.Allowed {
		t.Fatalf("Allow on a closed store = %+v, %v; want kv.ErrClosed", d, err)
	}
	// A store on another machine that cannot be reached: the error stays
	// kv.ErrUnavailable, which the API answers 503.
	down := NewStore(unreachable{storetest.Pebble.Open(t, 1)[0]}, nil)
	if _, err := down.Allow(context.Background(), "k", 5, time.Minute); !errors.Is(err, kv.ErrUnavailable) || apierr.From(err).Status != http.StatusServiceUnavailable {
		t.Fatalf("Allow on an unreachable store: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l2 := NewStore(storetest.Pebble.Open(t, 1)[0], nil)
	if _, err := l2.Allow(ctx, "k", 5, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Allow with a canceled context: %v, want context.Canceled", err)
	}
}

// unreachable is a store whose server cannot be reached.
type unreachable struct{ kv.Store }

func (unreachable) Update(context.Context, string, func(kv.Txn) error) error {
	return kv.ErrUnavailable
}

// TestStoreSharedAcrossProcesses: two limiters on two handles of one
// PostgreSQL database share each key's window exactly, one after the
// other and concurrently.
func TestStoreSharedAcrossProcesses(t *testing.T) {
	pair := storetest.Postgres.Pair(t)
	a, b := pair[0], pair[1]
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	la, lb := NewStore(a, c.now), NewStore(b, c.now)
	for i := range WriteQuota {
		l := la
		if i%3 == 0 {
			l = lb
		}
		if d := allow(t, l, "org|proxy:write", WriteQuota, Window); !d.Allowed || d.Remaining != WriteQuota-1-i {
			t.Fatalf("write %d: %+v", i, d)
		}
		c.advance(time.Second)
	}
	for name, l := range map[string]Limiter{"a": la, "b": lb} {
		if d := allow(t, l, "org|proxy:write", WriteQuota, Window); d.Allowed || d.RetryAfter != Window-WriteQuota*time.Second {
			t.Fatalf("write 21 on origin %s: %+v, want rejected until the first leaves the window", name, d)
		}
	}
	c.advance(Window - WriteQuota*time.Second)
	if d := allow(t, lb, "org|proxy:write", WriteQuota, Window); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after the first left the window: %+v", d)
	}
	if d := allow(t, la, "org|proxy:write", WriteQuota, Window); d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("next on the other origin: %+v, want RetryAfter 1s", d)
	}

	t.Run("concurrent", func(t *testing.T) {
		hammer(t, []Limiter{NewStore(a, nil), NewStore(b, nil)}, 16, 20)
	})
}

func TestGroupQuotas(t *testing.T) {
	tests := []struct {
		g    Group
		want int
	}{
		{APIKeyRead, 100}, {APIKeyWrite, 20}, {ProxyRead, 100}, {ProxyWrite, 20},
		{StorageDestinationRead, 100}, {StorageDestinationWrite, 20}, {OGConfigRead, 100}, {OGConfigWrite, 20},
	}
	for _, tc := range tests {
		if got := tc.g.Quota(); got != tc.want {
			t.Errorf("%s quota = %d, want %d", tc.g, got, tc.want)
		}
	}
}

// BenchmarkAllow measures one admission on each limiter (the store's on
// pebble): the window is short, so every call is admitted and writes.
func BenchmarkAllow(b *testing.B) {
	for _, tc := range limiters {
		b.Run(tc.name, func(b *testing.B) {
			var l Limiter
			if tc.name == "memory" {
				l = NewMemory(nil)
			} else {
				s, err := pebblekv.Open(filepath.Join(b.TempDir(), "kv"), pebblekv.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				l = NewStore(s, nil)
			}
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				if _, err := l.Allow(ctx, "org|g", 100, time.Millisecond); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
