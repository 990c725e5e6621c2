package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/render/rendertest"
	"github.com/pictorhq/pictor/origin/rendition"
	"github.com/pictorhq/pictor/origin/usage"
)

// env is one test's image handlers over the image service
// (origin/rendition), built from real parts: pebble on a temp
// dir, the blob store beside it, organizations in the same store, and a
// render engine that is stopped, as a shutting-down origin's is. Every
// render therefore fails at once with render.ErrStopped (a transient 500,
// recorded nowhere) and Chromium never starts: renders themselves are the
// integration suite's (package origin). A test that needs a rendered
// master stores one with ready, the way a render's result is stored.
type env struct {
	t     *testing.T
	dir   string
	store kv.Store
	blobs *blob.Store
	orgs  *org.Store
	clock *apitest.Clock
	svc   *rendition.Service
}

// newEnv starts a service over a fresh data directory. Each configure
// edits the service's configuration before it starts.
func newEnv(t *testing.T, configure ...func(*rendition.Config)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: apitest.NewClock(time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC))}
	store, err := pebblekv.Open(filepath.Join(e.dir, "kv"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() }) // last: cleanups run last-in first-out
	e.store = store
	if e.blobs, err = blob.Open(filepath.Join(e.dir, "images")); err != nil {
		t.Fatal(err)
	}
	e.orgs = org.NewStore(store, e.clock.Now)
	cfg := rendition.DefaultConfig()
	cfg.Store, cfg.Blobs, cfg.Engine, cfg.Now, cfg.CompactIdle = store, e.blobs, rendertest.Stopped(t), e.clock.Now, -1
	for _, c := range configure {
		c(&cfg)
	}
	e.svc, err = rendition.NewService(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.svc.Close)
	return e
}

// newOrg creates an organization on the plan.
func (e *env) newOrg(plan string) *org.Org {
	e.t.Helper()
	o, err := e.orgs.Create("org "+plan, plan)
	if err != nil {
		e.t.Fatal(err)
	}
	return o
}

// used is the credits o used in the current billing period.
func (e *env) used(ctx context.Context, o *org.Org) int64 {
	e.t.Helper()
	n, err := usage.Used(ctx, e.store, o, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// create creates one image with p for o and fails the test on an error.
func (e *env) create(o *org.Org, it rendition.Item) rendition.Created {
	e.t.Helper()
	created, _, err := e.svc.Create(context.Background(), o, []rendition.Item{it})
	if err != nil {
		e.t.Fatal(err)
	}
	return created[0]
}

// get returns the stored record of id.
func (e *env) get(ctx context.Context, id string) *rendition.Image {
	e.t.Helper()
	img, err := e.svc.Get(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return img
}

// ready stores data as the image's master, the way a render's result is
// stored (rendition.Service.Keep), so the image is ready with a PNG master.
func (e *env) ready(id string, data []byte) *rendition.Image {
	e.t.Helper()
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		e.t.Fatal(err)
	}
	img, err := e.svc.Keep(context.Background(), id, imageparams.FormatPNG, data, func(img *rendition.Image) {
		img.State, img.Width, img.Height = rendition.StateReady, cfg.Width, cfg.Height
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return img
}

// keys returns every key of the store under prefix and its value.
func (e *env) keys(ctx context.Context, prefix string) map[string]string {
	e.t.Helper()
	out := map[string]string{}
	it := e.store.Iterate(ctx, []byte(prefix), kv.IterOptions{})
	for it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// testPNG is a w×h gradient encoded without compression, as a fast capture
// is: compaction always shrinks it. seed varies its pixels.
func testPNG(t *testing.T, w, h int, seed uint8) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x) + seed, G: uint8(y), B: seed, A: 255})
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.NoCompression}
	if err := enc.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// html is the parameters of an HTML image, as imageparams.Parse gives them.
func html(s string) imageparams.Params {
	return imageparams.Params{HTML: s, Format: imageparams.FormatPNG}
}

// signers is a SignerStore over a fixed set of keys (the real one wraps the
// API key store of package origin).
type signers []*Signer

func (s signers) Signer(ctx context.Context, apiID string) (*Signer, error) {
	for _, k := range s {
		if k.APIID == apiID {
			return k, nil
		}
	}
	return nil, fmt.Errorf("no key %q", apiID)
}

func (s signers) Signers(ctx context.Context, orgID string) ([]*Signer, error) {
	var out []*Signer
	for _, k := range s {
		if k.Org.ID == orgID {
			out = append(out, k)
		}
	}
	return out, nil
}

var _ SignerStore = signers(nil)

// orgHeader names the organization a request to serveHTTP acts for, in
// place of the API key the router would authenticate.
const orgHeader = "X-Test-Org"

// serveHTTP serves h on loopback under the origin's image routes (as
// origin/routes.go declares them) and returns its base URL. An
// authenticated route acts for the organization orgHeader names.
func (e *env) serveHTTP(h *Handler) string {
	e.t.Helper()
	mux := http.NewServeMux()
	authed := func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			o, err := e.orgs.Get(r.Context(), r.Header.Get(orgHeader))
			if err != nil {
				http.Error(w, "test: unknown organization", http.StatusUnauthorized)
				return
			}
			p := &auth.Principal{Org: o, Grant: perm.Grant{AllFuture: true}}
			next(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
		}
	}
	// answer writes a handler's error as the router does (api.HandlerFunc).
	answer := func(next func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if err := next(w, r); err != nil {
				apierr.Write(w, r, err)
			}
		}
	}
	mux.HandleFunc("POST /v1/image", authed(answer(h.Create)))
	mux.HandleFunc("POST /v1/image/batch", authed(answer(h.Batch)))
	mux.HandleFunc("GET /v1/image/{id}", answer(h.Get))
	mux.HandleFunc("DELETE /v1/image/{id}", authed(answer(h.Delete)))
	mux.HandleFunc("DELETE /v1/image/batch", authed(answer(h.DeleteBatch)))
	mux.HandleFunc("GET /v1/images", authed(answer(h.List)))
	mux.HandleFunc("GET /v1/image/create-and-render/{api_id}/{token}", answer(h.CreateAndRender))
	mux.HandleFunc("GET /v1/image/create-and-render/{api_id}/{token}/{format}", answer(h.CreateAndRender))
	mux.HandleFunc("POST /v1/image/{template_id}", authed(answer(h.Create)))
	mux.HandleFunc("POST /v1/image/{template_id}/{template_version}", authed(answer(h.Create)))
	mux.HandleFunc("GET /v1/image/{template_id}/{token}", answer(h.TemplateURL))
	mux.HandleFunc("GET /v1/image/{template_id}/{token}/{format}", answer(h.TemplateURL))
	srv := httptest.NewServer(mux)
	e.t.Cleanup(srv.Close)
	return srv.URL
}

// handler is the Handler the origin wires, over this env's service.
func (e *env) handler(keys ...*Signer) *Handler {
	return &Handler{Service: e.svc, Orgs: e.orgs, PublicURL: "https://api.example.test/", Keys: signers(keys),
		Cursors: cursor.New([]byte("0123456789abcdef0123456789abcdef"))}
}

// as is the header of a request made for o.
func as(o *org.Org) map[string]string { return map[string]string{orgHeader: o.ID} }

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
