package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/pictorhq/pictor/origin/contract/apierr"
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

// previewTemplate renders the template editor's draft (its html, css
// and render defaults, saved or not) with the values form's values
// through POST /v1/image/preview.
func (c *Console) previewTemplate(w http.ResponseWriter, r *http.Request, st *state) {
	draft, local := templateBody(r.PostForm)
	if local != nil {
		writeRefusal(w, local)
		return
	}
	values, bad := formValues(r.PostForm)
	if bad != "" {
		writeRefusal(w, &apiError{Status: http.StatusBadRequest, Kind: "Bad Request", Message: "The values are not valid.",
			Fields: []apierr.FieldError{fieldError("template_values", bad)}})
		return
	}
	c.preview(w, r, st, map[string]any{"template": draft, "template_values": values})
}

// preview runs POST /v1/image/preview as the key and answers as it did:
// the image with its render time (Server-Timing), or the refusal in the
// standard error body, which the page's script shows; past the
// organization's previews a minute, a 429 with Retry-After. A session's
// newer preview cancels its older one still rendering: the page has
// moved on, and the edge does not pass a browser's abort on.
func (c *Console) preview(w http.ResponseWriter, r *http.Request, st *state, body any) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer c.previews.start(st.session.id, cancel)()
	r = r.WithContext(ctx)
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

// inflight holds each session's preview in flight (in this process).
type inflight struct {
	mu sync.Mutex
	m  map[string]*previewRun
}

type previewRun struct{ cancel context.CancelFunc }

// start records the session's new preview, cancelling the one before
// it, and returns what to call when it ends.
func (f *inflight) start(session string, cancel context.CancelFunc) (done func()) {
	run := &previewRun{cancel: cancel}
	f.mu.Lock()
	if f.m == nil {
		f.m = map[string]*previewRun{}
	}
	if old := f.m[session]; old != nil {
		old.cancel()
	}
	f.m[session] = run
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		if f.m[session] == run {
			delete(f.m, session)
		}
		f.mu.Unlock()
	}
}
