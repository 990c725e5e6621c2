//go:build linux && cgo

package malloc

import "testing"

// TestTune: before Tune, glibc's dynamic threshold keeps a 1 MiB block in
// the heap once a 4 MiB one was freed; after it, a block the heap has no
// room for (3 MiB: the heap kept the freed 1 MiB) is mapped on its own, so
// freeing it returns it to the system.
func TestTune(t *testing.T) {
	t.Setenv("MALLOC_MMAP_THRESHOLD_", "")
	t.Setenv("MALLOC_ARENA_MAX", "")
	if mappedAfterRise(1 << 20) {
		t.Fatal("a 1 MiB block was mapped after a 4 MiB one was freed before Tune: the test would prove nothing")
	}
	set := Tune()
	if set["mmap_threshold"] != MMapThreshold || set["arena_max"] != ArenaMax {
		t.Fatalf("Tune set %v", set)
	}
	if !mappedAfterRise(3 << 20) {
		t.Fatal("after Tune, a 3 MiB block came from the heap: the threshold still moves")
	}
}
