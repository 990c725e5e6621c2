package pgkv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pictorhq/pictor/kv"
)

// snapshot is a REPEATABLE READ READ ONLY transaction on a connection of
// its own. Reads take turns on that connection; iterations page through it
// like the store's, so nested reads during a walk work.
type snapshot struct {
	s *Store

	mu    sync.Mutex
	conn  *pgxpool.Conn // nil once ended
	err   error         // why reads fail once ended: closed, expired, broken
	timer *time.Timer
}

var _ kv.Snapshot = (*snapshot)(nil)

func (s *Store) snapshot() *snapshot {
	sn := &snapshot{s: s}
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		sn.err = s.closedErr("snapshot")
		return sn
	}
	s.snaps[sn] = struct{}{}
	s.mu.Unlock()

	err := s.run(context.Background(), "snapshot", true, func(ctx context.Context, c *pgxpool.Conn) (bool, error) {
		if _, err := c.Exec(ctx, sqlSnapshot); err != nil {
			return false, err
		}
		sn.mu.Lock()
		defer sn.mu.Unlock()
		if sn.err != nil {
			// Store.Close ended the snapshot while it started.
			_, err := c.Exec(ctx, "ROLLBACK")
			return false, err
		}
		sn.conn = c
		sn.timer = time.AfterFunc(s.opts.SnapshotLifetime, func() {
			sn.end(fmt.Errorf("pgkv: snapshot on %s open longer than %v: %w", s.host, s.opts.SnapshotLifetime, ErrSnapshotExpired))
		})
		return true, nil
	})
	if err != nil {
		sn.end(err)
	}
	return sn
}

// end rolls the transaction back, returns the connection and makes every
// later read fail with why. Only the first call counts.
func (sn *snapshot) end(why error) {
	sn.mu.Lock()
	sn.endLocked(why)
	sn.mu.Unlock()
}

func (sn *snapshot) endLocked(why error) {
	if sn.err != nil {
		return
	}
	sn.err = why
	if sn.timer != nil {
		sn.timer.Stop()
	}
	if c := sn.conn; c != nil {
		sn.conn = nil
		ctx, cancel := context.WithTimeout(context.Background(), sn.s.opts.OpTimeout)
		// A connection whose rollback fails is not idle, and the pool
		// destroys it on release.
		c.Exec(ctx, "ROLLBACK")
		cancel()
		c.Release()
	}
	sn.s.mu.Lock()
	delete(sn.s.snaps, sn)
	sn.s.mu.Unlock()
}

// read runs fn on the snapshot's connection. A failure other than
// kv.ErrNotFound ends the snapshot: its transaction is aborted or its
// connection lost.
func (sn *snapshot) read(parent context.Context, op string, fn func(context.Context, querier) error) error {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.err != nil {
		return sn.err
	}
	if err := parent.Err(); err != nil {
		return sn.s.canceled(op, err)
	}
	ctx, cancel := context.WithTimeout(parent, sn.s.opts.OpTimeout)
	defer cancel()
	err := fn(ctx, sn.conn)
	if err == nil || errors.Is(err, kv.ErrNotFound) {
		return err
	}
	lost := sn.conn.Conn().IsClosed()
	if lost {
		sn.s.pool.Reset()
	}
	err = sn.s.fail(op, err, lost || unavailable(err))
	sn.endLocked(err)
	return err
}

func (sn *snapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	var v []byte
	err := sn.read(ctx, "snapshot get", func(ctx context.Context, q querier) error {
		var err error
		v, err = get(ctx, q, key)
		return err
	})
	return v, err
}

func (sn *snapshot) Iterate(ctx context.Context, prefix []byte, opts kv.IterOptions) kv.Iterator {
	return newIter(ctx, prefix, opts, sn.s.opts.PageSize, func(sql string, args []any) (page []row, truncated bool, err error) {
		err = sn.read(ctx, "snapshot iterate", func(ctx context.Context, q querier) error {
			page, truncated, err = readPage(ctx, q, sql, args)
			return err
		})
		return page, truncated, err
	})
}

// Close ends the snapshot; closing again does nothing.
func (sn *snapshot) Close() error {
	sn.end(fmt.Errorf("pgkv: snapshot on %s: %w", sn.s.host, kv.ErrClosed))
	return nil
}
