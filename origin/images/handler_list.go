package images

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/respond"
)

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
func (h *Handler) List(w http.ResponseWriter, r *http.Request) error {
	cursors := h.Cursors
	p := auth.FromContext(r.Context())
	q, err := field.Query(r)
	if err != nil {
		return err
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
		return err
	}
	imgs, more, err := h.Service.List(r.Context(), p.Org.ID, after, count)
	if err != nil {
		return err
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
	return nil
}
