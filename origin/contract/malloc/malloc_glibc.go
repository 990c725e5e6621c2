//go:build linux && cgo

package malloc

/*
#include <malloc.h>
*/
import "C"

import "os"

// Settings, unless the environment sets glibc's own variables
// (MALLOC_MMAP_THRESHOLD_, MALLOC_ARENA_MAX), which then stand.
const (
	// MMapThreshold is the size from which a block is mapped on its own
	// and unmapped when freed. Setting it turns glibc's dynamic threshold
	// off, so it stays at its default.
	MMapThreshold = 128 << 10
	// ArenaMax bounds the malloc arenas: cgo calls run on many threads,
	// each of which would otherwise get an arena of its own.
	ArenaMax = 2
)

// Tune applies the settings; call it once, first thing in main. It
// reports what it set, for the log.
func Tune() (set map[string]int) {
	set = map[string]int{}
	if os.Getenv("MALLOC_MMAP_THRESHOLD_") == "" && C.mallopt(C.M_MMAP_THRESHOLD, MMapThreshold) == 1 {
		set["mmap_threshold"] = MMapThreshold
	}
	if os.Getenv("MALLOC_ARENA_MAX") == "" && C.mallopt(C.M_ARENA_MAX, ArenaMax) == 1 {
		set["arena_max"] = ArenaMax
	}
	return set
}

// mappedAfterRise reports whether a block of size bytes (at most 4 MiB)
// is mapped on its own once a 4 MiB block was freed: with glibc's dynamic
// threshold, freeing the 4 MiB block raises the threshold to its size, and
// smaller blocks then come from (and, freed, stay in) the heap. Blocks the
// heap has room for come from it whatever the threshold. For the tests.
func mappedAfterRise(size int) bool {
	big := C.malloc(4 << 20)
	C.free(big)
	before := C.mallinfo2().hblkhd
	block := C.malloc(C.size_t(size))
	defer C.free(block)
	return C.mallinfo2().hblkhd >= before+C.size_t(size)
}
