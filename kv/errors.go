package kv

import "errors"

// Sentinel errors returned by every Store implementation.
var (
	// ErrNotFound is returned by Get when the key does not exist.
	ErrNotFound = errors.New("kv: not found")
	// ErrLocked is returned by Open when another process holds the store.
	ErrLocked = errors.New("kv: store is in use by another process")
	// ErrClosed is returned by operations on a closed store.
	ErrClosed = errors.New("kv: store is closed")
	// ErrUnavailable is returned by a store on another machine that could
	// not be reached (a refused or lost connection, a restart): a later
	// try may work. It is marked Unavailable, which the origin answers
	// 503 with Retry-After rather than 500.
	ErrUnavailable error = unavailableError("kv: store unavailable")
)

type unavailableError string

func (e unavailableError) Error() string { return string(e) }

// Unavailable marks the error as a backing service that could not be
// reached (see origin/contract/apierr.Unavailable).
func (e unavailableError) Unavailable() bool { return true }
