package pebblekv

import (
	"context"
	"hash/maphash"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pictorhq/pictor/kv"
)

// lockStripes is how many stripes Update's named locks hash onto: two
// names may share a stripe and then wait for each other, never the reverse.
const lockStripes = 64

// locks are Update's named locks: only this process writes a pebble store
// (the directory lock), so in-process stripes are exclusive enough.
type locks struct {
	seed    maphash.Seed
	stripes kv.Stripes
}

func newLocks() *locks { return &locks{seed: maphash.MakeSeed(), stripes: kv.NewStripes(lockStripes)} }

func (l *locks) acquire(ctx context.Context, name string) (release func(), err error) {
	return l.stripes.Acquire(ctx, maphash.String(l.seed, name))
}

// Update implements kv.Store: fn runs once, on an indexed batch (reads see
// its writes), committed with a sync when fn returns nil.
func (s *Store) Update(ctx context.Context, lock string, fn func(kv.Txn) error) error {
	if s.closed.Load() {
		return kv.ErrClosed
	}
	// A free stripe must not win over a done ctx (select picks at random).
	if err := ctx.Err(); err != nil {
		return err
	}
	release, err := s.locks.acquire(ctx, lock)
	if err != nil {
		return err
	}
	defer release()
	if s.closed.Load() {
		return kv.ErrClosed
	}
	b := s.db.NewIndexedBatch()
	defer b.Close()
	t := &txn{b: b}
	err = fn(t)
	t.done = true
	if err != nil {
		return err
	}
	if s.closed.Load() {
		return kv.ErrClosed
	}
	// ctx bounds the transaction: one that ended while fn ran commits
	// nothing, as on PostgreSQL.
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}

// txn is an Update's view; done is set when fn returned.
type txn struct {
	b    *pebble.Batch
	done bool
}

func (t *txn) Get(ctx context.Context, key []byte) ([]byte, error) {
	if t.done {
		return nil, kv.ErrClosed
	}
	return get(ctx, t.b, key)
}

func (t *txn) Iterate(ctx context.Context, prefix []byte, opts kv.IterOptions) kv.Iterator {
	if t.done {
		return &iter{err: kv.ErrClosed}
	}
	return newIter(ctx, t.b, prefix, opts)
}

func (t *txn) Put(key, value []byte) error {
	if t.done {
		return kv.ErrClosed
	}
	return t.b.Set(key, value, nil)
}

func (t *txn) Delete(key []byte) error {
	if t.done {
		return kv.ErrClosed
	}
	return t.b.Delete(key, nil)
}
