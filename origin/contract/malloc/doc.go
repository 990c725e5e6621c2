// Package malloc sets glibc's allocator for the C memory of both tiers'
// processes: libvips' image buffers, and pebble's block cache and
// memtables (allocated with calloc when cgo is on), which come and go by
// megabytes. Left to its defaults, glibc raises its mmap threshold to the
// largest block freed (up to 32 MiB) and keeps up to eight arenas per
// core, so freed blocks stayed in the process: in a render soak the C heap
// of `pictor serve` grew by ≈ 20 MiB every 400 renders.
package malloc
