//go:build !race

package edge

import (
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/edge/compress"
	"github.com/pictorhq/pictor/origin/contract/apidocs"
	"github.com/pictorhq/pictor/origin/contract/openapi"
)

// TestDocsAllocateNothing: the OpenAPI document and the reference page's
// files are answered from the binary, the whole handler included, without
// allocating: 200, 304 and HEAD alike. Built without the race detector, as
// the other allocation tests.
func TestDocsAllocateNothing(t *testing.T) {
	o := newFakeOrigin(t)
	e := newTestEdge(t, o.URL)
	for _, tc := range []struct {
		name, method, uri, inm, ae string
		status                     int
	}{
		{"openapi.json", "GET", "/v1/openapi.json", "", "", 200},
		{"openapi.yaml, not modified", "GET", "/v1/openapi.yaml", "W/" + openapi.YAMLETag(), "", 304},
		{"openapi.json, HEAD", "HEAD", "/v1/openapi.json", "", "", 200},
		{"page", "GET", apidocs.PagePath, "", "br", 200},
		{"bundle", "GET", apidocs.ScriptPath, "", "", 200},
		{"openapi.json, brotli", "GET", "/v1/openapi.json", "", "gzip, deflate, br, zstd", 200},
		{"bundle, gzip, not modified", "GET", apidocs.ScriptPath, `"x", ` + compress.ETag(scriptETag(t), compress.Gzip), "br;q=0.5, gzip", 304},
		{"openapi.yaml, gzip, HEAD", "HEAD", "/v1/openapi.yaml", "", "GZIP", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ctx fasthttp.RequestCtx
			ctx.Request.Header.SetMethod(tc.method)
			ctx.Request.SetRequestURI(tc.uri)
			if tc.inm != "" {
				ctx.Request.Header.Set("If-None-Match", tc.inm)
			}
			if tc.ae != "" {
				ctx.Request.Header.Set("Accept-Encoding", tc.ae)
			}
			allocs := testing.AllocsPerRun(1000, func() {
				ctx.Response.Reset()
				e.handle(&ctx)
			})
			if s := ctx.Response.StatusCode(); s != tc.status {
				t.Fatalf("status %d, want %d", s, tc.status)
			}
			if allocs != 0 {
				t.Fatalf("%v allocations per answer, want 0", allocs)
			}
		})
	}
	if n := o.gets.Load(); n != 0 {
		t.Fatalf("%d requests reached the origin", n)
	}
}

// scriptETag is the ETag of the reference page's bundle.
func scriptETag(t *testing.T) string {
	for _, f := range apidocs.Files() {
		if f.Path == apidocs.ScriptPath {
			return f.ETag
		}
	}
	t.Fatal("no bundle among apidocs.Files()")
	return ""
}
