// Package cache is the edge's two-level store of rendered images: L1 in
// memory (ristretto, cost in bytes, zero allocations on a hit) over L2 on disk
// (size-capped, kept across restarts): each body a file of its own, written
// once and sent with sendfile, and pebble in the same directory holding the
// checksummed index and metadata (bodies.go); the entries L2 hits decoded
// stay in memory without their bodies (decoded.go), so that the next hit
// skips pebble. Secondary indexes by image, organization and tag let a purge
// drop every variant at both levels, durably, before it returns. An entry may
// carry a freshness (an OG image); the cache keeps it, the edge acts on it.
package cache
