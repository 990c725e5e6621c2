package pgkv

import (
	"errors"

	"github.com/pictorhq/pictor/kv"
)

// Sentinel errors of the PostgreSQL store, besides kv.ErrNotFound and
// kv.ErrClosed.
var (
	// ErrUnavailable wraps every failure to reach PostgreSQL: refused or lost
	// connections, a server shutting down or starting, a statement or call
	// timeout. The store recovers by itself once the server is back; the
	// caller may retry. A write that fails with it may or may not have been
	// applied.
	ErrUnavailable = kv.ErrUnavailable
	// ErrSchemaTooNew is returned by Open when the database was migrated by
	// a newer Pictor than this one.
	ErrSchemaTooNew = errors.New("pgkv: database schema is newer than this binary")
	// ErrSnapshotExpired is returned by reads on a snapshot held open longer
	// than Options.SnapshotLifetime.
	ErrSnapshotExpired = errors.New("pgkv: snapshot expired")
)
