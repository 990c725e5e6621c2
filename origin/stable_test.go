package origin_test

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/edge"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// startTestEdge runs an edge in front of o with a cache of its own.
func startTestEdge(t *testing.T, o *testOrigin) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := edge.DefaultConfig()
	cfg.Addr = ln.Addr().String()
	cfg.Listener = ln
	cfg.OriginURL = o.URL
	cfg.CacheDir = filepath.Join(t.TempDir(), "edge-cache")
	cfg.CacheMem = 16 << 20
	cfg.CacheDisk = 64 << 20
	e, err := edge.New(cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(context.Background()); err != nil {
			t.Errorf("stop edge: %v", err)
		}
	})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return "http://" + ln.Addr().String()
}

// samePixels fails unless two PNG answers decode to the same pixels.
func samePixels(t *testing.T, a, b *apitest.Response) {
	t.Helper()
	ia, ib := apitest.DecodeImage(t, a), apitest.DecodeImage(t, b)
	if ia.Bounds() != ib.Bounds() {
		t.Fatalf("bounds %v and %v", ia.Bounds(), ib.Bounds())
	}
	r := ia.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if pa, pb := apitest.Pixel(ia, x, y), apitest.Pixel(ib, x, y); pa != pb {
				t.Fatalf("pixel (%d,%d): %v and %v", x, y, pa, pb)
			}
		}
	}
}

// TestImageETagSurvivesCompaction: the background re-compression of a PNG
// master changes its bytes, not its identity. After it, the origin and an
// edge that never saw the image answer with the ETag of the first GET, an
// If-None-Match with it is a 304 everywhere, an edge filled before agrees,
// the pixels are the same, and no Range can splice the two versions.
func TestImageETagSurvivesCompaction(t *testing.T) {
	o := startOrigin(t, func(c *origin.Config) { c.CompactIdle = -1 }) // compaction only when the test says
	id, u := o.create(t, o.Owner, map[string]any{"html": `<div style="width:300px;height:200px;background:linear-gradient(90deg,#f00,#00f)"></div>`})
	path := strings.TrimPrefix(u, o.URL)
	first := o.get(t, u)
	apitest.WantStatus(t, first, 200)
	etag := first.Header.Get("ETag")
	earlyEdge := startTestEdge(t, o)
	apitest.WantStatus(t, apitest.Do(t, earlyEdge, apitest.Request{Method: "GET", Path: path}), 200) // cached as first served

	if err := o.origin.Images().Compact(id); err != nil {
		t.Fatal(err)
	}
	again := o.get(t, u)
	apitest.WantStatus(t, again, 200)
	if len(again.Body) >= len(first.Body) || bytes.Equal(again.Body, first.Body) {
		t.Fatalf("the master was not re-encoded (%d bytes, then %d): the test proves nothing", len(first.Body), len(again.Body))
	}
	if got := again.Header.Get("ETag"); got != etag {
		t.Fatalf("ETag %s after compaction, %s before", got, etag)
	}
	samePixels(t, first, again)
	apitest.WantStatus(t, o.get(t, u, map[string]string{"If-None-Match": etag}), 304)

	freshEdge := startTestEdge(t, o)
	for _, base := range []string{freshEdge, earlyEdge} {
		r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: path})
		apitest.WantStatus(t, r, 200)
		if r.Header.Get("ETag") != etag {
			t.Fatalf("edge %s: ETag %s, origin %s", base, r.Header.Get("ETag"), etag)
		}
		samePixels(t, first, r)
		apitest.WantStatus(t, apitest.Do(t, base, apitest.Request{Method: "GET", Path: path, Header: map[string]string{"If-None-Match": etag}}), 304)
	}

	// Ranges: the PNG is sent whole whatever is asked (its bytes changed
	// under one ETag); the PDF, whose bytes never change, answers them.
	for _, h := range []map[string]string{{"Range": "bytes=0-9"}, {"Range": "bytes=100-", "If-Range": etag}} {
		r := o.get(t, u, h)
		apitest.WantStatus(t, r, 200)
		if !bytes.Equal(r.Body, again.Body) || r.Header.Get("Accept-Ranges") == "bytes" || r.Header.Get("Content-Range") != "" {
			t.Fatalf("Range %v on a PNG: %d bytes, Accept-Ranges %q, Content-Range %q", h, len(r.Body), r.Header.Get("Accept-Ranges"), r.Header.Get("Content-Range"))
		}
	}
	part := o.get(t, u+".pdf", map[string]string{"Range": "bytes=0-4"})
	if part.Status != 206 || string(part.Body) != "%PDF-" || part.Header.Get("Accept-Ranges") != "bytes" {
		t.Fatalf("PDF range: %d %q", part.Status, part.Body)
	}
	apitest.WantMessage(t, apitest.WantError(t, o.get(t, u+".pdf", map[string]string{"Range": "bytes=999999999-"}), 416), "range")
	apitest.WantError(t, o.get(t, u, map[string]string{"If-Match": `"other"`}), 412)
}
