package pgkv

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pictorhq/pictor/kv"
)

// maxUpdateStripes is the most in-process stripes Update's lock names hash
// onto. A process has at most one connection per stripe in Updates, and
// at most half of its pool, so that other calls keep connections.
const maxUpdateStripes = 8

// lockNamespace prefixes a lock name before it is hashed into an advisory
// lock key, to keep Update's keys apart from other users of advisory locks.
// It never changes: processes of different versions must agree on the keys.
const lockNamespace = "pictor/kv.Update\x00"

// cancelGrace is how long a statement that waits for the advisory lock may
// outlive its Update's context: the cancel request sent when the context
// ends should stop it first, and the grace only bounds a server that does
// not answer.
const cancelGrace = 5 * time.Second

// lockKey is the advisory lock key of a lock name: the first 8 bytes of
// the SHA-256 of the namespaced name, the same in every process.
func lockKey(name string) int64 {
	sum := sha256.Sum256([]byte(lockNamespace + name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// locks are the in-process stripes (kv.Stripes) taken before the advisory
// lock, so that Updates waiting on one name wait here, without a
// connection.
type locks struct{ stripes kv.Stripes }

func newLocks(maxConns int32) *locks {
	return &locks{stripes: kv.NewStripes(min(maxUpdateStripes, int(maxConns)/2))}
}

func (l *locks) acquire(ctx context.Context, key int64) (release func(), err error) {
	return l.stripes.Acquire(ctx, uint64(key))
}

// Update implements kv.Store. It takes the lock name's in-process stripe,
// then one pooled connection, on which it runs BEGIN and waits for
// pg_advisory_xact_lock of the name's key: the lock every process sharing
// the database agrees on, released by COMMIT, ROLLBACK or a lost
// connection. fn then reads and writes in that READ COMMITTED transaction,
// committed when it returns nil and rolled back otherwise.
//
// ctx bounds the whole call, waits included, and Options.OpTimeout too
// when ctx has no deadline; the wait for the advisory lock is also a
// statement, bounded by Options.StatementTimeout. When ctx ends during a
// wait, Update returns ctx.Err(); when a timeout passes, an error wrapping
// ErrUnavailable. Close ends the Updates in flight with kv.ErrClosed.
//
// A failed statement aborts the transaction: later calls on the txn return
// its error, and so does Update even if fn returns nil. A failure to reach
// the server wraps ErrUnavailable; one during COMMIT may or may not have
// applied the writes, and fn is never run again.
func (s *Store) Update(ctx context.Context, lock string, fn func(kv.Txn) error) error {
	if s.closed.Load() {
		return s.closedErr("update")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	uctx, cancel := s.updateContext(ctx)
	defer cancel()
	key := lockKey(lock)
	release, err := s.locks.acquire(uctx, key)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case s.closed.Load():
			return s.closedErr("update")
		}
		// OpTimeout passed while other Updates of this process held the
		// stripe: the database is too slow to answer in time.
		return fmt.Errorf("pgkv: update on %s: waiting for the lock: %w: %w", s.host, ErrUnavailable, err)
	}
	defer release()

	c, err := s.beginLocked(ctx, uctx, key)
	if err != nil {
		return err
	}
	t := &txn{s: s, parent: ctx, ctx: uctx, c: c}
	committed := false
	defer func() {
		t.close()
		if !committed {
			s.rollback(c)
		}
		c.Release()
	}()

	if err := fn(t); err != nil {
		return err
	}
	if err := t.close(); err != nil {
		return err
	}
	// Nothing was sent yet: a caller that gave up, or a store closing,
	// gets a transaction rolled back rather than an ambiguous commit.
	if err := ctx.Err(); err != nil {
		return err
	}
	if uctx.Err() != nil {
		return s.updateErr(ctx, "update", c, uctx.Err())
	}
	// Once sent, COMMIT is not interrupted by ctx: only a lost server makes
	// its outcome unknown.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.OpTimeout)
	defer ccancel()
	tag, err := c.Exec(cctx, sqlCommit)
	if err != nil {
		lost := c.Conn().IsClosed()
		if lost {
			s.pool.Reset()
		}
		return s.fail("update commit", err, lost || unavailable(err))
	}
	committed = true
	if tag.String() != "COMMIT" {
		// The server rolled back a transaction it had aborted.
		return s.fail("update commit", fmt.Errorf("transaction rolled back (%s)", tag), false)
	}
	s.recovered()
	return nil
}

// updateContext is ctx, bounded by Options.OpTimeout when ctx has no
// deadline, and ended by Close.
func (s *Store) updateContext(ctx context.Context) (context.Context, context.CancelFunc) {
	var uctx context.Context
	var cancel context.CancelFunc
	if _, ok := ctx.Deadline(); ok {
		uctx, cancel = context.WithCancel(ctx)
	} else {
		uctx, cancel = context.WithTimeout(ctx, s.opts.OpTimeout)
	}
	stop := context.AfterFunc(s.closing, cancel)
	return uctx, func() {
		stop()
		cancel()
	}
}

// beginLocked takes a pooled connection and starts a transaction holding
// the advisory lock key on it. Nothing has run yet, so a connection found
// dead (a restarted server leaves only dead ones in the pool) is replaced
// once.
func (s *Store) beginLocked(ctx, uctx context.Context, key int64) (*pgxpool.Conn, error) {
	sql := fmt.Sprintf(sqlBeginLocked, key)
	for attempt := 0; ; attempt++ {
		c, err := s.pool.Acquire(uctx)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case s.closed.Load():
				return nil, s.closedErr("update")
			}
			unav := unavailable(err)
			if unav && attempt == 0 && uctx.Err() == nil {
				continue // nothing was sent
			}
			return nil, s.fail("update", err, unav)
		}
		err = s.waitLock(uctx, c, sql)
		if err == nil {
			return c, nil
		}
		lost := c.Conn().IsClosed()
		s.rollback(c)
		c.Release()
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case s.closed.Load():
			return nil, s.closedErr("update")
		}
		if lost {
			s.pool.Reset()
		}
		if attempt == 0 && uctx.Err() == nil && (lost || pgconn.SafeToRetry(err)) {
			continue
		}
		return nil, s.fail("update lock", err, lost || unavailable(err))
	}
}

