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
	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/contract/logging"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/rendition"
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
	Outcome              string                  `json:"outcome"`
	BaseResult           rendition.ObjectResult  `json:"baseResult"`
	TransformationResult *rendition.ObjectResult `json:"transformationResult,omitempty"`
	Success              bool                    `json:"success"`
	Message              string                  `json:"message"`
	StatusCode           int                     `json:"statusCode"`
	Error                string                  `json:"error,omitempty"`
	ReferenceID          string                  `json:"referenceId,omitempty"`
}

// Store handles PUT /v1/store/{id}[.ext][?transform]: it renders the image
// when needed and writes it to its storage destination: the base object
// <prefix>/<id>.png (.pdf with pdf_options) and, when the extension or the
// query asks for something else, that too as the transformation:
// <prefix>/<id>.webp, <prefix>/<id>_w-400.webp (the query takes the
// parameters of the edge's GET, made the same way; see Variant). Unknown
// or invalid parameters are a 400 before anything is stored. Only the
// image's organization may store it; for any other the image does not
// exist (404). An image whose destination keeps no service copy has its
// files dropped again once written.
func (h *Handler) Store(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	id, format, ok := ParsePath(r.PathValue("id"))
	if !ok {
		return apierr.NotFound("Image not found")
	}
	opts, err := storeQuery(r, format)
	if err != nil {
		return err
	}
	img, err := h.Service.Get(r.Context(), id)
	if errors.Is(err, rendition.ErrNotFound) || (err == nil && img.OrgID != p.Org.ID) {
		return apierr.NotFound("Image not found")
	}
	if err != nil {
		return err
	}
	if img.Params.StorageDestinationID == "" {
		return apierr.BadRequest("Image %s has no storage_destination_id: there is nothing to store it to", id)
	}
	res := h.store(r.Context(), img, rendition.Variant{Format: format, Transform: opts})
	if img.StorageOnly {
		if err := h.Service.Drop(r.Context(), id); err != nil && !errors.Is(err, rendition.ErrNotFound) {
			slog.ErrorContext(r.Context(), "drop files of a storage-only image", "image", id, "error", err)
		}
	}
	if res.Outcome != OutcomeComplete {
		res.ReferenceID = logging.RequestID(r.Context())
	}
	respond.JSON(w, r, res.StatusCode, res)
	return nil
}

// store writes the base object, then the variant when it is not the base.
func (h *Handler) store(ctx context.Context, img *rendition.Image, v rendition.Variant) StoreResult {
	var res StoreResult
	var err error
	res.BaseResult, err = h.Service.StoreObject(ctx, img, rendition.Variant{Format: rendition.BaseFormat(img)})
	if err != nil {
		res.Error = "base object: " + h.describe(err)
		h.logStore(ctx, img, res.BaseResult, err)
		if !v.IsBase(img) {
			res.TransformationResult = &rendition.ObjectResult{Status: rendition.ObjectNotAttempted, Target: rendition.TargetDestination}
		}
		res.Outcome, res.StatusCode, res.Message = OutcomeFailed, http.StatusFailedDependency, "The image was not stored"
		return res
	}
	if !v.IsBase(img) {
		t, err := h.Service.StoreObject(ctx, img, v)
		res.TransformationResult = &t
		if err != nil {
			res.Error = "transformation " + rendition.ObjectName(img.ID, v) + ": " + h.describe(err)
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
	case errors.Is(err, rendition.ErrTransform) && errors.As(err, &ae):
		msg := ae.Message
		if len(ae.Fields) > 0 {
			parts := make([]string, len(ae.Fields))
			for i, f := range ae.Fields {
				parts[i] = f.Path + " " + f.Message
			}
			msg = strings.Join(parts, "; ")
		}
		return "the rendered image cannot take the transformation: " + msg
	case errors.Is(err, rendition.ErrTransform):
		return "the rendered image cannot take the transformation"
	case errors.As(err, &ae):
		return "render failed: " + ae.Message
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	return h.Service.DescribeStoreError(err)
}

func (h *Handler) logStore(ctx context.Context, img *rendition.Image, o rendition.ObjectResult, err error) {
	slog.WarnContext(ctx, "store to destination failed", "image", img.ID, "org", img.OrgID,
		"destination", img.Params.StorageDestinationID, "bucket", o.Bucket, "key", o.Key, "error", h.describe(err))
}

// storeQuery reads the transformations of a store from the query: the
// parameters of the edge's GET (imaging.Parse), valid for format. Any
// other parameter is refused rather than ignored, since a misspelt one
// would silently store something else than asked.
func storeQuery(r *http.Request, format imageparams.Format) (imaging.Options, error) {
	var unknown []string
	for k := range r.URL.Query() {
		if !imaging.IsParam(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return imaging.Options{}, apierr.Field(unknown[0], "is not a parameter of PUT /v1/store, which takes the "+
			"transformations of GET /v1/image (width, height, dpi, aspect_ratio, crops) (got %s)", strings.Join(unknown, ", "))
	}
	return imaging.Parse(imaging.Format(format), []byte(r.URL.RawQuery))
}
