package api_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/ratelimit"
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

// TestFileBodyReachesReadFrom: a file a handler copies to the router's
// ResponseWriter (http.ServeContent, io.Copy) reaches the server's
// ReadFrom as the file itself, so that net/http can send it with sendfile,
// and the router still counts the answer's status and bytes.
func TestFileBodyReachesReadFrom(t *testing.T) {
	data := bytes.Repeat([]byte("file bytes "), 1000)
	path := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rt := api.New(api.Config{Authenticator: authenticator{}, Limiter: ratelimit.NewMemory(nil)},
		routes(api.Route{Method: "GET", Pattern: "/file", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
			f, err := os.Open(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			http.ServeContent(w, r, "", time.Time{}, f)
		}}))
	rec := &readFromRecorder{ResponseRecorder: httptest.NewRecorder()}
	rt.ServeHTTP(rec, httptest.NewRequest("GET", "/file", nil))
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), data) {
		t.Fatalf("status %d, %d bytes; want 200 and the file", rec.Code, rec.Body.Len())
	}
	if len(rec.sources) != 1 {
		t.Fatalf("ReadFrom called %d times, want once", len(rec.sources))
	}
	lr, ok := rec.sources[0].(*io.LimitedReader)
	if !ok {
		t.Fatalf("ReadFrom given a %T, want ServeContent's *io.LimitedReader", rec.sources[0])
	}
	if _, ok := lr.R.(*os.File); !ok {
		t.Fatalf("ReadFrom given a reader of %T, want the *os.File", lr.R)
	}
}
