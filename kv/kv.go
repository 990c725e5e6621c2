package kv

import "context"

// Reader is the read side shared by a Store and its snapshots.
type Reader interface {
	// Get returns a copy of the value stored under key, or ErrNotFound.
	// ctx bounds the read; a canceled ctx fails it with ctx's error.
	Get(ctx context.Context, key []byte) ([]byte, error)
	// Iterate walks the keys that start with prefix in key order (reverse
	// order when opts.Reverse is set). ctx bounds each read of the walk:
	// once it is done, Next returns false and Err returns ctx's error.
	// The iterator must be closed.
	Iterate(ctx context.Context, prefix []byte, opts IterOptions) Iterator
}

// Writer is the write side shared by a Store and a Batch.
type Writer interface {
	Put(key, value []byte) error
	Delete(key []byte) error
}

// Store is an ordered key-value store. Every write it acknowledges is durable:
// Put, Delete and Batch.Commit return only after the data reached stable storage.
type Store interface {
	Reader
	Writer
	// NewBatch starts an atomic group of writes.
	NewBatch() Batch
	// Snapshot returns a consistent read-only view of the store as of now.
	Snapshot() Snapshot
	// Update runs fn as one transaction holding lock, a name every process
	// sharing the store agrees on: two Updates with the same lock never
	// overlap, in this process or in another one. fn reads the store as
	// committed plus its own writes; its writes apply atomically and durably
	// when fn returns nil, and not at all otherwise (fn's error is returned
	// as is). fn runs at most once. It must use only txn, never the Store
	// (a store on another machine may have no connection left for it), and
	// must not call Update. Writes of keys outside the lock's family are
	// not ordered against writers that take another lock or none: the
	// caller names the lock that guards what fn reads and writes. ctx
	// bounds the wait for the lock and the transaction.
	Update(ctx context.Context, lock string, fn func(txn Txn) error) error
	Close() error
}

// Txn is the view of one Update: reads see the writes made before them.
// It is valid only while fn runs.
type Txn interface {
	Reader
	Writer
}

// Batch collects writes that Commit applies atomically and durably.
// A batch is not safe for concurrent use.
type Batch interface {
	Writer
	Commit() error
	// Close releases the batch; after Commit it is a no-op.
	Close() error
}

// Snapshot is a read-only point-in-time view. It must be closed.
type Snapshot interface {
	Reader
	Close() error
}

// IterOptions shape an iteration.
type IterOptions struct {
	// After starts the walk strictly after this key (strictly before it when
	// Reverse is set). Nil starts at the first (last) key of the prefix.
	After []byte
	// Reverse walks from the largest key to the smallest.
	Reverse bool
}

// Iterator walks keys. Key and Value are valid until the next call to Next.
type Iterator interface {
	Next() bool
	Key() []byte
	Value() []byte
	Err() error
	Close() error
}

// PrefixEnd returns the smallest key greater than every key with the prefix,
// or nil when no such key exists (the prefix is all 0xff).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
