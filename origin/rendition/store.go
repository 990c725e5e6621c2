package rendition

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
)

// Destinations are the organizations' storage destinations, as images use
// them.
type Destinations interface {
	// Check tells whether an organization may send a new image to one of
	// its destinations: an *apierr.Error saying why not (the plan 403, an
	// unknown destination 404, a disabled one 400), or whether the
	// destination keeps no service copy (hcti_storage_disabled).
	Check(ctx context.Context, o *org.Org, id string) (storageOnly bool, err error)
	// Open returns the bucket of an organization's destination, or an
	// error saying why it cannot be written (deleted, disabled, its
	// secret does not open).
	Open(ctx context.Context, orgID, id string) (Bucket, error)
	// Describe puts a write error in words fit for the organization (no
	// secret, no server-sent text).
	Describe(err error) string
}

// Bucket is a destination opened for writing (a *storage.Writer).
type Bucket interface {
	Bucket() string
	// Key is the object key of name under the destination's prefix.
	Key(name string) string
	Put(ctx context.Context, key string, body io.Reader, size int64, contentType string) error
}

// Object statuses and targets of a store result (spec §2.7).
const (
	ObjectStored        = "stored"
	ObjectAlreadyStored = "already_stored"
	ObjectFailed        = "failed"
	ObjectNotAttempted  = "not_attempted"

	TargetDestination = "storage_destination"
)

// ObjectResult is the outcome of one object of a store (spec §2.7).
type ObjectResult struct {
	Status string `json:"status"`
	Target string `json:"target"`
	Bucket string `json:"bucket,omitempty"`
	Key    string `json:"key,omitempty"`
}

// CheckDestination tells whether an organization may send a new image to
// its storage destination id (see Destinations.Check); without
// Destinations every id is refused (400).
func (s *Service) CheckDestination(ctx context.Context, o *org.Org, id string) (storageOnly bool, err error) {
	if s.cfg.Destinations == nil {
		return false, apierr.Field("storage_destination_id", "storage destinations are not available")
	}
	return s.cfg.Destinations.Check(ctx, o, id)
}

// DescribeStoreError words an error of StoreObject for the organization.
func (s *Service) DescribeStoreError(err error) string {
	if errors.Is(err, errNoDestination) || s.cfg.Destinations == nil {
		return err.Error()
	}
	return s.cfg.Destinations.Describe(err)
}

// storeQueue bounds the background writes waiting for a worker.
const storeQueue = 256

// storeTimeout bounds one background write, its render included.
const storeTimeout = 5 * time.Minute

// storeLater queues the write of a fresh master to the image's
// destination. Images without one, or whose destination keeps no service
// copy (they are written by PUT /v1/store only), are not queued.
func (s *Service) storeLater(img *Image) {
	if s.stores == nil || img.Params.StorageDestinationID == "" || img.StorageOnly {
		return
	}
	select {
	case s.stores <- img.ID:
	default:
		s.dropped.Add(1)
		slog.Warn("storage write queue full; image not written to its destination", "image", img.ID,
			"destination", img.Params.StorageDestinationID)
	}
}

// StoreStats describe the background writes to storage destinations.
type StoreStats struct {
	// Waiting is how many writes wait for a worker.
	Waiting int
	// Dropped counts the writes refused since the start because the queue
	// was full.
	Dropped uint64
}

// StoreStats returns the state of the background writes.
func (s *Service) StoreStats() StoreStats {
	return StoreStats{Waiting: len(s.stores), Dropped: s.dropped.Load()}
}

// storer writes queued images to their destinations until Close.
func (s *Service) storer() {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case id := <-s.stores:
			ctx, cancel := context.WithTimeout(s.ctx, storeTimeout)
			img, err := s.records.get(ctx, id)
			if err == nil {
				var res ObjectResult
				res, err = s.StoreObject(ctx, img, Variant{Format: BaseFormat(img)})
				if err != nil && ctx.Err() == nil {
					slog.WarnContext(ctx, "storage destination write failed", "image", id, "org", img.OrgID,
						"destination", img.Params.StorageDestinationID, "bucket", res.Bucket, "key", res.Key,
						"error", s.DescribeStoreError(err))
				}
			}
			cancel()
			if s.cfg.OnStored != nil {
				s.cfg.OnStored(id, err)
			}
		}
	}
}

// BaseFormat is the format of an image's base object: PDF when it has
// pdf_options, PNG otherwise.
func BaseFormat(img *Image) imageparams.Format {
	if img.Params.PDF != nil {
		return imageparams.FormatPDF
	}
	return imageparams.FormatPNG
}

// Variant is one object of an image in a destination: a format, and the
// transformations (those of the edge's GET) made before encoding it. The
// base object is the image's BaseFormat with no transformation.
type Variant struct {
	Format    imageparams.Format
	Transform imaging.Options
}

