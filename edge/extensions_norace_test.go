//go:build !race

package edge

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestSpelledHitsAllocateNothing: a hit asked for in another spelling
// (the id in upper case, ".JPEG" for jpg, "/PDF" in a signed URL), whose
// key is written in the canonical one, allocates nothing either.
func TestSpelledHitsAllocateNothing(t *testing.T) {
	o := newSpellingOrigin(t)
	e := newTestEdge(t, o.URL)
	for _, uri := range []string{
		"/v1/image/" + strings.ToUpper(testID) + ".JPEG?width=100",
		"/v1/image/" + testID + ".Png",
		signedPath + "/PDF?html=x",
	} {
		t.Run(uri, func(t *testing.T) {
			get(e, uri)
			before := o.requests()
			var ctx fasthttp.RequestCtx
			ctx.Request.SetRequestURI(uri)
			allocs := testing.AllocsPerRun(1000, func() {
				ctx.Response.Reset()
				e.handle(&ctx)
			})
			if ctx.Response.StatusCode() != 200 || len(ctx.Response.Body()) == 0 || o.requests() != before {
				t.Fatalf("status %d, %d bytes, %d origin requests: not a hit", ctx.Response.StatusCode(), len(ctx.Response.Body()), o.requests()-before)
			}
			if allocs != 0 {
				t.Fatalf("%v allocations per hit, want 0", allocs)
			}
		})
	}
}
