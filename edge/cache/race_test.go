//go:build race

package cache

// The race detector makes sync.Pool drop items at random, so ristretto's
// access buffers are reallocated and allocation counts mean nothing.
const raceEnabled = true
