// Package pgkv implements kv.Store on PostgreSQL through a pgx connection
// pool, so that several Pictor processes share one set of records. Records
// live in one table, kv (k bytea PRIMARY KEY, v bytea NOT NULL): bytea
// compares bytewise, as bytes.Compare does, so the order of the store is
// the order of the index.
//
// # Semantics
//
// Put and Delete are autocommitted statements; a batch is one transaction
// (BEGIN, its writes pipelined, COMMIT). Every connection runs with
// synchronous_commit on, so an acknowledged write is flushed to the
// server's disk. Iterate reads keyset-paginated pages (Options.PageSize rows,
// and at most 4 MiB, per statement) and holds no connection between pages: it
// sees each key once and in order, but is not a snapshot. A Snapshot is a
// REPEATABLE READ READ ONLY transaction holding one pooled connection until
// it is closed, the store is closed, or Options.SnapshotLifetime passes.
//
// Update is a READ COMMITTED transaction that first takes
// pg_advisory_xact_lock of its lock name's key (the first 8 bytes of a
// SHA-256 of the name, fixed for all versions), so Updates under one name
// never overlap across processes; the server releases the lock at COMMIT,
// ROLLBACK or when the holder's connection dies. Before a connection is
// taken, the name's in-process stripe is: Updates hold at most half of
// the pool. A wait that ctx ends is cancelled on the server too.
//
// # Schema
//
// Open applies the versioned migrations this binary knows, recorded in
// schema_migrations, in one transaction under an advisory lock, so that
// processes starting together never race; a database migrated by a newer
// binary is refused with ErrSchemaTooNew.
//
// # Failures
//
// A call that cannot reach the server fails with an error wrapping
// ErrUnavailable and the store recovers by itself when the server is back:
// a lost connection resets the pool, and reads (and writes that provably
// reached nothing) are tried once more on a new connection. A write that
// fails with ErrUnavailable after reaching the server may or may not have
// been applied. Errors name the host, never the password.
//
// Keys are limited by PostgreSQL's btree to about 2.7 KB.
package pgkv