// waitLock runs sql, which begins the transaction and waits for the
// advisory lock, on c. When uctx ends first, a cancel request makes the
// server stop waiting: pgx alone would drop the connection, and a server
// blocked on a lock does not notice that and would keep its place in the
// lock's queue. waitLock returns once the statement has ended; if uctx
// ended meanwhile, it returns uctx's error even when the lock was taken.
func (s *Store) waitLock(uctx context.Context, c *pgxpool.Conn, sql string) error {
	deadline, _ := uctx.Deadline()
	sctx, cancel := context.WithDeadline(context.WithoutCancel(uctx), deadline.Add(cancelGrace))
	defer cancel()
	sent := make(chan struct{})
	stop := context.AfterFunc(uctx, func() {
		defer close(sent)
		rctx, rcancel := context.WithTimeout(sctx, cancelGrace)
		defer rcancel()
		c.Conn().PgConn().CancelRequest(rctx)
	})
	_, err := c.Exec(sctx, sql)
	if !stop() {
		// Wait for the request to be delivered, so that it cannot hit a
		// later statement on this connection.
		<-sent
		if err == nil {
			err = uctx.Err()
		}
	}
	return err
}

// rollback ends c's transaction, if any; a connection whose rollback fails
// is not idle, and the pool destroys it on release.
func (s *Store) rollback(c *pgxpool.Conn) {
	if c.Conn().IsClosed() || c.Conn().PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.OpTimeout)
	defer cancel()
	c.Exec(ctx, sqlRollback)
}

// updateErr maps a failure within an Update: the caller's ctx ending gives
// its error, Close kv.ErrClosed, and the rest is wrapped like the failures
// of other calls.
// A connection dropped because ctx ended says nothing of the server; one
// lost otherwise resets the pool, as in run.
func (s *Store) updateErr(ctx context.Context, op string, c *pgxpool.Conn, err error) error {
	switch {
	case s.closed.Load():
		return s.closedErr(op)
	case ctx.Err() != nil:
		return fmt.Errorf("pgkv: %s on %s: %w", op, s.host, ctx.Err())
	}
	lost := c.Conn().IsClosed()
	if lost {
		s.pool.Reset()
	}
	return s.fail(op, err, lost || unavailable(err))
}

// txn is an Update's view: its calls run in turn on the Update's
// connection until fn returns.
type txn struct {
	s      *Store
	parent context.Context // the caller's
	ctx    context.Context // the Update's: parent, OpTimeout, Close

	mu   sync.Mutex
	c    *pgxpool.Conn
	done bool
	err  error // the failure that aborted the transaction
}

var _ kv.Txn = (*txn)(nil)

// close ends the txn's use by fn and returns the failure that aborted the
// transaction, if any.
func (t *txn) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	return t.err
}

// do runs fn on the transaction within Options.OpTimeout. A failure other
// than kv.ErrNotFound aborted the transaction: it is kept and returned by
// every later call.
func (t *txn) do(parent context.Context, op string, fn func(context.Context, querier) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return fmt.Errorf("pgkv: update %s on %s after fn returned: %w", op, t.s.host, kv.ErrClosed)
	}
	if t.err != nil {
		return t.err
	}
	if err := parent.Err(); err != nil {
		return t.s.canceled("update "+op, err)
	}
	ctx, cancel := context.WithTimeout(parent, t.s.opts.OpTimeout)
	defer context.AfterFunc(t.ctx, cancel)()
	defer cancel()
	err := fn(ctx, t.c)
	if err == nil || errors.Is(err, kv.ErrNotFound) {
		return err
	}
	t.err = t.s.updateErr(t.parent, "update "+op, t.c, err)
	return t.err
}

func (t *txn) Get(ctx context.Context, key []byte) ([]byte, error) {
	var v []byte
	err := t.do(ctx, "get", func(ctx context.Context, q querier) error {
		var err error
		v, err = get(ctx, q, key)
		return err
	})
	return v, err
}

// Iterate pages through the transaction like the store's iteration; each
// page sees the transaction's writes made before it.
func (t *txn) Iterate(ctx context.Context, prefix []byte, opts kv.IterOptions) kv.Iterator {
	return newIter(ctx, prefix, opts, t.s.opts.PageSize, func(sql string, args []any) (page []row, truncated bool, err error) {
		err = t.do(ctx, "iterate", func(ctx context.Context, q querier) error {
			page, truncated, err = readPage(ctx, q, sql, args)
			return err
		})
		return page, truncated, err
	})
}

func (t *txn) Put(key, value []byte) error {
	return t.do(t.ctx, "put", func(ctx context.Context, q querier) error {
		_, err := q.Exec(ctx, sqlPut, nonNil(key), nonNil(value))
		return err
	})
}

func (t *txn) Delete(key []byte) error {
	return t.do(t.ctx, "delete", func(ctx context.Context, q querier) error {
		_, err := q.Exec(ctx, sqlDelete, nonNil(key))
		return err
	})
}
