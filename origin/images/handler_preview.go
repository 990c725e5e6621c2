package images

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/ratelimit"
)

// Previews per organization in a sliding minute (--previews-per-minute).
const (
	DefaultPreviewsPerMinute = 30
	// MaxPreviewsPerMinute bounds the setting: each admission is a
	// timestamp in the organization's log (8 bytes in a shared store).
	MaxPreviewsPerMinute = 10_000
)

// PreviewGroup names the previews' window in the limiter: the key is
// <org id>|preview, beside the management groups' keys.
const PreviewGroup = "preview"

// PreviewLimit bounds an organization's previews: PerMinute in a sliding
// minute of Limiter (the origin's, shared by the origins of a shared
// store). A nil Limiter refuses every preview.
type PreviewLimit struct {
	Limiter   ratelimit.Limiter
	PerMinute int
}

// draftField is the field of a preview that holds a draft template
// (template.DraftField).
const draftField = "template"

// Preview handles POST /v1/image/preview: what POST /v1/image takes (a
// template_id with template_values included), or a draft template under
// "template" with template_values, validated as those are, rendered under
// the request's context and answered as the image's bytes. Nothing is
// stored or charged; the organization's previews are limited per minute
// (PreviewLimit), before the body is read.
func (h *Handler) Preview(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p := auth.FromContext(ctx)
	if err := h.admitPreview(ctx, p.Org.ID); err != nil {
		return err
	}
	o, err := field.DecodeAny(w, r, MaxBody)
	if err != nil {
		return err
	}
	params, err := h.parsePreview(ctx, p.Org, o)
	if err != nil {
		return err
	}
	start := time.Now()
	pv, err := h.Service.Preview(ctx, p.Org, &params.Params)
	if err != nil {
		return err
	}
	hd := w.Header()
	hd.Set("Content-Type", contentTypes[pv.Format])
	hd.Set("Content-Length", strconv.Itoa(len(pv.Data)))
	hd.Set("Cache-Control", "no-store")
	hd.Set("Server-Timing", fmt.Sprintf("render;dur=%.1f", float64(time.Since(start).Microseconds())/1000))
	w.WriteHeader(http.StatusOK)
	w.Write(pv.Data) //nolint:errcheck // the client went away: nothing to answer
	return nil
}

// admitPreview takes one preview of the organization's allowance, or
// returns the 429 saying when the next one is allowed.
func (h *Handler) admitPreview(ctx context.Context, orgID string) error {
	l := h.Previews
	if l.Limiter == nil || l.PerMinute < 1 {
		return apierr.New(http.StatusServiceUnavailable, "Previews are not available")
	}
	d, err := l.Limiter.Allow(ctx, orgID+"|"+PreviewGroup, l.PerMinute, ratelimit.Window)
	if err != nil {
		return fmt.Errorf("preview rate limit: %w", err)
	}
	if !d.Allowed {
		return apierr.TooManyRequests(d.RetryAfter, "Preview limit reached: %d previews per %d seconds per organization",
			l.PerMinute, int(ratelimit.Window/time.Second))
	}
	return nil
}

// parsePreview validates a preview request as the creation routes do:
// the same parsing, the same validation_errors.
func (h *Handler) parsePreview(ctx context.Context, o *org.Org, obj *field.Object) (parsed, error) {
	if !obj.Present(draftField) {
		params, ref, err := h.parseAny(ctx, o, obj, "", 0)
		if err == nil {
			err = h.checkTemplateFields(ctx, o.ID, obj, ref)
		}
		if err == nil && ref == nil {
			_, err = dedupeWindow(o, &params.Params)
		}
		return params, err
	}
	if h.Templates == nil {
		return parsed{}, apierr.Field(draftField, "draft templates are not available")
	}
	expanded, vars, err := h.Templates.ExpandDraft(ctx, obj)
	if err != nil {
		return parsed{}, err
	}
	stray := slices.DeleteFunc(strayFields(obj), func(k string) bool { return k == draftField })
	if err := variableFields(obj, stray, vars); err != nil {
		return parsed{}, err
	}
	params, err := h.parseParams(ctx, o, expanded)
	if err != nil {
		return params, err
	}
	return params, h.checkDelivery(ctx, o, obj.Prefix, &params)
}
