package deliver

import (
	"context"
	"errors"
	"fmt"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/rendition"
	"github.com/pictorhq/pictor/origin/storage"
	"github.com/pictorhq/pictor/origin/storedest"
)

// unavailable is an ErrUnavailable with its words.
type unavailable struct{ reason string }

func (e *unavailable) Error() string        { return e.reason }
func (e *unavailable) Is(target error) bool { return target == ErrUnavailable }

func unavailablef(format string, args ...any) error {
	return &unavailable{reason: fmt.Sprintf(format, args...)}
}

// Destinations gives images their storage destinations.
type Destinations struct {
	Dests     *storedest.Store
	Connector *storage.Connector
}

var _ rendition.Destinations = Destinations{}

// Check refuses a storage_destination_id the organization cannot use now:
// its plan has no delivery options (403), the destination is not its (404)
// or is disabled (400 naming storage_destination_id). It reports whether
// the destination keeps no service copy.
func (d Destinations) Check(ctx context.Context, o *org.Org, id string) (bool, error) {
	if err := storedest.CheckPlan(o); err != nil {
		return false, err
	}
	dest, err := d.Dests.Get(ctx, o.ID, id)
	if errors.Is(err, storedest.ErrNotFound) {
		return false, apierr.NotFound("Storage destination %s not found", id)
	}
	if err != nil {
		return false, err
	}
	if dest.Disabled {
		return false, apierr.Field("storage_destination_id", "storage destination %s is disabled", id)
	}
	return dest.HctiStorageDisabled, nil
}

// Open returns the writer of the organization's destination.
func (d Destinations) Open(ctx context.Context, orgID, id string) (rendition.Bucket, error) {
	dest, err := d.Dests.Get(ctx, orgID, id)
	if errors.Is(err, storedest.ErrNotFound) {
		return nil, unavailablef("storage destination %s was deleted", id)
	}
	if err != nil {
		return nil, err
	}
	if dest.Disabled {
		return nil, unavailablef("storage destination %s is disabled", id)
	}
	conn, err := d.Dests.Connection(dest)
	if errors.Is(err, storedest.ErrSecret) {
		return nil, unavailablef("the secret access key of storage destination %s no longer opens; set it again", id)
	}
	if err != nil {
		return nil, err
	}
	w, err := d.Connector.Open(conn)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Describe words a write error: this package's own sentences, or the
// storage package's (no secret, no server-sent text).
func (Destinations) Describe(err error) string {
	if errors.Is(err, ErrUnavailable) {
		return err.Error()
	}
	return storage.Describe(err)
}
