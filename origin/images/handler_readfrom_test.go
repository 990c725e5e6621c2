package images

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// readFromRecorder is a ResponseWriter with its own ReadFrom, as
// net/http's (which sends an *os.File with sendfile): it notes what each
// ReadFrom was given.
type readFromRecorder struct {
	*httptest.ResponseRecorder
	sources []io.Reader
}

func (r *readFromRecorder) ReadFrom(src io.Reader) (int64, error) {
	r.sources = append(r.sources, src)
	return io.Copy(r.ResponseRecorder, src)
}

// TestContentWriterReadFrom: ServeContent's copy of a files-store file
// through contentWriter reaches the ResponseWriter's ReadFrom as the
// *os.File itself (sendfile), for a whole file and for a range; a refused
// range still answers the standard body and copies nothing.
func TestContentWriterReadFrom(t *testing.T) {
	data := bytes.Repeat([]byte("%PDF bytes "), 1000)
	path := filepath.Join(t.TempDir(), "document.pdf")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		rng    string
		status int
		body   []byte
		reads  int
	}{
		{name: "whole", status: 200, body: data, reads: 1},
		{name: "range", rng: "bytes=100-199", status: 206, body: data[100:200], reads: 1},
		{name: "unsatisfiable", rng: "bytes=999999-", status: 416, reads: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			req := httptest.NewRequest("GET", "/v1/image/x.pdf", nil)
			if tt.rng != "" {
				req.Header.Set("Range", tt.rng)
			}
			rec := &readFromRecorder{ResponseRecorder: httptest.NewRecorder()}
			http.ServeContent(&contentWriter{ResponseWriter: rec, r: req, ranges: true}, req, "", time.Time{}, f)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if tt.body != nil && !bytes.Equal(rec.Body.Bytes(), tt.body) {
				t.Fatalf("body of %d bytes, want %d", rec.Body.Len(), len(tt.body))
			}
			if len(rec.sources) != tt.reads {
				t.Fatalf("ReadFrom called %d times, want %d", len(rec.sources), tt.reads)
			}
			for _, src := range rec.sources {
				lr, ok := src.(*io.LimitedReader)
				if !ok || lr.R != io.Reader(f) {
					t.Fatalf("ReadFrom given %T, want a LimitedReader of the *os.File", src)
				}
			}
		})
	}
}
