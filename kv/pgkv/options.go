package pgkv

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults for the zero fields of Options.
const (
	DefaultMaxConns         = 16
	DefaultConnectTimeout   = 5 * time.Second
	DefaultStatementTimeout = 15 * time.Second
	DefaultOpTimeout        = 30 * time.Second
	DefaultSnapshotLifetime = time.Minute
	DefaultPageSize         = 256
)

// Options configure Open. The zero value picks the defaults above; the URL's
// own pool_max_conns and connect_timeout parameters apply when the matching
// field is zero.
type Options struct {
	// MaxConns caps the connection pool. Every open snapshot holds one
	// connection until it is closed, so it must exceed the number of
	// snapshots open at once. Updates hold at most half of the pool (and
	// at most 8 connections): their lock names hash onto that many
	// in-process stripes, and an Update waits for its stripe before it
	// takes a connection.
	MaxConns int32
	// ConnectTimeout bounds dialing and authenticating one connection.
	ConnectTimeout time.Duration
	// StatementTimeout is the server's statement_timeout on every connection.
	StatementTimeout time.Duration
	// OpTimeout bounds one call of the store (Get, Put, Delete, Commit, one
	// page of an iteration, starting a snapshot), including the wait for a
	// pooled connection and one reconnection.
	OpTimeout time.Duration
	// SnapshotLifetime is how long a snapshot may stay open: then its
	// transaction is rolled back, its connection returns to the pool and its
	// reads fail with ErrSnapshotExpired.
	SnapshotLifetime time.Duration
	// PageSize is the most rows one query of an iteration fetches.
	PageSize int
	// Logger receives migrations and lost connections; nil discards them.
	// Lines never carry the password.
	Logger *slog.Logger
}

// Validate reports a negative field.
func (o Options) Validate() error {
	switch {
	case o.MaxConns < 0:
		return fmt.Errorf("pgkv: MaxConns %d is negative", o.MaxConns)
	case o.ConnectTimeout < 0:
		return fmt.Errorf("pgkv: ConnectTimeout %v is negative", o.ConnectTimeout)
	case o.StatementTimeout < 0:
		return fmt.Errorf("pgkv: StatementTimeout %v is negative", o.StatementTimeout)
	case o.OpTimeout < 0:
		return fmt.Errorf("pgkv: OpTimeout %v is negative", o.OpTimeout)
	case o.SnapshotLifetime < 0:
		return fmt.Errorf("pgkv: SnapshotLifetime %v is negative", o.SnapshotLifetime)
	case o.PageSize < 0:
		return fmt.Errorf("pgkv: PageSize %d is negative", o.PageSize)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.StatementTimeout == 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	if o.OpTimeout == 0 {
		o.OpTimeout = DefaultOpTimeout
	}
	if o.SnapshotLifetime == 0 {
		o.SnapshotLifetime = DefaultSnapshotLifetime
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
