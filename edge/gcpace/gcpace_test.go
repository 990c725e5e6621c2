package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		name           string
		live, resident int64
		want           int
	}{
		{"nothing live yet", 0, 0, Percent},
		{"no resident part: GOGC's own", 512 * mib, 0, Percent},
		{"a small heap keeps the floor of headroom, never above Percent", 16 * mib, 0, Percent},
		{"serve's 128 MiB cache in a 178 MiB heap", 178 * mib, 128 * mib, 64 * 100 / 178},
		{"a large rest keeps its own headroom", 400 * mib, 128 * mib, (400 - 128) * 100 / 400},
		{"a cache filling the heap collects at a tenth at least", 4096 * mib, 4096 * mib, minPercent},
		{"resident above live (read at another moment) counts as live", 100 * mib, 300 * mib, 64},
		{"a negative resident counts as none", 512 * mib, -1, Percent},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PercentFor(tt.live, tt.resident); got != tt.want {
				t.Fatalf("PercentFor(%d MiB, %d MiB) = %d, want %d", tt.live/mib, tt.resident/mib, got, tt.want)
			}
		})
	}
}

func readUint(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestResidentHeapGetsNoHeadroom: with 256 MiB live by design registered,
// the collector's heap goal stays near the live heap plus the floor of
// headroom from the first collection after Register, where GOGC=100 puts
// it at twice the live heap; once the last source is removed, GOGC is Go's
// default again.
func TestResidentHeapGetsNoHeadroom(t *testing.T) {
	if v := readUint("/gc/gogc:percent"); v != Percent {
		t.Fatalf("GOGC is %d before the test, want %d", v, Percent)
	}
	resident := make([]byte, 256<<20)
	for i := range resident {
		resident[i] = byte(i) // resident: touched, live
	}
	runtime.GC() // the live heap the pacer reads holds resident
	unregister := Register(func() int64 { return int64(len(resident)) })
	runtime.GC() // the first collection under the new setting
	goal, live := readUint("/gc/heap/goal:bytes"), readUint("/gc/heap/live:bytes")
	if goal >= live+2*MinHeadroom {
		t.Fatalf("heap goal %d MiB over a live heap of %d MiB: want at most %d MiB of headroom", goal>>20, live>>20, 2*MinHeadroom>>20)
	}
	runtime.KeepAlive(resident)
	unregister()
	unregister() // a second call changes nothing
	if v := readUint("/gc/gogc:percent"); v != Percent {
		t.Fatalf("GOGC is %d once the last source is gone, want %d", v, Percent)
	}
	debug.FreeOSMemory()
}

// TestOperatorGOGCStands: with the GOGC environment variable set, Register
// leaves the collector alone.
func TestOperatorGOGCStands(t *testing.T) {
	t.Setenv("GOGC", "100")
	unregister := Register(func() int64 { return 1 << 40 })
	defer unregister()
	pacer.mu.Lock()
	running := pacer.stop != nil
	pacer.mu.Unlock()
	if running {
		t.Fatal("the pacer runs although GOGC is set")
	}
}
