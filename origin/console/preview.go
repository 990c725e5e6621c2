package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
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
// organization's previews a minute, a 429 with Retry-After. A page's
// newer preview (by the sequence number its script sends, not by the
// order requests arrive in) cancels its older one still rendering: the
// page has moved on, and the edge does not pass a browser's abort on. An
// older one arriving after a newer is answered 409 at once.
func (c *Console) preview(w http.ResponseWriter, r *http.Request, st *state, body any) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	seq, _ := strconv.ParseUint(r.PostFormValue("preview_seq"), 10, 64)
	done, ok := c.previews.start(st.session.id+"/"+r.PostFormValue("preview_page"), seq, cancel)
	if !ok {
		writeRefusal(w, &apiError{Status: http.StatusConflict, Kind: "Conflict", Message: "A newer preview of this page has started."})
		return
	}
	defer done()
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

// inflight holds each page's preview in flight (in this process), by
// session and page.
type inflight struct {
	mu sync.Mutex
	m  map[string]*previewRun
}

type previewRun struct {
	seq    uint64
	cancel context.CancelFunc
}

// start records the page's preview number seq, cancelling an older one
// in flight, and returns what to call when it ends; ok is false when a
// newer one is in flight (this one is stale). A client that numbers
// nothing (seq 0 every time) has each preview cancel the one before.
func (f *inflight) start(page string, seq uint64, cancel context.CancelFunc) (done func(), ok bool) {
	run := &previewRun{seq: seq, cancel: cancel}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]*previewRun{}
	}
	if old := f.m[page]; old != nil {
		if old.seq > seq {
			return nil, false
		}
		old.cancel()
	}
	f.m[page] = run
	return func() {
		f.mu.Lock()
		if f.m[page] == run {
			delete(f.m, page)
		}
		f.mu.Unlock()
	}, true
}
