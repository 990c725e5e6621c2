package images

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/rendition"
	"github.com/pictorhq/pictor/origin/respond"
)

// ImageInfo is an image's record in GET /v1/images/{id}: what it was made
// from, and where each of its formats is.
type ImageInfo struct {
	ID          string `json:"id"`
	URL         string `json:"url"`
	CreatedAt   string `json:"created_at"`
	State       string `json:"state"`
	Failure     string `json:"failure,omitempty"`
	Width       int    `json:"width,omitempty"`
	Height      int    `json:"height,omitempty"`
	Format      string `json:"format"`
	Credits     int    `json:"credits"`
	StorageOnly bool   `json:"storage_only"`
	// Parameters are the creation parameters with defaults resolved, in
	// request field names: itself a valid POST /v1/image body.
	Parameters json.RawMessage `json:"parameters"`
	Files      []ImageFile     `json:"files"`
}

// ImageFile is one format of an image: its address and, once stored, its
// size in bytes.
type ImageFile struct {
	Format string `json:"format"`
	URL    string `json:"url"`
	Size   int64  `json:"size,omitempty"`
}

// fileFormats are the formats every image is served in, the master's
// first.
var fileFormats = []imageparams.Format{imageparams.FormatPNG, imageparams.FormatJPG, imageparams.FormatWebP, imageparams.FormatPDF}

// Info handles GET /v1/images/{id}. Another organization's image answers
// as an unknown one does.
func (h *Handler) Info(w http.ResponseWriter, r *http.Request) error {
	p := auth.FromContext(r.Context())
	id, _, ok := ParsePath(r.PathValue("id"))
	if !ok || strings.Contains(r.PathValue("id"), ".") {
		return apierr.NotFound("Image not found")
	}
	img, err := h.Service.Get(r.Context(), strings.ToLower(id))
	if errors.Is(err, rendition.ErrNotFound) || err == nil && img.OrgID != p.Org.ID {
		return apierr.NotFound("Image not found")
	}
	if err != nil {
		return err
	}
	out := ImageInfo{ID: img.ID, URL: h.link(img, false).URL, CreatedAt: img.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		State: string(img.State), Width: img.Width, Height: img.Height, Format: string(img.Params.Format), Credits: img.Credits,
		StorageOnly: img.StorageOnly, Parameters: img.Params.Canonical()}
	if img.Failure != nil {
		out.Failure = img.Failure.Message
	}
	for _, f := range fileFormats {
		file := ImageFile{Format: string(f), URL: h.URL(img.ID, f, true)}
		if img.StorageOnly {
			file.URL = h.StoreURL(img.ID, f, true)
		}
		if rend, ok := img.Renditions[string(f)]; ok {
			file.Size = rend.Size
		}
		out.Files = append(out.Files, file)
	}
	respond.JSON(w, r, http.StatusOK, out)
	return nil
}
