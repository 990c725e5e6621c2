package images

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/respond"
)

// Delete handles DELETE /v1/image/{id}: 202 once every copy is gone.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	id, _, ok := ParsePath(r.PathValue("id"))
	if !ok || strings.Contains(r.PathValue("id"), ".") {
		return apierr.NotFound("Image not found")
	}
	deleted, err := h.Service.Delete(r.Context(), p.Org.ID, []string{id})
	if err != nil {
		return err
	}
	if deleted == 0 {
		return apierr.NotFound("Image not found")
	}
	respond.Empty(w, http.StatusAccepted)
	return nil
}

// MaxDeleteBatch bounds the ids of one batch delete.
const MaxDeleteBatch = 1000

// DeleteBatch handles DELETE /v1/image/batch {"ids": [...]}: 202 once every
// copy of every image of the caller's organization is gone. Unknown ids and
// other organizations' ids are skipped alike.
func (h *Handler) DeleteBatch(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	body, err := field.DecodeJSON(w, r, 1<<20)
	if err != nil {
		return err
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
		return err
	}
	for i := range ids {
		ids[i] = strings.ToLower(ids[i])
	}
	if _, err := h.Service.Delete(r.Context(), p.Org.ID, ids); err != nil {
		return err
	}
	respond.Empty(w, http.StatusAccepted)
	return nil
}
