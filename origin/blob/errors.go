package blob

import "errors"

// Sentinels of the package: every store's errors match them with
// errors.Is, whatever the implementation.
var (
	// ErrNotFound: the file does not exist.
	ErrNotFound = errors.New("blob not found")
	// ErrCorrupt: the file's content does not match the SHA-256 recorded
	// when it was written, or no SHA-256 was recorded (an object the
	// store did not write). Only stores that record checksums (S3) return
	// it.
	ErrCorrupt = errors.New("blob corrupt")
	// ErrUnavailable: the store could not be reached or kept failing (a
	// refused or broken connection, a timeout, HTTP 5xx or throttling
	// through every attempt). Another try later may work: the origin
	// answers 503, not 500.
	ErrUnavailable error = unavailableError("blob store unavailable")
	// ErrChanged: the file was replaced while an open Object was being
	// read in pieces; its remaining bytes are gone with the old version.
	ErrChanged = errors.New("blob changed while read")
)

// unavailable is an error that says so (apierr.Unavailable): the origin
// answers it 503.
type unavailableError string

func (e unavailableError) Error() string     { return string(e) }
func (e unavailableError) Unavailable() bool { return true }
