package pgkv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pictorhq/pictor/kv"
)

// The statements the store runs. They are constants so that pgx prepares
// each once per connection and finds it in its cache afterwards. Bounds are
// computed in Go: a scan has an inclusive lower bound and, unless the
// prefix is all 0xff, an exclusive upper bound.
const (
	sqlGet     = `SELECT v FROM kv WHERE k = $1`
	sqlPut     = `INSERT INTO kv (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v`
	sqlDelete  = `DELETE FROM kv WHERE k = $1`
	sqlScan    = `SELECT k, v FROM kv WHERE k >= $1 ORDER BY k LIMIT $2`
	sqlScanTo  = `SELECT k, v FROM kv WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3`
	sqlRScan   = `SELECT k, v FROM kv WHERE k >= $1 ORDER BY k DESC LIMIT $2`
	sqlRScanTo = `SELECT k, v FROM kv WHERE k >= $1 AND k < $2 ORDER BY k DESC LIMIT $3`
	// sqlSnapshot starts a snapshot in one round trip: REPEATABLE READ fixes
	// its view at the first statement, so SELECT 1 takes it now rather than
	// at the first read.
	sqlSnapshot = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 1`
	// sqlBeginLocked starts an Update in one round trip: a READ COMMITTED
	// transaction holding the advisory lock of the key formatted in. It
	// runs on the simple protocol, which leaves the statement cache alone.
	sqlBeginLocked = `BEGIN; SELECT pg_advisory_xact_lock(%d)`
	sqlCommit      = `COMMIT`
	sqlRollback    = `ROLLBACK`
)

// Store is a kv.Store on a PostgreSQL database shared by any number of
// processes. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	opts Options
	host string
	red  redactor
	log  *slog.Logger

	closed atomic.Bool
	// down is set when the database stopped answering, so that the outage
	// and the recovery are logged once each.
	down atomic.Bool
	// unavailable counts the calls that could not reach the database.
	unavailable atomic.Uint64

	// locks are Update's in-process stripes; closing ends when Close is
	// called, which ends the Updates in flight.
	locks   *locks
	closing context.Context
	stop    context.CancelFunc

	mu    sync.Mutex
	snaps map[*snapshot]struct{}
}

var _ kv.Store = (*Store)(nil)

// Open connects to the database at rawURL (postgres:// or postgresql://),
// brings its schema up to date and returns the store. ctx bounds the
// migrations; without a deadline, Options.OpTimeout does. Errors name the
// host and never the password; an unreachable server gives an error
// wrapping ErrUnavailable, a newer schema one wrapping ErrSchemaTooNew.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	host, red := describeURL(rawURL)
	if !strings.HasPrefix(rawURL, "postgres://") && !strings.HasPrefix(rawURL, "postgresql://") {
		return nil, fmt.Errorf("pgkv: the database URL for %s must start with postgres:// or postgresql://", host)
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("pgkv: invalid database URL for %s: %s", host, red.scrub(parseReason(err)))
	}
	host = net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	query := urlQuery(rawURL)
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !query.Has("pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	switch {
	case opts.ConnectTimeout > 0:
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	case cfg.ConnConfig.ConnectTimeout == 0:
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	params := cfg.ConnConfig.RuntimeParams
	params["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
	// Acknowledged writes are durable whatever the server's default.
	params["synchronous_commit"] = "on"
	// A backstop for a snapshot whose process stopped expiring it.
	params["idle_in_transaction_session_timeout"] = strconv.FormatInt((opts.SnapshotLifetime + opts.OpTimeout).Milliseconds(), 10)
	if params["application_name"] == "" {
		params["application_name"] = "pictor"
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, red.wrap(fmt.Errorf("pgkv: open %s: %w", host, err))
	}
	closing, stop := context.WithCancel(context.Background())
	s := &Store{pool: pool, opts: opts, host: host, red: red, log: opts.Logger, snaps: map[*snapshot]struct{}{},
		locks: newLocks(cfg.MaxConns), closing: closing, stop: stop}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.OpTimeout)
		defer cancel()
	}
	applied, err := migrate(ctx, pool, migrations)
	if err != nil {
		stop()
		pool.Close()
		return nil, s.fail("open", err, unavailable(err))
	}
	for _, v := range applied {
		s.log.InfoContext(ctx, "pgkv schema migrated", "host", host, "version", v)
	}
	return s, nil
}

// Get implements kv.Reader.
func (s *Store) Get(ctx context.Context, key []byte) ([]byte, error) {
	var v []byte
	err := s.do(ctx, "get", true, func(ctx context.Context, c *pgx.Conn) error {
		var err error
		v, err = get(ctx, c, key)
		return err
	})
	return v, err
}

// Iterate implements kv.Reader. The walk fetches pages of at most
// Options.PageSize rows, each in its own statement, so it holds no
// connection between calls to Next. It visits each key at most once and in
// order; a key written ahead of the walk while it runs may or may not be
// seen. Use a Snapshot for a consistent view.
func (s *Store) Iterate(ctx context.Context, prefix []byte, opts kv.IterOptions) kv.Iterator {
	return newIter(ctx, prefix, opts, s.opts.PageSize, func(sql string, args []any) (page []row, truncated bool, err error) {
		err = s.do(ctx, "iterate", true, func(ctx context.Context, c *pgx.Conn) error {
			page, truncated, err = readPage(ctx, c, sql, args)
			return err
		})
		return page, truncated, err
	})
}

// Put implements kv.Writer; it returns once the write is committed and
// flushed to the server's disk.
func (s *Store) Put(key, value []byte) error {
	return s.do(context.Background(), "put", false, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, sqlPut, nonNil(key), nonNil(value))
		return err
	})
}

// Delete implements kv.Writer; it returns once the delete is committed.
func (s *Store) Delete(key []byte) error {
	return s.do(context.Background(), "delete", false, func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, sqlDelete, nonNil(key))
		return err
	})
}

// NewBatch implements kv.Store. The batch collects its writes in memory;
// Commit applies them in one transaction.
func (s *Store) NewBatch() kv.Batch { return &batch{s: s} }

// Snapshot implements kv.Store. A snapshot is a REPEATABLE READ READ ONLY
// transaction on a connection of its own, held until Close, Store.Close or
// Options.SnapshotLifetime, whichever comes first.
func (s *Store) Snapshot() kv.Snapshot { return s.snapshot() }

// Close ends open snapshots, cancels the Updates in flight (one already
// committing finishes) and closes the connection pool once the calls in
// flight return. Later calls fail with kv.ErrClosed; closing again does
// nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return nil
	}
	s.closed.Store(true)
	snaps := s.snaps
	s.snaps = nil
	s.mu.Unlock()
	for sn := range snaps {
		sn.end(s.closedErr("snapshot"))
	}
	s.stop()
	s.pool.Close()
	return nil
}

// do runs fn on a pooled connection within Options.OpTimeout; see run.
func (s *Store) do(ctx context.Context, op string, read bool, fn func(context.Context, *pgx.Conn) error) error {
	return s.run(ctx, op, read, func(ctx context.Context, c *pgxpool.Conn) (bool, error) {
		return false, fn(ctx, c.Conn())
	})
}

// run runs fn on a pooled connection, which it releases unless fn keeps it.
// When the database cannot be reached, it resets the pool (a restarted
// server leaves every pooled connection dead) and tries once more on a new
// connection: always for reads, and for writes only when the failure shows
// that nothing was applied. Other failures are returned, wrapped with
// ErrUnavailable when the database could not be reached. parent bounds the
// call with Options.OpTimeout; when parent ends first, the error is
// parent's (the database is not marked unavailable).
func (s *Store) run(parent context.Context, op string, read bool, fn func(context.Context, *pgxpool.Conn) (keep bool, err error)) error {
	if s.closed.Load() {
		return s.closedErr(op)
	}
	if err := parent.Err(); err != nil {
		return s.canceled(op, err)
	}
	ctx, cancel := context.WithTimeout(parent, s.opts.OpTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			if s.closed.Load() {
				return s.closedErr(op)
			}
			if perr := parent.Err(); perr != nil {
				return s.canceled(op, perr)
			}
			unav := unavailable(err)
			if unav && attempt == 0 && ctx.Err() == nil {
				continue // nothing was sent
			}
			return s.fail(op, err, unav)
		}
		keep, err := fn(ctx, c)
		lost := c.Conn().IsClosed()
		if !keep {
			c.Release()
		}
		if err == nil || errors.Is(err, kv.ErrNotFound) {
			s.recovered()
			return err
		}
		if lost {
			s.pool.Reset()
		}
		if perr := parent.Err(); perr != nil {
			return s.canceled(op, perr)
		}
		unav := lost || unavailable(err)
		if unav && attempt == 0 && ctx.Err() == nil && (read || notApplied(err)) {
			continue
		}
		return s.fail(op, err, unav)
	}
}

// canceled is the error of a call whose caller's context ended: err, with
// the operation and the host.
func (s *Store) canceled(op string, err error) error {
	return fmt.Errorf("pgkv: %s on %s: %w", op, s.host, err)
}

// Stats are the store's counts since Open, for metrics.
type Stats struct {
	// Unavailable counts the calls that failed with ErrUnavailable
	// because the database could not be reached or could not answer in
	// time (not those that timed out waiting for an Update's in-process
	// stripe).
	Unavailable uint64
	// Down is set from such a failure until a call reaches the database
	// again.
	Down bool
}

// Stats returns the store's counts.
func (s *Store) Stats() Stats {
	return Stats{Unavailable: s.unavailable.Load(), Down: s.down.Load()}
}

// recovered logs, once, that the database answers again after a failure.
func (s *Store) recovered() {
	if s.down.CompareAndSwap(true, false) {
		s.log.Info("pgkv database reachable again", "host", s.host)
	}
}

// fail wraps err with the operation, the host and, when the database could
// not be reached, ErrUnavailable; the message never holds the password.
func (s *Store) fail(op string, err error, unav bool) error {
	if errors.Is(err, ErrSchemaTooNew) {
		return s.red.wrap(fmt.Errorf("pgkv: %s %s: %w", op, s.host, err))
	}
	if !unav {
		return s.red.wrap(fmt.Errorf("pgkv: %s on %s: %w", op, s.host, err))
	}
	s.unavailable.Add(1)
	if s.down.CompareAndSwap(false, true) {
		s.log.Warn("pgkv database unavailable", "host", s.host, "op", op, "err", s.red.scrub(err.Error()))
	}
	return s.red.wrap(fmt.Errorf("pgkv: %s on %s: %w: %w", op, s.host, ErrUnavailable, err))
}

func (s *Store) closedErr(op string) error {
	return fmt.Errorf("pgkv: %s on %s: %w", op, s.host, kv.ErrClosed)
}

// unavailable reports whether err means the database could not be reached
// or could not answer in time, as opposed to refusing the request.
func unavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", // admin_shutdown
			"57P02", // crash_shutdown
			"57P03", // cannot_connect_now: starting up or shutting down
			"53300", // too_many_connections
			"57014", // query_canceled: statement_timeout
			"25P03": // idle_in_transaction_session_timeout
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection_exception
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.As(err, &connectErr),
		errors.As(err, &netErr):
		return true
	}
	return pgconn.SafeToRetry(err)
}

// notAppliedError marks a write failure known to have changed nothing,
// such as one before COMMIT was sent.
type notAppliedError struct{ err error }

func (e notAppliedError) Error() string { return e.err.Error() }
func (e notAppliedError) Unwrap() error { return e.err }

// notApplied reports whether a failed write certainly changed nothing, so
// that trying it again cannot apply it twice.
func notApplied(err error) bool {
	var na notAppliedError
	return errors.As(err, &na) || pgconn.SafeToRetry(err)
}

// nonNil turns a nil slice into an empty one: pgx sends nil as NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// describeURL returns the host:port part of a database URL for messages,
// and a redactor for its password, even when the URL does not parse.
func describeURL(raw string) (string, redactor) {
	var red redactor
	if u, err := url.Parse(raw); err == nil {
		if pw, ok := u.User.Password(); ok {
			red.add(pw)
			red.add(url.QueryEscape(pw))
			red.add(url.PathEscape(pw))
		}
		for _, pw := range u.Query()["password"] {
			red.add(pw)
			red.add(url.QueryEscape(pw))
		}
		if u.Host == "" {
			return "the default host", red
		}
		return red.scrub(u.Host), red
	}
	// Best effort for what net/url refuses, usually a password with
	// unescaped special characters: the password runs from the first ':'
	// to the last '@', the host from there to the path or the query.
	rest := raw
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	if i := strings.Index(rest, "password="); i >= 0 {
		pw := rest[i+len("password="):]
		if j := strings.IndexByte(pw, '&'); j >= 0 {
			pw = pw[:j]
		}
		red.add(pw)
		if q := strings.LastIndexByte(rest[:i], '?'); q >= 0 {
			rest = rest[:q]
		}
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			red.add(pw)
		}
		rest = rest[at+1:]
	}
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		rest = rest[:i]
	}
	if rest == "" || strings.ContainsFunc(rest, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(".-_:[]%", r))
	}) {
		return "an unreadable host", red
	}
	return red.scrub(rest), red
}

// parseReason is why pgx refused a URL, without the URL: pgx masks the
// password in its message on a best-effort basis only.
func parseReason(err error) string {
	if inner := errors.Unwrap(err); inner != nil {
		return inner.Error()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		return msg[i+3:]
	}
	return "malformed"
}

func urlQuery(raw string) url.Values {
	if u, err := url.Parse(raw); err == nil {
		return u.Query()
	}
	return url.Values{}
}

// redactor removes the password from messages.
type redactor struct{ secrets []string }

func (r *redactor) add(s string) {
	if s != "" {
		r.secrets = append(r.secrets, s)
	}
}

func (r redactor) scrub(msg string) string {
	for _, s := range r.secrets {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	return msg
}

// wrap returns err with the password removed from its message; errors.Is
// and errors.As still see the chain.
func (r redactor) wrap(err error) error {
	return &redactedError{err: err, msg: r.scrub(err.Error())}
}

type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
