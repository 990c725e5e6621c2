package ratelimit

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/kv"
)

// Store is the exact sliding-log limiter of Memory kept in a kv.Store, so
// that every process sharing the store draws on one window per key. Each
// key's log is one value, read and written in one kv Update under the
// key's lock; a log whose newest admission left the window is dropped by
// the next admission or by the sweep.
type Store struct {
	kv    kv.Store
	now   func() time.Time
	calls atomic.Uint64

	mu    sync.Mutex // one sweep at a time
	after []byte     // where the next sweep page starts (nil: from the first key)
}

var _ Limiter = (*Store)(nil)

// Keys:
//
//	rl/<key>  the log: uvarint limit, then the admission times (unix
//	          nanoseconds, 8 bytes big-endian each), oldest first
const storePrefix = "rl/"

func logKey(key string) []byte { return []byte(storePrefix + key) }

// lockName is the kv lock of a key's log.
func lockName(key string) string { return "ratelimit/" + key }

// sweepPage is how many logs one sweep looks at.
const sweepPage = 256

// NewStore returns a limiter over s; now may be nil for the wall clock.
func NewStore(s kv.Store, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{kv: s, now: now}
}

// Allow implements Limiter. A store error is returned as is (wrapped):
// kv.ErrUnavailable stays recognizable.
func (s *Store) Allow(ctx context.Context, key string, limit int, window time.Duration) (Decision, error) {
	now := s.now()
	if s.calls.Add(1)%sweepEvery == 0 {
		if err := s.sweep(ctx, now, window); err != nil && ctx.Err() == nil {
			slog.WarnContext(ctx, "rate limit sweep failed", "error", err)
		}
	}
	var d Decision
	err := s.kv.Update(ctx, lockName(key), func(txn kv.Txn) error {
		times, err := readLog(ctx, txn, logKey(key), limit)
		if err != nil {
			return err
		}
		times = expire(times, now, window)
		if len(times) >= limit {
			d = Decision{Limit: limit, RetryAfter: times[0].Add(window).Sub(now)}
			return nil
		}
		// Another process's clock may be behind this one's: keep the log
		// in order so that the oldest admission stays first.
		i, _ := slices.BinarySearchFunc(times, now, func(a, b time.Time) int { return a.Compare(b) })
		times = slices.Insert(times, i, now)
		d = Decision{Allowed: true, Limit: limit, Remaining: limit - len(times)}
		return txn.Put(logKey(key), encodeLog(limit, times))
	})
	if err != nil {
		return Decision{}, fmt.Errorf("update the log of %s: %w", key, err)
	}
	return d, nil
}

// readLog returns the admissions of the log at key, oldest first; a log
// kept for another limit starts again, as Memory's does.
func readLog(ctx context.Context, r kv.Reader, key []byte, limit int) ([]time.Time, error) {
	raw, err := r.Get(ctx, key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	stored, n := binary.Uvarint(raw)
	if n <= 0 || (len(raw)-n)%8 != 0 {
		return nil, nil // not a log this package wrote: start again
	}
	if stored != uint64(limit) {
		return nil, nil
	}
	raw = raw[n:]
	times := make([]time.Time, 0, len(raw)/8+1)
	for ; len(raw) > 0; raw = raw[8:] {
		times = append(times, time.Unix(0, int64(binary.BigEndian.Uint64(raw))))
	}
	return times, nil
}

func encodeLog(limit int, times []time.Time) []byte {
	b := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+8*len(times)), uint64(limit))
	for _, t := range times {
		b = binary.BigEndian.AppendUint64(b, uint64(t.UnixNano()))
	}
	return b
}

// expire drops the admissions that left the window by now.
func expire(times []time.Time, now time.Time, window time.Duration) []time.Time {
	i := 0
	for i < len(times) && !now.Before(times[i].Add(window)) {
		i++
	}
	return times[i:]
}

// idle reports whether a stored log has no admission left in the window.
func idle(raw []byte, now time.Time, window time.Duration) bool {
	_, n := binary.Uvarint(raw)
	if n <= 0 || (len(raw)-n)%8 != 0 {
		return true
	}
	if len(raw) == n {
		return true
	}
	newest := time.Unix(0, int64(binary.BigEndian.Uint64(raw[len(raw)-8:])))
	return !now.Before(newest.Add(window))
}

// sweep looks at one page of logs, after where the last sweep stopped,
// and deletes the idle ones, each under its key's lock (an admission made
// meanwhile keeps it). Only one sweep of this process runs at a time; a
// call that finds one running goes on without.
func (s *Store) sweep(ctx context.Context, now time.Time, window time.Duration) error {
	if !s.mu.TryLock() {
		return nil
	}
	defer s.mu.Unlock()
	var idleKeys []string
	it := s.kv.Iterate(ctx, []byte(storePrefix), kv.IterOptions{After: s.after})
	seen := 0
	var last []byte
	for seen < sweepPage && it.Next() {
		seen++
		last = bytes.Clone(it.Key())
		if idle(it.Value(), now, window) {
			idleKeys = append(idleKeys, string(last[len(storePrefix):]))
		}
	}
	err := it.Err()
	it.Close()
	if err != nil {
		return err
	}
	if seen < sweepPage {
		s.after = nil // the end: the next sweep starts over
	} else {
		s.after = last
	}
	for _, key := range idleKeys {
		err := s.kv.Update(ctx, lockName(key), func(txn kv.Txn) error {
			raw, err := txn.Get(ctx, logKey(key))
			if errors.Is(err, kv.ErrNotFound) {
				return nil
			}
			if err != nil || !idle(raw, now, window) {
				return err
			}
			return txn.Delete(logKey(key))
		})
		if err != nil {
			return err
		}
	}
	return nil
}
