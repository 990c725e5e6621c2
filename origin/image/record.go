package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

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

// Rendition is one stored file of an image.
type Rendition struct {
	Size int64  `json:"size"`
	ETag string `json:"etag"`
}

// Image is the stored record of an image.
type Image struct {
	ID         string               `json:"id"`
	OrgID      string               `json:"org_id"`
	CreatedAt  time.Time            `json:"created_at"`
	Params     imageparams.Params   `json:"params"`
	Credits    int                  `json:"credits"`
	State      State                `json:"state"`
	Failure    *Failure             `json:"failure,omitempty"`
	Width      int                  `json:"width,omitempty"`
	Height     int                  `json:"height,omitempty"`
	Renditions map[string]Rendition `json:"renditions,omitempty"`
	// PDFFailure is recorded apart: a PDF can fail where the PNG did not.
	PDFFailure *Failure `json:"pdf_failure,omitempty"`
	// DedupeKey is the image's entry in the dedupe index, if any.
	DedupeKey string `json:"dedupe_key,omitempty"`
}

// ErrNotFound is returned for an unknown image.
var ErrNotFound = errors.New("image not found")

func recordKey(id string) []byte { return []byte("img/" + id) }
func orgKey(org, id string) []byte {
	return []byte("org-img/" + org + "/" + id)
}

// records reads and writes image records.
type records struct{ kv kv.Reader }

func (r records) get(id string) (*Image, error) {
	raw, err := r.kv.Get(recordKey(id))
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
// entry into b.
func (r records) add(b kv.Batch, img *Image) error {
	raw, err := json.Marshal(img)
	if err != nil {
		return err
	}
	b.Put(recordKey(img.ID), raw)
	b.Put(orgKey(img.OrgID, img.ID), nil)
	if img.DedupeKey != "" {
		b.Put(dedupeKey(img.OrgID, img.DedupeKey), []byte(img.ID))
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
