package cache

import (
	"bytes"
	"math/rand/v2"
	"sync/atomic"
)

// decoded is L2's record of entries in memory, decoded: an L2 hit that
// finds its entry there (header bytes, body file, length, checksum) skips
// pebble's read and the decoding. It is a fixed part of L2's engine memory,
// as pebble's block cache is, and holds entries without their bodies, so
// that L1 (--cache-mem) holds bodies only.
//
// A direct-mapped table of entries by key hash: a new entry replaces the
// one in its slot. Under a long tail its misses are mostly capacity misses
// (over the zipf-100k bench scenario's draws, 65,536 slots answer 64 % of
// the L2 hits a simulation makes, two choices per key 68 %), so a smarter
// table buys little. decodedBytes bounds the entries' costs (an image's
// entry costs about 600 bytes); decodedSlots is that many entries rounded
// up to a power of two.
const (
	decodedBytes = 32 << 20
	decodedSlots = 1 << 16
)

type decoded struct {
	slots []atomic.Pointer[Entry]
	mask  uint64
	bytes atomic.Int64 // the costs of the entries in slots
	max   int64
}

func newDecoded(maxBytes int64, slots int) *decoded {
	n := 1
	for n < slots {
		n *= 2
	}
	return &decoded{slots: make([]atomic.Pointer[Entry], n), mask: uint64(n - 1), max: maxBytes}
}

func (x *decoded) slot(h uint64) *atomic.Pointer[Entry] { return &x.slots[h&x.mask] }

// get returns the entry under key, whose hash is h, or nil.
func (x *decoded) get(h uint64, key []byte) *Entry {
	e := x.slot(h).Load()
	if e == nil || !bytes.Equal(e.key, key) {
		return nil
	}
	return e
}

// put keeps e, an entry whose body is on disk, in its slot. Callers order
// it against the writes that would make e stale as L1 promotions are (see
// Cache.fence): a put either lands before the write's del or is not made.
// When the entries' costs would pass the bound, put drops the entry in a
// slot drawn at random instead, so that a next one fits.
func (x *decoded) put(h uint64, e *Entry) {
	s := x.slot(h)
	old := s.Load()
	delta := e.cost
	if old != nil {
		delta -= old.cost
	}
	if x.bytes.Add(delta) > x.max {
		x.bytes.Add(-delta)
		x.drop(x.slot(rand.Uint64()))
		return
	}
	if !s.CompareAndSwap(old, e) {
		x.bytes.Add(-delta) // another put or a del came first
	}
}

// del drops the entry under key, whose hash is h, if its slot holds it.
func (x *decoded) del(h uint64, key []byte) {
	s := x.slot(h)
	if e := s.Load(); e != nil && bytes.Equal(e.key, key) && s.CompareAndSwap(e, nil) {
		x.bytes.Add(-e.cost)
	}
}

func (x *decoded) drop(s *atomic.Pointer[Entry]) {
	if e := s.Load(); e != nil && s.CompareAndSwap(e, nil) {
		x.bytes.Add(-e.cost)
	}
}

// clear drops every entry.
func (x *decoded) clear() {
	for i := range x.slots {
		x.drop(&x.slots[i])
	}
}
