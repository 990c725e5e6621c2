package pebblekv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/pictorhq/pictor/kv"
)

// lockFile is held with flock(2) for as long as the store is open.
const lockFile = "pictor.lock"

// Options configure Open.
type Options struct {
	// FS replaces the operating system's file system, e.g. vfs.NewMem() in
	// tests. The process lock is only taken on the real file system.
	FS vfs.FS
	// CacheBytes sizes pebble's block cache; 0 picks 32 MiB.
	CacheBytes int64
	// Logger receives pebble's own log lines; nil discards informational ones.
	Logger *slog.Logger
	// ReadOnly opens an existing store without writing to it, nor taking
	// the process lock: for a checkpoint (Checkpoint) no other process
	// opens. Every write fails.
	ReadOnly bool
}

// Store is a kv.Store backed by pebble.
type Store struct {
	db   *pebble.DB
	lock *os.File
	// closed guards every call: pebble panics when used after Close.
	// Callers must not race Close with other calls.
	closed atomic.Bool
	mu     sync.Mutex
	snaps  map[*snapshot]struct{}
	locks  *locks // Update's named locks
}

var _ kv.Store = (*Store)(nil)

// Open opens (creating if needed) the store in dir. It returns an error
// wrapping kv.ErrLocked when another process already has dir open.
func Open(dir string, opts Options) (*Store, error) {
	fs := opts.FS
	var lock *os.File
	if fs == nil {
		fs = vfs.Default
	}
	if opts.FS == nil && !opts.ReadOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create store directory: %w", err)
		}
		var err error
		if lock, err = acquireLock(dir); err != nil {
			return nil, err
		}
	}
	cacheBytes := opts.CacheBytes
	if cacheBytes <= 0 {
		cacheBytes = 32 << 20
	}
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	db, err := pebble.Open(dir, &pebble.Options{
		FS:                 fs,
		Cache:              cache,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{opts.Logger},
		ReadOnly:           opts.ReadOnly,
		ErrorIfNotExists:   opts.ReadOnly,
	})
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return &Store{db: db, lock: lock, snaps: map[*snapshot]struct{}{}, locks: newLocks()}, nil
}

func acquireLock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open store lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", kv.ErrLocked, dir)
		}
		return nil, fmt.Errorf("lock store %s: %w", dir, err)
	}
	return f, nil
}

// Get implements kv.Reader.
func (s *Store) Get(ctx context.Context, key []byte) ([]byte, error) {
	if s.closed.Load() {
		return nil, kv.ErrClosed
	}
	return get(ctx, s.db, key)
}

// Iterate implements kv.Reader.
func (s *Store) Iterate(ctx context.Context, prefix []byte, opts kv.IterOptions) kv.Iterator {
	if s.closed.Load() {
		return &iter{err: kv.ErrClosed}
	}
	return newIter(ctx, s.db, prefix, opts)
}

// Put implements kv.Writer; it returns once the write is synced.
func (s *Store) Put(key, value []byte) error {
	if s.closed.Load() {
		return kv.ErrClosed
	}
	return s.db.Set(key, value, pebble.Sync)
}

// Delete implements kv.Writer; it returns once the delete is synced.
func (s *Store) Delete(key []byte) error {
	if s.closed.Load() {
		return kv.ErrClosed
	}
	return s.db.Delete(key, pebble.Sync)
}

// NewBatch implements kv.Store.
func (s *Store) NewBatch() kv.Batch {
	if s.closed.Load() {
		return &batch{s: s}
	}
	return &batch{s: s, b: s.db.NewBatch()}
}

// Snapshot implements kv.Store.
func (s *Store) Snapshot() kv.Snapshot {
	if s.closed.Load() {
		return &snapshot{st: s}
	}
	sn := &snapshot{st: s, s: s.db.NewSnapshot()}
	s.mu.Lock()
	if s.snaps != nil {
		s.snaps[sn] = struct{}{}
	}
	s.mu.Unlock()
	return sn
}

// Checkpoint writes a consistent copy of the store as of now into dir,
// which must not exist: a store Open reads as it is (hard links to the
// immutable table files where the file system allows, copies otherwise).
// Writes acknowledged before the call are in it; later ones are not.
func (s *Store) Checkpoint(dir string) error {
	if s.closed.Load() {
		return kv.ErrClosed
	}
	if err := s.db.Checkpoint(dir, pebble.WithFlushedWAL()); err != nil {
		return fmt.Errorf("checkpoint store into %s: %w", dir, err)
	}
	return nil
}

