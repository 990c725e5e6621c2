package images

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/logging"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/respond"
)

// Store outcomes (spec §2.7).
const (
	OutcomeComplete = "complete"
	OutcomePartial  = "partial"
	OutcomeFailed   = "failed"
)

// StoreResult is the answer of PUT /v1/store (spec §2.7).
type StoreResult struct {
	Outcome              string        `json:"outcome"`
	BaseResult           ObjectResult  `json:"baseResult"`
	TransformationResult *ObjectResult `json:"transformationResult,omitempty"`
	Success              bool          `json:"success"`
	Message              string        `json:"message"`
	StatusCode           int           `json:"statusCode"`
	Error                string        `json:"error,omitempty"`
	ReferenceID          string        `json:"referenceId,omitempty"`
}

// Store handles PUT /v1/store/{id}[.ext]: it renders the image when needed
// and writes it to its storage destination: the base object
// <prefix>/<id>.png (.pdf with pdf_options) and, when the extension asks
// for another format, that format too as <prefix>/<id>.<ext> (the
// transformation). Transformations other than the format (width, crop,
// ...) are made by the edge, which has no storage credentials: the origin
// refuses them (400). Only the image's organization may store it; for any
// other the image does not exist (404). An image whose destination keeps
// no service copy has its files dropped again once written.
func (h *Handler) Store(w http.ResponseWriter, r *http.Request) {
	p := auth.FromContext(r.Context())
	id, format, ok := ParsePath(r.PathValue("id"))
	if !ok {
		apierr.Write(w, r, apierr.NotFound("Image not found"))
		return
	}
	if err := storeQuery(r); err != nil {
		apierr.Write(w, r, err)
		return
	}
	img, err := h.Service.Get(id)
	if errors.Is(err, ErrNotFound) || (err == nil && img.OrgID != p.Org.ID) {
		apierr.Write(w, r, apierr.NotFound("Image not found"))
		return
	}
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	if img.Params.StorageDestinationID == "" {
		apierr.Write(w, r, apierr.BadRequest("Image %s has no storage_destination_id: there is nothing to store it to", id))
		return
	}
	res := h.store(r.Context(), img, format)
	if img.StorageOnly {
		if err := h.Service.Drop(id); err != nil && !errors.Is(err, ErrNotFound) {
			slog.ErrorContext(r.Context(), "drop files of a storage-only image", "image", id, "error", err)
		}
	}
	if res.Outcome != OutcomeComplete {
		res.ReferenceID = logging.RequestID(r.Context())
	}
	respond.JSON(w, r, res.StatusCode, res)
}

// store writes the base object, then the transformation when format is not
// the base's.
func (h *Handler) store(ctx context.Context, img *Image, format imageparams.Format) StoreResult {
	base := BaseFormat(img)
	var res StoreResult
	var err error
	res.BaseResult, err = h.Service.StoreObject(ctx, img, base)
	if err != nil {
		res.Error = "base object: " + h.describe(err)
		h.logStore(ctx, img, res.BaseResult, err)
		if format != base {
			res.TransformationResult = &ObjectResult{Status: ObjectNotAttempted, Target: TargetDestination}
		}
		res.Outcome, res.StatusCode, res.Message = OutcomeFailed, http.StatusFailedDependency, "The image was not stored"
		return res
	}
	if format != base {
		t, err := h.Service.StoreObject(ctx, img, format)
		res.TransformationResult = &t
		if err != nil {
			res.Error = "transformation " + string(format) + ": " + h.describe(err)
			h.logStore(ctx, img, t, err)
			res.Outcome, res.StatusCode, res.Message = OutcomePartial, http.StatusFailedDependency, "The base image was stored; its transformation was not"
			return res
		}
	}
	res.Outcome, res.StatusCode, res.Success, res.Message = OutcomeComplete, http.StatusOK, true, "Stored"
	return res
}

// describe words a store error for the organization: a render's own
// message, or the destination's words for a write.
func (h *Handler) describe(err error) string {
	var ae *apierr.Error
	switch {
	case errors.As(err, &ae):
		return "render failed: " + ae.Message
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	return h.Service.DescribeStoreError(err)
}

func (h *Handler) logStore(ctx context.Context, img *Image, o ObjectResult, err error) {
	slog.WarnContext(ctx, "store to destination failed", "image", img.ID, "org", img.OrgID,
		"destination", img.Params.StorageDestinationID, "bucket", o.Bucket, "key", o.Key, "error", h.describe(err))
}

// storeQuery refuses query parameters: transformations other than the
// format are the edge's, which writes nothing to destinations.
func storeQuery(r *http.Request) error {
	q := r.URL.Query()
	if len(q) == 0 {
		return nil
	}
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	return apierr.Field(names[0], "is not supported by PUT /v1/store: the origin stores the image as rendered, "+
		"in the format of the path's extension (.png, .jpg, .webp or .pdf); resizing and cropping are not stored (got %s)",
		strings.Join(names, ", "))
}
