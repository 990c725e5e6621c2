//go:build !race

package edge

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// TestHitL1AllocatesNothing: answering a cached image from memory, the
// whole handler included, allocates nothing on average (ristretto's access
// buffer, one slice per 64 hits handed to its admission policy, rounds
// down to 0). Built without the race detector, which makes sync.Pool drop
// items at random; `make test` runs it in its race-free pass.
func TestHitL1AllocatesNothing(t *testing.T) {
	o := newFakeOrigin(t)
	e := newTestEdge(t, o.URL)
	uri := "/v1/image/" + testID + ".png"
	get(e, uri)
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(uri)
	allocs := testing.AllocsPerRun(1000, func() {
		ctx.Response.Reset()
		e.handle(&ctx)
	})
	if ctx.Response.StatusCode() != 200 || len(ctx.Response.Body()) == 0 {
		t.Fatalf("status %d, %d bytes: not a hit", ctx.Response.StatusCode(), len(ctx.Response.Body()))
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per L1 hit, want 0", allocs)
	}
}
