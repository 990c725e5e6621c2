package pgkv

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations[i] takes the schema from version i to version i+1. Append
// only: a released migration never changes, since databases record which
// versions they applied. Each runs in the transaction that records it.
var migrations = []string{
	// 1: the records. bytea compares bytewise, as bytes.Compare does, and
	// has no collation.
	`CREATE TABLE kv (
		k bytea PRIMARY KEY,
		v bytea NOT NULL
	)`,
}

// migrationLock is the advisory lock key that serializes migrations of one
// database across processes ("pictorkv").
const migrationLock int64 = 0x706963746f726b76

// migrate brings the database to version len(list) in one transaction,
// under a transaction-scoped advisory lock, so that processes starting
// together apply each migration once. It returns the versions it applied.
func migrate(ctx context.Context, pool *pgxpool.Pool, list []string) ([]int, error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	tx, err := c.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(ctx)
	for _, q := range []string{
		// Waiting for another process's migrations, and long migrations,
		// are bounded by ctx instead.
		`SET LOCAL statement_timeout = 0`,
		`SET LOCAL idle_in_transaction_session_timeout = 0`,
		fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, migrationLock),
		`CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
	}
	var current int
	// The simple protocol keeps these one-off statements out of the pooled
	// connection's statement cache.
	simple := pgx.QueryExecModeSimpleProtocol
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`, simple).Scan(&current); err != nil {
		return nil, fmt.Errorf("migrate: read schema version: %w", err)
	}
	if current > len(list) {
		return nil, fmt.Errorf("%w: the database is at version %d, this binary knows up to %d; upgrade Pictor", ErrSchemaTooNew, current, len(list))
	}
	var applied []int
	for v := current + 1; v <= len(list); v++ {
		if _, err := tx.Exec(ctx, list[v-1]); err != nil {
			return nil, fmt.Errorf("migrate to version %d: %w", v, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, simple, v); err != nil {
			return nil, fmt.Errorf("record schema version %d: %w", v, err)
		}
		applied = append(applied, v)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("migrate: commit: %w", err)
	}
	return applied, nil
}