// Close closes open snapshots, flushes and closes the database, then
// releases the process lock. Closing again does nothing.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	snaps := s.snaps
	s.snaps = nil
	s.mu.Unlock()
	for sn := range snaps {
		sn.release()
	}
	err := s.db.Close()
	if s.lock != nil {
		if cerr := s.lock.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

type getter interface {
	Get(key []byte) ([]byte, io.Closer, error)
}

// get reads key from g. pebble reads do not block on anything ctx could
// cancel, so ctx is checked once, before the read.
func get(ctx context.Context, g getter, key []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, closer, err := g.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, nil
}

// batch is a pebble batch, or nil when made after Close.
type batch struct {
	s *Store
	b *pebble.Batch
}

func (b *batch) Put(key, value []byte) error {
	if b.b == nil {
		return kv.ErrClosed
	}
	return b.b.Set(key, value, nil)
}

func (b *batch) Delete(key []byte) error {
	if b.b == nil {
		return kv.ErrClosed
	}
	return b.b.Delete(key, nil)
}

func (b *batch) Commit() error {
	if b.b == nil || b.s.closed.Load() {
		return kv.ErrClosed
	}
	return b.b.Commit(pebble.Sync)
}

func (b *batch) Close() error {
	if b.b == nil {
		return nil
	}
	err := b.b.Close()
	b.b = nil
	return err
}

// snapshot is a pebble snapshot; s is nil once the snapshot or the store
// is closed.
type snapshot struct {
	st *Store
	mu sync.RWMutex
	s  *pebble.Snapshot
}

func (s *snapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.s == nil {
		return nil, kv.ErrClosed
	}
	return get(ctx, s.s, key)
}

func (s *snapshot) Iterate(ctx context.Context, prefix []byte, opts kv.IterOptions) kv.Iterator {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.s == nil {
		return &iter{err: kv.ErrClosed}
	}
	return newIter(ctx, s.s, prefix, opts)
}

func (s *snapshot) Close() error {
	err := s.release()
	s.st.mu.Lock()
	delete(s.st.snaps, s)
	s.st.mu.Unlock()
	return err
}

func (s *snapshot) release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.s == nil {
		return nil
	}
	err := s.s.Close()
	s.s = nil
	return err
}

type iterSource interface {
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

type iter struct {
	ctx     context.Context
	it      *pebble.Iterator
	err     error
	reverse bool
	started bool
}

func newIter(ctx context.Context, src iterSource, prefix []byte, opts kv.IterOptions) kv.Iterator {
	bounds := &pebble.IterOptions{UpperBound: kv.PrefixEnd(prefix)}
	if len(prefix) > 0 {
		// pebble (with invariants, as under -race) indexes the first
		// byte of a non-nil bound.
		bounds.LowerBound = prefix
	}
	if opts.Reverse && opts.After != nil && len(opts.After) == 0 {
		// Strictly before the empty key: nothing.
		return &iter{}
	}
	if opts.After != nil {
		if opts.Reverse {
			if bounds.UpperBound == nil || bytes.Compare(opts.After, bounds.UpperBound) < 0 {
				bounds.UpperBound = opts.After
			}
		} else if next := append(append([]byte(nil), opts.After...), 0); bytes.Compare(next, bounds.LowerBound) > 0 {
			// next is the smallest key strictly greater than After.
			bounds.LowerBound = next
		}
	}
	if err := ctx.Err(); err != nil {
		return &iter{err: err}
	}
	it, err := src.NewIter(bounds)
	return &iter{ctx: ctx, it: it, err: err, reverse: opts.Reverse}
}

// Next steps the walk; once the walk's ctx is done it stops, and Err
// returns ctx's error.
func (i *iter) Next() bool {
	if i.err != nil || i.it == nil {
		return false
	}
	if err := i.ctx.Err(); err != nil {
		i.err = err
		return false
	}
	if !i.started {
		i.started = true
		if i.reverse {
			return i.it.Last()
		}
		return i.it.First()
	}
	if i.reverse {
		return i.it.Prev()
	}
	return i.it.Next()
}

func (i *iter) Key() []byte   { return i.it.Key() }
func (i *iter) Value() []byte { return i.it.Value() }

func (i *iter) Err() error {
	if i.err != nil || i.it == nil {
		return i.err
	}
	return i.it.Error()
}

func (i *iter) Close() error {
	if i.it == nil {
		return i.err
	}
	return i.it.Close()
}

// pebbleLogger forwards pebble's errors to slog and drops its chatter.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(string, ...any) {}
func (p pebbleLogger) Errorf(format string, args ...any) {
	if p.l != nil {
		p.l.Error("pebble", "detail", fmt.Sprintf(format, args...))
	}
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
