package storedest

import "errors"

// Sentinel errors.
var (
	// ErrNotFound: the organization has no storage destination with that
	// id (another organization's is not found either).
	ErrNotFound = errors.New("storage destination not found")
	// ErrChanged: the destination was changed by someone else between the
	// read an update started from and its write.
	ErrChanged = errors.New("storage destination changed meanwhile")
	// ErrSecret: a stored secret access key does not open (wrong master key
	// or a damaged record).
	ErrSecret = errors.New("storage destination secret cannot be opened")
)
