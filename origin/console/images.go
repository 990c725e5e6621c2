package console

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/pictorhq/pictor/origin/perm"
)

// imagesPerPage is how many images a page of the list shows, unless the
// address asks for another count (1 to 100, as the REST route takes).
const imagesPerPage = 24

type imagesData struct {
	Images    []imageEntry
	Denied    string
	CanDelete bool
	Next      string // the next page's address, "" on the last
	First     bool
}

// images lists the organization's images newest first, a page at a time,
// through GET /v1/images; thumbnails come from the edge's transforms.
func (c *Console) images(w http.ResponseWriter, r *http.Request, st *state) {
	l := newListPage(r, imagesPerPage, "page_token")
	d := imagesData{CanDelete: st.principal.Grant.Has(perm.ImagesDelete), First: l.First}
	var list struct {
		Images []imageEntry `json:"images"`
		Next   *string      `json:"next_page_token"`
	}
	switch err := c.call(r, st, http.MethodGet, "/v1/images?"+l.Query.Encode(), nil, &list); {
	case isStatus(err, http.StatusForbidden):
		d.Denied = lacks(perm.ImagesRead)
	case err != nil:
		c.failed(w, r, st, err)
		return
	default:
		d.Images = list.Images
		d.Next = l.next("/console/images", list.Next)
	}
	c.render(w, r, http.StatusOK, "images", page{Title: "Images", Data: d, state: st})
}

// deleteImages deletes the images checked in the list through
// DELETE /v1/image/batch.
func (c *Console) deleteImages(w http.ResponseWriter, r *http.Request, st *state) {
	ids := r.PostForm["id"]
	if len(ids) == 0 {
		c.message(w, r, st, http.StatusBadRequest, "Nothing to delete", "Check the images to delete first.")
		return
	}
	body, _ := json.Marshal(map[string]any{"ids": ids})
	if err := c.call(r, st, http.MethodDelete, "/v1/image/batch", bytes.NewReader(body), nil); err != nil {
		c.failed(w, r, st, err)
		return
	}
	http.Redirect(w, r, "/console/images", http.StatusSeeOther)
}
