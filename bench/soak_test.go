package bench

import (
	"strings"
	"testing"

	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/proc"
)

// soakSeries returns samples every 10 renders up to 1,000, with PSS from
// pss(renders).
func soakSeries(pss func(renders int) int64) []load.MemorySample {
	var out []load.MemorySample
	for n := 0; n <= 1000; n += 10 {
		out = append(out, load.MemorySample{Renders: n, Memory: proc.Memory{PSS: pss(n), RSS: 2 * pss(n), Processes: 9}})
	}
	return out
}

// withCache sets each sample's edge cache size to what PSS grew by past
// base.
func withCache(samples []load.MemorySample, base int64) []load.MemorySample {
	for i := range samples {
		samples[i].CacheBytes = max(0, samples[i].PSS-base)
	}
	return samples
}

func TestSoakChecks(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name       string
		pss        func(int) int64
		peak, flat bool
	}{
		{"flat and small", func(n int) int64 { return 600*mib + int64(n%30)*mib }, true, true},
		{"leaking", func(n int) int64 { return 500*mib + int64(n)*mib/2 }, true, false},
		{"growing by 8 %", func(n int) int64 { return 700*mib + int64(n)*mib/15 }, true, false},
		{"too big", func(int) int64 { return 1600 * mib }, false, true},
		// PSS grows as the edge's memory cache fills: the flatness is
		// judged once it is full, cache included.
		{"cache filling, then flat", func(n int) int64 { return 600*mib + int64(min(n, 300))*mib/2 }, true, true},
		{"cache still filling at the end", func(n int) int64 { return 600*mib + int64(n)*mib/2 }, true, false},
		{"one spike over the limit", func(n int) int64 {
			if n == 500 {
				return 1700 * mib
			}
			return 700 * mib
		}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			series := soakSeries(tc.pss)
			if strings.HasPrefix(tc.name, "cache") {
				series = withCache(series, 600*mib)
			}
			res := []*load.Result{{Name: "soak/pool-full", Memory: series}}
			got := Evaluate(soakChecks(), res)
			if len(got) != 2 {
				t.Fatalf("%d checks applied, want 2: %+v", len(got), got)
			}
			if got[0].Pass != tc.peak || got[1].Pass != tc.flat {
				t.Errorf("peak pass %v (%s), flat pass %v (%s); want %v, %v",
					got[0].Pass, got[0].Measured, got[1].Pass, got[1].Measured, tc.peak, tc.flat)
			}
		})
	}
	if got := Evaluate(soakChecks(), nil); len(got) != 0 {
		t.Errorf("the soak checks applied without a soak run: %+v", got)
	}
}

func TestSoakWindows(t *testing.T) {
	const mib = 1 << 20
	samples := soakSeries(func(n int) int64 { return int64(n) * mib })
	warm, end, peak, ok := soakWindows(samples)
	// Second fifth: renders 200..390, mean 295; last fifth: 800..1000, mean 900.
	if !ok || warm != 295*mib || end != 900*mib || peak != 1000*mib {
		t.Errorf("soakWindows = %d, %d, %d, %v MiB; want 295, 900, 1000, true", warm/mib, end/mib, peak/mib, ok)
	}
	if _, _, _, ok := soakWindows(samples[:1]); ok {
		t.Error("one sample gave windows")
	}
	// A cache growing to 450 MiB at 450 renders is full (95 %) at 430: the
	// warm window is 430..620, mean 525.
	filled := soakSeries(func(n int) int64 { return int64(n) * mib })
	for i := range filled {
		filled[i].CacheBytes = int64(min(filled[i].Renders, 450)) * mib
	}
	if warm, end, _, ok := soakWindows(filled); !ok || warm != 525*mib || end != 900*mib {
		t.Errorf("soakWindows with the cache full at 450 = %d, %d MiB, %v; want 525, 900, true", warm/mib, end/mib, ok)
	}
	// Full only at 700: no window after it that ends before the last fifth.
	for i := range filled {
		filled[i].CacheBytes = int64(min(filled[i].Renders, 700)) * mib
	}
	if _, _, _, ok := soakWindows(filled); ok {
		t.Error("a cache full at 700 of 1000 renders gave windows")
	}
	note := soakNote(samples)
	for _, want := range []string{"0 MiB at start", "1000 MiB after 1000 renders", "peak 1000 MiB", "9 processes", "2000 MiB"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
}
