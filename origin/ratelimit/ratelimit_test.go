package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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

func TestSlidingWindow(t *testing.T) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	m := NewMemory(c.now)
	ctx := context.Background()
	for i := range 3 {
		d, _ := m.Allow(ctx, "org|g", 3, time.Minute)
		if !d.Allowed || d.Remaining != 2-i {
			t.Fatalf("call %d: %+v", i, d)
		}
		c.advance(10 * time.Second)
	}
	// Calls at t=0,10,20; now t=30.
	d, _ := m.Allow(ctx, "org|g", 3, time.Minute)
	if d.Allowed || d.RetryAfter != 30*time.Second {
		t.Fatalf("4th call: %+v, want rejected with RetryAfter 30s", d)
	}
	c.advance(30 * time.Second) // t=60: the t=0 call leaves the window.
	if d, _ := m.Allow(ctx, "org|g", 3, time.Minute); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after window slid: %+v", d)
	}
	if d, _ := m.Allow(ctx, "org|g", 3, time.Minute); d.Allowed || d.RetryAfter != 10*time.Second {
		t.Fatalf("next: %+v, want RetryAfter 10s", d)
	}
	if d, _ := m.Allow(ctx, "other|g", 3, time.Minute); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("independent key: %+v", d)
	}
}

func TestRejectionsDoNotConsume(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	m := NewMemory(c.now)
	ctx := context.Background()
	m.Allow(ctx, "k", 1, time.Minute)
	for range 10 {
		m.Allow(ctx, "k", 1, time.Minute)
	}
	c.advance(time.Minute)
	if d, _ := m.Allow(ctx, "k", 1, time.Minute); !d.Allowed {
		t.Fatalf("rejected calls extended the window: %+v", d)
	}
}

// TestHammer runs many goroutines on a few keys; exactly limit calls per key
// get through. Run with -race.
func TestHammer(t *testing.T) {
	m := NewMemory(nil)
	ctx := context.Background()
	keys := []string{"a|api-key:write", "b|api-key:write", "a|api-key:read"}
	var allowed [3]atomic.Int64
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := (g + i) % len(keys)
				if d, _ := m.Allow(ctx, keys[k], 20, time.Hour); d.Allowed {
					allowed[k].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	for i := range keys {
		if got := allowed[i].Load(); got != 20 {
			t.Fatalf("%s: %d allowed, want exactly 20", keys[i], got)
		}
	}
}

func TestSweepDropsIdleLogs(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	m := NewMemory(c.now)
	ctx := context.Background()
	for i := range 1000 {
		m.Allow(ctx, string(rune('a'+i%26))+string(rune(i)), 5, time.Minute)
	}
	c.advance(2 * time.Minute)
	for range sweepEvery {
		m.Allow(ctx, "live", 5, time.Minute)
	}
	total := 0
	for i := range m.shards {
		total += len(m.shards[i].logs)
	}
	if total > 1 {
		t.Fatalf("%d logs kept after sweeps, want only the live one", total)
	}
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
