//go:build !race

package cache

import (
	"runtime"
	"testing"
)

// Allocation counts mean nothing under the race detector (it makes
// sync.Pool drop items at random, so ristretto's access buffers are
// reallocated): these tests build without it, and `make test` runs them
// in a second, race-free pass.

// TestGetL1AllocatesNothing counts exactly: testing.AllocsPerRun rounds
// down, which would hide ristretto's access buffer, one 512-byte slice per
// 64 hits at most when it hands a full buffer to its admission policy.
func TestGetL1AllocatesNothing(t *testing.T) {
	c := openCache(t, testConfig(t))
	mustPut(t, c, "img/hot/w=600.webp", newEntry("o", "hot", "", 24<<10, 1))
	key := []byte("img/hot/w=600.webp")
	const runs = 64 * 1000
	get := func() {
		if _, lvl, _ := c.Get(key); lvl != L1 {
			t.Fatalf("level %v", lvl)
		}
	}
	get()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		get()
	}
	runtime.ReadMemStats(&after)
	perOp := float64(after.Mallocs-before.Mallocs) / runs
	t.Logf("%.4f allocations and %.2f bytes per L1 hit", perOp, float64(after.TotalAlloc-before.TotalAlloc)/runs)
	if perOp > 1.0/64 {
		t.Fatalf("an L1 hit allocates %.4f times, want 0 (at most ristretto's 1/64)", perOp)
	}
}
