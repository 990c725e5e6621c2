package kv

import "context"

// Stripes are in-process locks for a store's Update: a lock name hashes
// onto one of them, so that two names may share a stripe and then wait
// for each other, never the reverse. Each stripe is a one-slot semaphore,
// so that a wait honours its context.
type Stripes []chan struct{}

// NewStripes returns n stripes (at least one).
func NewStripes(n int) Stripes {
	s := make(Stripes, max(1, n))
	for i := range s {
		s[i] = make(chan struct{}, 1)
	}
	return s
}

// Acquire takes the stripe of hash, waiting until it is free or ctx ends.
func (s Stripes) Acquire(ctx context.Context, hash uint64) (release func(), err error) {
	ch := s[hash%uint64(len(s))]
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
