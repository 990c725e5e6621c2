package edge

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/edge/cache"
	"github.com/pictorhq/pictor/origin/contract"
)

const testID = "01a200a1-fca9-78eb-8bb4-faf20da6204f"

// fakeOrigin serves one PNG image the way the origin does, and counts GETs.
type fakeOrigin struct {
	*httptest.Server
	gets atomic.Int64
	png  []byte
}

// redPNG is the test image: 400×200, red.
func redPNG() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 400, 200))
	for y := range 200 {
		for x := range 400 {
			img.Set(x, y, color.NRGBA{255, 0, 0, 255})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

func newFakeOrigin(t testing.TB) *fakeOrigin {
	f := &fakeOrigin{png: redPNG()}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.gets.Add(1)
		if r.URL.Path != "/v1/image/"+testID+".png" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			w.Write([]byte(`{"error":"Not Found","message":"Image not found","statusCode":404}`))
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("ETag", `"0123456789abcdef"`)
		w.Header().Set("Last-Modified", time.Unix(1_700_000_000, 0).UTC().Format(http.TimeFormat))
		w.Header().Set(contract.HeaderOrg, "org-1")
		w.Header().Set(contract.HeaderImage, testID)
		w.Write(f.png)
	}))
	t.Cleanup(f.Close)
	return f
}

func newTestEdge(t testing.TB, origin string) *Edge {
	t.Helper()
	cfg := DefaultConfig()
	cfg.OriginURL = origin
	cfg.CacheDir = filepath.Join(t.TempDir(), "cache")
	cfg.CacheMem = 16 << 20
	cfg.CacheDisk = 64 << 20
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop(context.Background()) })
	return e
}

// get answers uri, then waits for the cache writes its answer left under
// way (store), so that what the test looks at next does not race them.
func get(e *Edge, uri string, header ...string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(uri)
	for i := 0; i+1 < len(header); i += 2 {
		ctx.Request.Header.Set(header[i], header[i+1])
	}
	e.handle(&ctx)
	e.stores.settle()
	return &ctx
}

func TestEdgeServesFromCache(t *testing.T) {
	o := newFakeOrigin(t)
	e := newTestEdge(t, o.URL)
	first := get(e, "/v1/image/"+testID)
	if first.Response.StatusCode() != 200 || !bytes.Equal(first.Response.Body(), o.png) {
		t.Fatalf("first GET: %d, %d bytes", first.Response.StatusCode(), len(first.Response.Body()))
	}
	for _, uri := range []string{"/v1/image/" + testID, "/v1/image/" + testID + ".png", "/v1/image/" + testID + "?utm_source=x"} {
		r := get(e, uri)
		if r.Response.StatusCode() != 200 || !bytes.Equal(r.Response.Body(), o.png) {
			t.Fatalf("%s: %d", uri, r.Response.StatusCode())
		}
	}
	if n := o.gets.Load(); n != 1 {
		t.Fatalf("%d origin fetches for one image, want 1", n)
	}
	r := get(e, "/v1/image/"+testID, "If-None-Match", `"0123456789abcdef"`)
	if r.Response.StatusCode() != 304 || len(r.Response.Body()) != 0 {
		t.Fatalf("If-None-Match: %d", r.Response.StatusCode())
	}
	h := &first.Response.Header
	for k, want := range map[string]string{
		"Cache-Control": "public, max-age=31536000, immutable", "ETag": `"0123456789abcdef"`,
		"Content-Type": "image/png", "Last-Modified": "Tue, 14 Nov 2023 22:13:20 GMT",
	} {
		if got := string(h.Peek(k)); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if len(h.Peek(contract.HeaderOrg)) != 0 {
		t.Fatal("the origin's note leaked to the client")
	}
	if _, err := e.PurgeImage(testID); err != nil {
		t.Fatal(err)
	}
	get(e, "/v1/image/"+testID)
	if n := o.gets.Load(); n != 2 {
		t.Fatalf("after a purge the edge did not refetch (%d fetches)", n)
	}
}

// TestFlightAfterFill: a request that missed while another request's
// fill was finishing starts its own flight after that fill cached the
// entry; the flight finds it instead of fetching again (500 GETs of a
// cold URL: one origin fetch).
func TestFlightAfterFill(t *testing.T) {
	o := newFakeOrigin(t)
	e := newTestEdge(t, o.URL)
	if r := get(e, "/v1/image/"+testID); r.Response.StatusCode() != 200 {
		t.Fatalf("first GET: %d", r.Response.StatusCode())
	}
	key := "i|" + testID + "|png|"
	if _, _, ok := e.cache.Get([]byte(key)); !ok {
		t.Fatalf("the first GET cached nothing under %q: this test checks nothing", key)
	}
	// The late request's flight, as fill starts it after its miss.
	ent, err := e.flight(key, func() (*cache.Entry, error) {
		t.Error("the flight fetched an entry the cache holds")
		return e.fetch("/v1/image/"+testID+".png", "", testID, "")
	})
	if err != nil || !bytes.Equal(ent.Body, o.png) {
		t.Fatalf("flight = %v, %v", ent, err)
	}
	if n := o.gets.Load(); n != 1 {
		t.Fatalf("%d origin fetches, want 1", n)
	}
}

// BenchmarkHitL1 is the edge's hot path: a cached image, answered from
// memory. It must not allocate.
func BenchmarkHitL1(b *testing.B) {
	o := newFakeOrigin(b)
	e := newTestEdge(b, o.URL)
	uri := "/v1/image/" + testID + ".png"
	get(e, uri)
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(uri)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx.Response.Reset()
		e.handle(&ctx)
	}
	if ctx.Response.StatusCode() != 200 || !strings.HasPrefix(string(ctx.Response.Header.ContentType()), "image/png") {
		b.Fatalf("status %d", ctx.Response.StatusCode())
	}
}
