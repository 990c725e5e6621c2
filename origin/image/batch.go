package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/respond"
)

// Batch limits of spec §8.
const (
	MaxBatch = 25
	// MaxBatchBody bounds a batch body: 25 variations with room to spare.
	MaxBatchBody = 32 << 20
)

// Batch handles POST /v1/image/batch: every variation is validated before
// anything is created, then all are created and charged at once.
func (h *Handler) Batch(w http.ResponseWriter, r *http.Request) {
	p := auth.FromContext(r.Context())
	body, err := field.DecodeJSON(w, r, MaxBatchBody)
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	objects, err := batchObjects(body)
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	var errs field.Errors
	items := make([]Item, len(objects))
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
			apierr.Write(w, r, err)
			return
		}
		items[i] = Item{Params: params} // no dedupe in batches
		formats[i] = o.Present("format")
	}
	if err := errs.Err(); err != nil {
		apierr.Write(w, r, err)
		return
	}
	created, charge, err := h.Service.Create(r.Context(), p.Org, items)
	writeCharge(w, charge)
	if err != nil {
		apierr.Write(w, r, planError(err))
		return
	}
	h.countRenders(created, refs)
	out := struct {
		Images []Link `json:"images"`
	}{Images: make([]Link, len(created))}
	for i, c := range created {
		out.Images[i] = h.link(c.Image, formats[i])
	}
	respond.JSON(w, r, http.StatusOK, out)
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

// Delete handles DELETE /v1/image/{id}: 202 once every copy is gone.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) {
	p := auth.FromContext(r.Context())
	id, _, ok := ParsePath(r.PathValue("id"))
	if !ok || strings.Contains(r.PathValue("id"), ".") {
		apierr.Write(w, r, apierr.NotFound("Image not found"))
		return
	}
	deleted, err := h.Service.Delete(r.Context(), p.Org.ID, []string{id})
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	if deleted == 0 {
		apierr.Write(w, r, apierr.NotFound("Image not found"))
		return
	}
	respond.Empty(w, http.StatusAccepted)
}

// MaxDeleteBatch bounds the ids of one batch delete.
const MaxDeleteBatch = 1000

// DeleteBatch handles DELETE /v1/image/batch {"ids": [...]}: 202 once every
// copy of every image of the caller's organization is gone. Unknown ids and
// other organizations' ids are skipped alike.
func (h *Handler) DeleteBatch(w http.ResponseWriter, r *http.Request) {
	p := auth.FromContext(r.Context())
	body, err := field.DecodeJSON(w, r, 1<<20)
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	var errs field.Errors
	ids, ok := body.StringArray(&errs, "ids")
	if !ok && !errs.Any() {
		errs.Add("ids", "is required: an array of image ids")
	}
	if len(ids) > MaxDeleteBatch {
		errs.Add("ids", "may hold at most %d ids", MaxDeleteBatch)
	}
	for i, id := range ids {
		if _, _, ok := ParsePath(id); !ok || strings.Contains(id, ".") {
			errs.Add(fmt.Sprintf("ids[%d]", i), "is not an image id")
		}
	}
	if err := errs.Err(); err != nil {
		apierr.Write(w, r, err)
		return
	}
	for i := range ids {
		ids[i] = strings.ToLower(ids[i])
	}
	if _, err := h.Service.Delete(r.Context(), p.Org.ID, ids); err != nil {
		apierr.Write(w, r, err)
		return
	}
	respond.Empty(w, http.StatusAccepted)
}

// List page sizes of compat.md.
const (
	defaultListCount = 50
	maxListCount     = 50
)

// ListEntry is an image in GET /v1/images.
type ListEntry struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	CreatedAt string `json:"created_at"`
}

// List handles GET /v1/images.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	cursors := h.Cursors
	p := auth.FromContext(r.Context())
	q, err := field.Query(r)
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	var errs field.Errors
	count := defaultListCount
	if vs, ok := q["count"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(vs[len(vs)-1]))
		if err != nil || n < 1 || n > maxListCount {
			errs.Add("count", "must be an integer between 1 and %d", maxListCount)
		}
		count = n
	}
	after := ""
	scope := "images/" + p.Org.ID
	if tok := q.Get("page_token"); tok != "" {
		pos, err := cursors.Decode(scope, tok)
		if err != nil {
			errs.Add("page_token", "is not a token issued by this API")
		}
		after = pos
	}
	if err := errs.Err(); err != nil {
		apierr.Write(w, r, err)
		return
	}
	imgs, more, err := h.Service.List(p.Org.ID, after, count)
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	out := struct {
		Images        []ListEntry `json:"images"`
		NextPageToken *string     `json:"next_page_token"`
		HasNextPage   bool        `json:"has_next_page"`
	}{Images: make([]ListEntry, len(imgs)), HasNextPage: more}
	for i, img := range imgs {
		out.Images[i] = ListEntry{ID: img.ID, URL: h.link(img, false).URL, CreatedAt: img.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")}
	}
	if more {
		// The position is the last image's sort key: signed URLs' ids are
		// not time-ordered.
		tok := cursors.Encode(scope, imgs[len(imgs)-1].SortKey)
		out.NextPageToken = &tok
	}
	respond.JSON(w, r, http.StatusOK, out)
}
