// Package migrate records which data migrations a store has had, and runs
// the ones it lacks, forward only.
//
// A store's version is the number of migrations applied to it, kept under
// the key sys/schema with the name, time and binary version of each. Open
// the store, then call Apply with the binary's list: migrations past the
// recorded version run in order and are recorded one by one; a store whose
// recorded version is beyond the list (a newer binary migrated it) is
// refused with ErrTooNew, so a rolled-back binary never writes records it
// does not understand.
//
// Several processes may start on one shared store at once: each migration
// must be idempotent (running it twice, or concurrently, leaves the same
// records), and a release's records must stay readable by the release
// before it, which keeps running while the new one rolls out. The record
// itself is updated under the lock sys/schema, so no version is skipped or
// recorded twice.
package migrate
