// Package cache is the edge's two-level store of rendered images: L1 in
// memory (ristretto, cost in bytes, zero allocations on a hit) over L2 on disk
// (pebble in its own directory, checksummed, size-capped, kept across
// restarts). Secondary indexes by image, organization and tag let a purge drop
// every variant at both levels, durably, before it returns. An entry may
// carry a freshness (an OG image); the cache keeps it, the edge acts on it.
package cache
