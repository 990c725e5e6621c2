package edge

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/imaging"
)

// versionedOrigin serves testID's PNG master as the origin does; set
// changes it (a re-render), and gets counts the GETs.
type versionedOrigin struct {
	*httptest.Server
	gets    atomic.Int64
	version atomic.Int64
	bodies  [][]byte
}

func newVersionedOrigin(t *testing.T) *versionedOrigin {
	v := &versionedOrigin{bodies: [][]byte{redPNG(), noisy(64 << 10)}}
	v.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.gets.Add(1)
		n := v.version.Load()
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, n))
		w.Header().Set(contract.HeaderOrg, "org-1")
		w.Header().Set(contract.HeaderImage, testID)
		w.Write(v.bodies[n])
	}))
	t.Cleanup(v.Close)
	return v
}

// holdPuts makes e's cache writes after an answer wait: each reports its
// key on held, then waits for release, which the test's end calls too
// (Stop waits for them). Call it after the edge's cleanup is registered.
func holdPuts(t *testing.T, e *Edge) (held chan string, release func()) {
	held, gate := make(chan string, 64), make(chan struct{})
	e.stores.beforePut = func(key string) {
		held <- key
		<-gate
	}
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	return held, release
}

// waitHeld returns the key of the next put held, failing the test if none
// comes: the answer was not followed by a put.
func waitHeld(t *testing.T, held chan string) string {
	t.Helper()
	select {
	case k := <-held:
		return k
	case <-time.After(time.Minute):
		t.Fatal("no cache write after the answer")
		return ""
	}
}

// answerOnly is get without waiting for the cache writes.
func answerOnly(e *Edge, uri string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(uri)
	e.handle(&ctx)
	return &ctx
}

// TestAnsweredBeforeCached: a miss is answered while its entry is still
// being written to the cache; until then a miss of the same URL is
// answered from that entry without fetching again, unless a purge of its
// image ran, and a purge's refusal holds for the write that comes later.
func TestAnsweredBeforeCached(t *testing.T) {
	o := newVersionedOrigin(t)
	e := newTestEdge(t, o.URL)
	held, release := holdPuts(t, e)
	uri := "/v1/image/" + testID + ".png"
	key := []byte("i|" + testID + "|png|")

	first := answerOnly(e, uri)
	if first.Response.StatusCode() != 200 || !bytes.Equal(first.Response.Body(), o.bodies[0]) {
		t.Fatalf("first GET: %d, %d bytes", first.Response.StatusCode(), len(first.Response.Body()))
	}
	if k := waitHeld(t, held); k != string(key) {
		t.Fatalf("held the put of %q, want %q", k, key)
	}
	if _, _, ok := e.cache.Get(key); ok {
		t.Fatal("the entry is in the cache while its put is held: the answer waited for it")
	}
	second := answerOnly(e, uri)
	if !bytes.Equal(second.Response.Body(), o.bodies[0]) || string(second.Response.Header.Peek("ETag")) != `"v0"` {
		t.Fatalf("second GET: %d, ETag %s", second.Response.StatusCode(), second.Response.Header.Peek("ETag"))
	}
	if n := o.gets.Load(); n != 1 {
		t.Fatalf("%d origin fetches while the entry was pending, want 1", n)
	}

	o.version.Store(1)
	if _, err := e.PurgeImage(testID); err != nil {
		t.Fatal(err)
	}
	third := answerOnly(e, uri)
	if !bytes.Equal(third.Response.Body(), o.bodies[1]) || o.gets.Load() != 2 {
		t.Fatalf("after the purge: ETag %s, %d origin fetches: the pending entry was answered", third.Response.Header.Peek("ETag"), o.gets.Load())
	}
	waitHeld(t, held) // the refetch's own put
	release()
	e.stores.settle()
	if s := e.cache.Stats(); s.PutsPurged != 1 {
		t.Fatalf("PutsPurged = %d: the purged entry's put was not refused", s.PutsPurged)
	}
	ent, _, ok := e.cache.Get(key)
	if !ok || ent.ETag != `"v1"` {
		t.Fatalf("cached after both puts: %v", ent)
	}
	if r := answerOnly(e, uri); !bytes.Equal(r.Response.Body(), o.bodies[1]) || o.gets.Load() != 2 {
		t.Fatalf("a GET after the puts fetched again (%d fetches)", o.gets.Load())
	}
}

// TestPendingPutsBounded: at most maxPendingPuts entries wait to be
// cached; a fill beyond them is cached before its answer.
func TestPendingPutsBounded(t *testing.T) {
	o := newFakeOrigin(t)
	e := newTestEdge(t, o.URL)
	held, _ := holdPuts(t, e)
	base := "/v1/image/" + testID + ".png?width="
	// The master and the first renditions take every slot.
	for w := 100; len(e.stores.slots) < maxPendingPuts; w++ {
		if r := answerOnly(e, fmt.Sprint(base, w)); r.Response.StatusCode() != 200 {
			t.Fatalf("width %d: %d %s", w, r.Response.StatusCode(), r.Response.Body())
		}
	}
	for range maxPendingPuts {
		waitHeld(t, held)
	}
	r := answerOnly(e, base+"64")
	img, err := png.Decode(bytes.NewReader(r.Response.Body()))
	if err != nil || img.Bounds().Dx() != 64 {
		t.Fatalf("width 64: %v", err)
	}
	opts, err := imaging.Parse(imaging.PNG, []byte("width=64"))
	if err != nil {
		t.Fatal(err)
	}
	key := opts.Key([]byte("i|" + testID + "|png|"))
	if _, _, ok := e.cache.Get(key); !ok {
		t.Fatalf("with every slot taken, the fill of %q was answered before it was cached", key)
	}
	if n := len(e.stores.slots); n != maxPendingPuts {
		t.Fatalf("%d puts pending, want %d", n, maxPendingPuts)
	}
}

// TestStopWritesPending: entries answered before a stop are in the cache
// the next start opens.
func TestStopWritesPending(t *testing.T) {
	o := newFakeOrigin(t)
	cfg := DefaultConfig()
	cfg.OriginURL = o.URL
	cfg.CacheDir = t.TempDir()
	cfg.CacheMem, cfg.CacheDisk = 16<<20, 64<<20
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	held, release := holdPuts(t, e)
	if r := answerOnly(e, "/v1/image/"+testID); r.Response.StatusCode() != 200 {
		t.Fatalf("GET: %d", r.Response.StatusCode())
	}
	waitHeld(t, held)
	release()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Stop(ctx)
	if r := get(again, "/v1/image/"+testID); !bytes.Equal(r.Response.Body(), o.png) || o.gets.Load() != 1 {
		t.Fatalf("after the restart: %d, %d origin fetches: the pending entry was lost", r.Response.StatusCode(), o.gets.Load())
	}
}
