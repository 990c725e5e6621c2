// Package gcpace paces Go's garbage collector around memory that is live
// by design: the bodies in the edge's memory cache. With GOGC at its
// default of 100, the heap may grow to twice what was live after the last
// collection before the next one starts, so a full 128 MiB cache alone let
// the heap of `pictor serve` reach 256 MiB more than it holds, and the
// process's memory followed the collector's high-water marks. The pacer
// gives the collector headroom for the rest of the live heap only, as
// GOGC would for a process without the cache.
package gcpace
