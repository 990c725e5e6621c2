package images

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/render"
	"github.com/pictorhq/pictor/origin/rendition"
)

// masterFile is the name of an image's PNG master in the blob store.
var masterFile, _ = rendition.FileName(string(imageparams.FormatPNG))

// heldBlobs holds every Put of a file named name until let.
type heldBlobs struct {
	blob.Blobs
	name    string
	entered chan struct{} // a value per held Put
	release chan struct{}
	once    sync.Once
}

func newHeldBlobs(b blob.Blobs, name string) *heldBlobs {
	return &heldBlobs{Blobs: b, name: name, entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (h *heldBlobs) let() { h.once.Do(func() { close(h.release) }) }

func (h *heldBlobs) Put(ctx context.Context, id, name string, data []byte) error {
	if name == h.name {
		h.entered <- struct{}{}
		<-h.release
	}
	return h.Blobs.Put(ctx, id, name, data)
}

// testEngine renders every page as its own PNG, counting the renders.
type testEngine struct {
	data  []byte
	calls atomic.Int32
}

func (e *testEngine) Render(ctx context.Context, r *render.Request) (*render.Result, error) {
	e.calls.Add(1)
	cfg, err := png.DecodeConfig(bytes.NewReader(e.data))
	if err != nil {
		return nil, err
	}
	return &render.Result{Data: e.data, Width: cfg.Width, Height: cfg.Height}, nil
}

func (e *testEngine) IdleFor() time.Duration { return 0 }

var _ rendition.Engine = (*testEngine)(nil)

// flightEnv is an env whose service renders with a test engine and
// stores through held blobs.
func flightEnv(t *testing.T, hold string) (*env, *heldBlobs, *testEngine) {
	e := newEnv(t)
	held := newHeldBlobs(e.blobs, hold)
	eng := &testEngine{data: testPNG(t, 8, 6, 7)}
	cfg := rendition.DefaultConfig()
	cfg.Store, cfg.Blobs, cfg.Engine, cfg.Now, cfg.CompactIdle = e.store, held, eng, e.clock.Now, -1
	svc, err := rendition.NewService(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	t.Cleanup(held.let) // before Close: cleanups run last-in first-out
	e.svc = svc
	return e, held, eng
}

// TestGetAnsweredWhileStored: the GETs waiting for a render are answered
// from its bytes while the blob store still writes them; the answer is
// the one a GET of the stored file gives later (bytes and every header),
// and the record holds the file once the write ended.
func TestGetAnsweredWhileStored(t *testing.T) {
	e, held, eng := flightEnv(t, masterFile)
	base := e.serveHTTP(e.handler())
	o := e.newOrg("pro")
	img := e.create(o, rendition.Item{Params: html("x")})
	path := "/v1/image/" + img.ID

	select {
	case <-held.entered: // the creation's background render is storing its master
	case <-time.After(time.Minute):
		t.Fatal("the master was never stored")
	}
	const gets = 3
	answers := make(chan *apitest.Response, gets)
	for range gets {
		go func() { answers <- apitest.Do(t, base, apitest.Request{Method: "GET", Path: path}) }()
	}
	var early []*apitest.Response
	for range gets {
		select {
		case r := <-answers:
			early = append(early, r)
		case <-time.After(time.Minute):
			t.Fatal("a GET waited for the store")
		}
	}
	if got := e.get(t.Context(), img.ID); got.State != rendition.StatePending || len(got.Renditions) != 0 {
		t.Fatalf("the record changed before the write ended: %+v", got)
	}
	held.let()
	// The flight ends once the record is written: a GET after it joins no
	// flight and opens the stored file.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := e.svc.Open(ctx, img.ID, imageparams.FormatPNG)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	stored := apitest.Do(t, base, apitest.Request{Method: "GET", Path: path})
	apitest.WantStatus(t, stored, http.StatusOK)
	if !bytes.Equal(stored.Body, eng.data) {
		t.Fatal("the stored master is not the render's")
	}
	for i, r := range early {
		apitest.WantStatus(t, r, http.StatusOK)
		if !bytes.Equal(r.Body, stored.Body) {
			t.Fatalf("GET %d: %d bytes, the stored file has %d", i, len(r.Body), len(stored.Body))
		}
		for _, k := range []string{"Content-Type", "Content-Length", "ETag", "Last-Modified", "Cache-Control",
			"X-Content-Type-Options", "Accept-Ranges", contract.HeaderOrg, contract.HeaderImage} {
			if got, want := r.Header.Values(k), stored.Header.Values(k); !equalStrings(got, want) {
				t.Fatalf("GET %d: %s %q, the stored file's %q", i, k, got, want)
			}
		}
		if len(r.Header) != len(stored.Header) {
			t.Fatalf("GET %d: headers %v, the stored file's %v", i, r.Header, stored.Header)
		}
	}
	if got := e.get(ctx, img.ID); got.State != rendition.StateReady || got.Renditions["png"].ETag != stored.Header.Get("ETag") {
		t.Fatalf("record after the write: %+v", got)
	}
	if n := eng.calls.Load(); n != 1 {
		t.Fatalf("%d renders, want 1", n)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
