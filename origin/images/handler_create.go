package images

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/rendition"
	"github.com/pictorhq/pictor/origin/respond"
)

// Create handles POST /v1/image, POST /v1/image/{template_id} and
// POST /v1/image/{template_id}/{template_version}.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	o, err := field.DecodeAny(w, r, MaxBody)
	if err != nil {
		return err
	}
	pathVersion := 0
	if v := r.PathValue("template_version"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return apierr.Field("template_version", "must be a positive integer")
		}
		pathVersion = n
	}
	params, ref, err := h.parseAny(r.Context(), p.Org, o, r.PathValue("template_id"), pathVersion)
	if err == nil {
		err = h.checkTemplateFields(r.Context(), p.Org.ID, o, ref)
	}
	if err != nil {
		return err
	}
	var dedupe time.Duration
	if ref == nil {
		if dedupe, err = dedupeWindow(p.Org, &params.Params); err != nil {
			return err
		}
	}
	created, charge, err := h.Service.Create(r.Context(), p.Org, []rendition.Item{{Params: params.Params, Dedupe: dedupe, StorageOnly: params.storageOnly}})
	writeCharge(w, charge)
	if err != nil {
		return PlanError(err)
	}
	h.countRenders(r.Context(), created, []*templateRef{ref})
	respond.JSON(w, r, http.StatusOK, h.link(created[0].Image, o.Present("format")))
	return nil
}

// dedupeWindow applies the dedupe rules of compat.md to a single creation.
func dedupeWindow(o *org.Org, p *imageparams.Params) (time.Duration, error) {
	pl := o.PlanInfo()
	def := pl.DedupeHTMLDefault
	if p.Kind() == imageparams.KindURL {
		def = 0
	}
	if p.DedupeDurationS == nil {
		return def, nil
	}
	d := time.Duration(*p.DedupeDurationS) * time.Second
	switch {
	case d == 0:
		return 0, nil
	case pl.DedupeHTMLFixed && d != pl.DedupeHTMLDefault:
		return 0, apierr.Field("dedupe_duration_s", "must be 0 or %d on the %s plan", int(pl.DedupeHTMLDefault/time.Second), pl.Name)
	case d > pl.DedupeHTMLMax:
		return 0, apierr.Field("dedupe_duration_s", "must be at most %d on the %s plan", int(pl.DedupeHTMLMax/time.Second), pl.Name)
	}
	return d, nil
}

// Batch limits of spec §8.
const (
	MaxBatch = 25
	// MaxBatchBody bounds a batch body: 25 variations with room to spare.
	MaxBatchBody = 32 << 20
)

// Batch handles POST /v1/image/batch: every variation is validated before
// anything is created, then all are created and charged at once.
func (h *Handler) Batch(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	body, err := field.DecodeJSON(w, r, MaxBatchBody)
	if err != nil {
		return err
	}
	objects, err := batchObjects(body)
	if err != nil {
		return err
	}
	var errs field.Errors
	items := make([]rendition.Item, len(objects))
	formats := make([]bool, len(objects))
	refs := make([]*templateRef, len(objects))
	for i, o := range objects {
		params, ref, err := h.parseAny(r.Context(), p.Org, o, "", 0)
		refs[i] = ref
		var ae *apierr.Error
		switch {
		case errors.As(err, &ae) && ae.Status == http.StatusBadRequest:
			for _, f := range ae.Fields {
				errs.Add(f.Path, "%s", f.Message)
			}
			if len(ae.Fields) == 0 {
				errs.Add(o.Prefix+"html", "%s", ae.Message)
			}
			continue
		case err != nil:
			return err
		}
		items[i] = rendition.Item{Params: params.Params, StorageOnly: params.storageOnly} // no dedupe in batches
		formats[i] = o.Present("format")
	}
	if err := errs.Err(); err != nil {
		return err
	}
	created, charge, err := h.Service.Create(r.Context(), p.Org, items)
	writeCharge(w, charge)
	if err != nil {
		return PlanError(err)
	}
	h.countRenders(r.Context(), created, refs)
	out := struct {
		Images []Link `json:"images"`
	}{Images: make([]Link, len(created))}
	for i, c := range created {
		out.Images[i] = h.link(c.Image, formats[i])
	}
	respond.JSON(w, r, http.StatusOK, out)
	return nil
}

// batchObjects returns each variation merged over default_options and the
// top-level template_id, with error paths naming the variation.
func batchObjects(body *field.Object) ([]*field.Object, error) {
	var errs field.Errors
	var defaults map[string]json.RawMessage
	if raw, ok := body.Raw("default_options"); ok {
		if err := json.Unmarshal(raw, &defaults); err != nil || defaults == nil {
			errs.Add("default_options", "must be an object of creation parameters")
		}
	}
	var variations []json.RawMessage
	raw, ok := body.Raw("variations")
	switch {
	case !ok:
		errs.Add("variations", "is required: an array of 1 to %d objects", MaxBatch)
	case json.Unmarshal(raw, &variations) != nil:
		errs.Add("variations", "must be an array of 1 to %d objects", MaxBatch)
	case len(variations) == 0 || len(variations) > MaxBatch:
		errs.Add("variations", "must hold 1 to %d variations (got %d)", MaxBatch, len(variations))
	}
	if errs.Any() {
		return nil, errs.Err()
	}
	base := field.FromJSON(defaults)
	if tid, ok := body.Raw("template_id"); ok {
		base = imageparams.Merge(field.FromJSON(map[string]json.RawMessage{"template_id": tid}), base)
	}
	out := make([]*field.Object, len(variations))
	for i, v := range variations {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil || m == nil {
			errs.Add(fmt.Sprintf("variations[%d]", i), "must be an object of creation parameters")
			continue
		}
		over := field.FromJSON(m)
		over.Prefix = fmt.Sprintf("variations[%d].", i)
		out[i] = imageparams.Merge(base, over)
	}
	return out, errs.Err()
}
