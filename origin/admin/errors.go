package admin

import "errors"

// ErrNoServer is returned when no running server published an endpoint.
var ErrNoServer = errors.New("no running server published an admin endpoint")

// Errors of Restore and Verify.
var (
	// ErrInvalidArchive: the archive is not a complete, intact backup
	// (truncated, corrupted, not one at all, or holding an entry that
	// Restore refuses: a link, a directory entry, a path outside the
	// data directory's layout).
	ErrInvalidArchive = errors.New("invalid backup archive")
	// ErrNotEmpty: Restore was asked to write into a directory that holds
	// something.
	ErrNotEmpty = errors.New("the data directory is not empty")
)

// ErrBackupUnsupported: the data is not all in the data directory (a
// PostgreSQL store, blobs in S3 or in another directory), or the command
// is asked of something that cannot make a backup.
var ErrBackupUnsupported = errors.New("pictor admin backup covers the embedded store only")
