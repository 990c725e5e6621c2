// Package pgkv implements kv.Store on PostgreSQL through a pgx connection
// pool, so that several Pictor processes share one set of records. Records
// live in one table, kv (k bytea PRIMARY KEY, v bytea NOT NULL): bytea
// compares bytewise, as bytes.Compare does, so the order of the store is
// the order of the index.
//
// Details: docs/internals.md, "kv/pgkv".
package pgkv
