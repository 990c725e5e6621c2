package console

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// previewImage renders the new-image form, unsaved, through
// POST /v1/image/preview: nothing is stored and no credit is used.
func (c *Console) previewImage(w http.ResponseWriter, r *http.Request, st *state) {
	body, local := imageBody(r.PostForm)
	if local != nil {
		writeRefusal(w, local)
		return
	}
	c.preview(w, r, st, body)
}

// preview runs POST /v1/image/preview as the key and answers as it did:
// the image with its render time (Server-Timing), or the refusal in the
// standard error body, which the page's script shows; past the
// organization's previews a minute, a 429 with Retry-After.
func (c *Console) preview(w http.ResponseWriter, r *http.Request, st *state, body any) {
	raw, err := json.Marshal(body)
	if err != nil {
		writeRefusal(w, &apiError{Status: http.StatusBadRequest, Kind: "Bad Request", Message: "The preview's fields cannot be sent."})
		return
	}
	rec, err := c.exchange(r, st, http.MethodPost, "/v1/image/preview", bytes.NewReader(raw), nil)
	if err != nil {
		c.cfg.Logger.ErrorContext(r.Context(), "console preview failed", "error", err)
		writeRefusal(w, &apiError{Status: http.StatusServiceUnavailable, Kind: "Service Unavailable", Message: "The preview cannot run right now. Try again in a moment."})
		return
	}
	for _, h := range []string{"Content-Type", "Server-Timing", "Retry-After"} {
		if v := rec.header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(rec.status)
	w.Write(rec.body.Bytes())
}

// writeRefusal answers e in the standard error body.
func writeRefusal(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(e)
}