// IsBase reports whether v is img's base object.
func (v Variant) IsBase(img *Image) bool {
	return v.Format == BaseFormat(img) && v.Transform.IsIdentity()
}

// ObjectName is the name of an image's object under the destination's
// prefix: "<id>.png", "<id>.webp", "<id>_w-400.webp" (see
// imaging.Options.Suffix).
func ObjectName(id string, v Variant) string {
	return string(v.Transform.Suffix([]byte(id))) + "." + string(v.Format)
}

// StoreObject writes the image as the variant to its storage destination,
// rendering, converting or transforming it first when needed, and records
// the object on the image: a repeat (same bucket and key) is already_stored
// without writing. On failure the result is failed with what is known of
// the target, and the error says why (Describe words a storage error; a
// transformation the rendered image cannot take wraps ErrTransform and
// imaging's error).
func (s *Service) StoreObject(ctx context.Context, img *Image, v Variant) (ObjectResult, error) {
	res := ObjectResult{Status: ObjectFailed, Target: TargetDestination}
	if s.cfg.Destinations == nil || img.Params.StorageDestinationID == "" {
		return res, errNoDestination
	}
	b, err := s.cfg.Destinations.Open(ctx, img.OrgID, img.Params.StorageDestinationID)
	if err != nil {
		return res, fmt.Errorf("storage destination %s: %w", img.Params.StorageDestinationID, err)
	}
	res.Bucket, res.Key = b.Bucket(), b.Key(ObjectName(img.ID, v))
	mark := res.Bucket + "/" + res.Key
	if cur, err := s.records.get(ctx, img.ID); err != nil {
		return res, err
	} else if _, ok := cur.Stored[mark]; ok {
		res.Status = ObjectAlreadyStored
		return res, nil
	}
	if v.Transform.IsIdentity() {
		err = s.putRendition(ctx, b, res.Key, img.ID, v.Format)
	} else {
		err = s.putTransformed(ctx, b, res.Key, img.ID, v)
	}
	if err != nil {
		return res, err
	}
	if _, err := s.update(img.ID, func(img *Image) {
		if img.Stored == nil {
			img.Stored = map[string]time.Time{}
		}
		img.Stored[mark] = s.cfg.Now().UTC()
	}); err != nil {
		return res, err
	}
	res.Status = ObjectStored
	return res, nil
}

// putRendition streams the image's rendition in format to key.
func (s *Service) putRendition(ctx context.Context, b Bucket, key, id string, format imageparams.Format) error {
	f, err := s.Open(ctx, id, format)
	if err != nil {
		return err
	}
	defer f.Close()
	return b.Put(ctx, key, f, f.Rendition.Size, contentTypes[format])
}

// contentTypes are the media types of the objects written, by format.
var contentTypes = map[imageparams.Format]string{
	imageparams.FormatPNG:  "image/png",
	imageparams.FormatJPG:  "image/jpeg",
	imageparams.FormatWebP: "image/webp",
	imageparams.FormatPDF:  "application/pdf",
}

// putTransformed transforms the image's PNG master as the edge would for
// a GET with the variant's query, and writes the result to key. The
// master is read whole: its size is bounded by the render limits, and the
// result by imaging.MaxSize.
func (s *Service) putTransformed(ctx context.Context, b Bucket, key, id string, v Variant) error {
	f, err := s.Open(ctx, id, imageparams.FormatPNG)
	if err != nil {
		return err
	}
	master := make([]byte, f.Rendition.Size)
	_, err = io.ReadFull(f, master)
	f.Close()
	if err != nil {
		return fmt.Errorf("read the master of image %s: %w", id, err)
	}
	out, err := imaging.Apply(ctx, master, v.Transform, imaging.Format(v.Format))
	if err != nil {
		return fmt.Errorf("%w of image %s: %w", ErrTransform, id, err)
	}
	return b.Put(ctx, key, bytes.NewReader(out), int64(len(out)), contentTypes[v.Format])
}

// Drop removes the files of an image whose destination keeps no service
// copy, once written: the record stays (its Stored objects answer a repeat
// store), and a later store renders it again. The files go first, then
// the record forgets them: a file made in between is left unrecorded
// (the next render replaces it), never recorded without its file.
func (s *Service) Drop(ctx context.Context, id string) error {
	img, err := s.records.get(ctx, id)
	if err != nil {
		return err
	}
	if !img.StorageOnly {
		return nil
	}
	if err := s.cfg.Blobs.Remove(s.ctx, id); err != nil {
		return fmt.Errorf("drop files of image %s: %w", id, err)
	}
	_, err = s.update(id, func(img *Image) {
		if !img.StorageOnly {
			return
		}
		if img.State == StateReady {
			img.State = StatePending
		}
		img.Renditions = nil
	})
	return err
}

// errNoDestination: the image names no storage destination (or the
// service has none).
var errNoDestination = errors.New("the image has no storage destination")
