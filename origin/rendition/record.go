package rendition

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/imageparams"
)

// State of an image's master render.
type State string

// States.
const (
	StatePending State = "pending"
	StateReady   State = "ready"
	StateFailed  State = "failed"
)

// Failure is a recorded render failure, answered on every GET.
type Failure struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// Info describes one stored file of an image, a rendition.
type Info struct {
	Size int64 `json:"size"`
	// ETag names the rendition for the image's lifetime: a hash of the
	// bytes it was first stored with. The compactor re-encodes a PNG
	// master later (same pixels, fewer bytes) and keeps it, so an edge
	// filled before and one filled after agree with the origin, and a
	// client's If-None-Match still matches. Since the bytes under it may
	// differ, only formats whose bytes never change (PDF) answer Range.
	ETag string `json:"etag"`
}

// Image is the stored record of an image.
type Image struct {
	ID         string             `json:"id"`
	OrgID      string             `json:"org_id"`
	CreatedAt  time.Time          `json:"created_at"`
	Params     imageparams.Params `json:"params"`
	Credits    int                `json:"credits"`
	State      State              `json:"state"`
	Failure    *Failure           `json:"failure,omitempty"`
	Width      int                `json:"width,omitempty"`
	Height     int                `json:"height,omitempty"`
	Renditions map[string]Info    `json:"renditions,omitempty"`
	// PDFFailure is recorded apart: a PDF can fail where the PNG did not.
	PDFFailure *Failure `json:"pdf_failure,omitempty"`
	// DedupeKey is the image's entry in the dedupe index, if any.
	DedupeKey string `json:"dedupe_key,omitempty"`
	// SortKey is the image's place in its organization's list, newest
	// last: a UUIDv7 made at creation. It is the id itself for images
	// created through the API (UUIDv7 ids); signed URLs' images have
	// content-addressed ids, which are not time-ordered, and one of their
	// own. Records written before sort keys get one at start
	// (migrateIndex).
	SortKey string `json:"sort_key,omitempty"`
	// StorageOnly: the image's storage destination had
	// hcti_storage_disabled when it was created. It has no public URL
	// (GET answers 404); PUT /v1/store renders it, writes it to the
	// bucket and drops the files again. Captured at creation, so that the
	// URL answered then stays valid whatever the destination becomes.
	StorageOnly bool `json:"storage_only,omitempty"`
	// Stored holds the objects written to the storage destination, as
	// "<bucket>/<key>", with when: a repeat write of the same object is
	// already_stored.
	Stored map[string]time.Time `json:"stored,omitempty"`
}

// Key layout of images (see kv/doc.go for the others):
//
//	img/<image_id>                     image record (JSON)
//	org-list/<org_id>/<sort_key>       image id; lists an organization's images in creation order
//	dedupe/<org_id>/<hash>             image id of the latest image with those parameters
//	org-img/<org_id>/<image_id>        empty; the list index before sort keys, moved to
//	                                   org-list/ at start (migrateIndex)
//	img-lease/<image_id>/<format>      render lease of the file in format (JSON; lease.go),
//	                                   deleted with the image
//
// The record, its leases and the refund its failure owes are changed
// under the image's record lock (recordLock); new records, their index
// and dedupe entries under the organization's credit lock (usage.Lock).
func recordKey(id string) []byte { return []byte("img/" + id) }

const listPrefix = "org-list/"

func listKey(org, sortKey string) []byte { return []byte(listPrefix + org + "/" + sortKey) }

const legacyPrefix = "org-img/"

func legacyListKey(org, id string) []byte { return []byte(legacyPrefix + org + "/" + id) }

// records reads and writes image records.
type records struct{ kv kv.Reader }

func (r records) get(ctx context.Context, id string) (*Image, error) {
	raw, err := r.kv.Get(ctx, recordKey(id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get image %s: %w", id, err)
	}
	var img Image
	if err := json.Unmarshal(raw, &img); err != nil {
		return nil, fmt.Errorf("decode image %s: %w", id, err)
	}
	return &img, nil
}

// add puts a new image, its organization index entry and its dedupe
// entry into w.
func (r records) add(w kv.Writer, img *Image) error {
	raw, err := json.Marshal(img)
	if err != nil {
		return err
	}
	err = errors.Join(w.Put(recordKey(img.ID), raw), w.Put(listKey(img.OrgID, img.SortKey), []byte(img.ID)))
	if err == nil && img.DedupeKey != "" {
		err = w.Put(dedupeKey(img.OrgID, img.DedupeKey), []byte(img.ID))
	}
	if err != nil {
		return fmt.Errorf("store image %s: %w", img.ID, err)
	}
	return nil
}

// dedupeKey indexes images by the hash of their canonical parameters.
func dedupeKey(org, hash string) []byte { return []byte("dedupe/" + org + "/" + hash) }

func (r records) put(img *Image) error {
	raw, err := json.Marshal(img)
	if err != nil {
		return err
	}
	w, ok := r.kv.(kv.Writer)
	if !ok {
		return errors.New("image records: read-only")
	}
	if err := w.Put(recordKey(img.ID), raw); err != nil {
		return fmt.Errorf("store image %s: %w", img.ID, err)
	}
	return nil
}

// newSortKey returns the sort key of an image created now with id: the id
// itself when it is a UUIDv7 (made now), else a fresh UUIDv7.
func newSortKey(id string) string {
	if u, err := uuid.Parse(id); err == nil && u.Version() == 7 {
		return id
	}
	return uuid.Must(uuid.NewV7()).String()
}

// sortKeyAt is a UUIDv7 of the millisecond of t whose other bits come from
// seed, so that the same image always gets the same key.
func sortKeyAt(t time.Time, seed string) string {
	sum := sha256.Sum256([]byte("pictor sort key v1\x00" + seed))
	var u uuid.UUID
	copy(u[:], sum[:])
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(t.UnixMilli()))
	copy(u[:6], ms[2:])
	u[6] = (u[6] & 0x0f) | 0x70 // version 7
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u.String()
}
