package storedest

import (
	"time"

	"github.com/pictorhq/pictor/origin/storage"
)

// Destination is a stored storage destination: an organization's own
// S3-compatible bucket that rendered files are also written to.
type Destination struct {
	ID    string // UUIDv7, the API's path id and the image parameter storage_destination_id
	OrgID string
	Name  string
	// Disabled destinations are kept and listed; the render path does not
	// write to them.
	Disabled bool
	// HctiStorageDisabled: the service keeps no copy of its own (no service
	// storage, no CDN); files go to the bucket only.
	HctiStorageDisabled bool
	// Connection holds the validated connection settings without the
	// secret access key and without the organization's external id: ask
	// (*Store).Connection for the connection to use.
	Connection storage.Connection
	// HasSecret reports whether a secret access key is stored (every
	// provider but aws_s3).
	HasSecret bool

	// The last connection test: when it ran, whether it succeeded and, if
	// not, the provider's error in words (at most MaxTestError characters).
	LastTestedAt      time.Time
	LastTestSucceeded bool
	LastTestError     string

	// Revision is 1 at creation and grows by one at every update.
	Revision  int64
	CreatedAt time.Time
	UpdatedAt time.Time

	sealed []byte // the secret access key, sealed with ID as additional data
}

// Enabled is !Disabled.
func (d *Destination) Enabled() bool { return !d.Disabled }

// TestResult is the outcome of one connection test.
type TestResult struct {
	At        time.Time
	Succeeded bool
	Error     string // "" when it succeeded
}
