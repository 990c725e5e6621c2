package images

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/render"
	"github.com/pictorhq/pictor/origin/rendition"
)

// TestServe: a GET answers the file with its type, its ETag, immutable
// caching, and the edge's purge notes; a conditional GET is a 304 with the
// same ETag before and after the master is compacted; a HEAD has no body.
// Range is served for PDFs only (their bytes never change), and a range
// or precondition that fails gets the standard body, never cached.
func TestServe(t *testing.T) {
	e := newEnv(t)
	base := e.serveHTTP(e.handler())
	o := e.newOrg("pro")
	img := e.create(o, rendition.Item{Params: html("x")})
	master := testPNG(t, 64, 48, 5)
	etag := e.ready(img.ID, master).Renditions["png"].ETag
	pdf := []byte("%PDF-1.4\n% not a real document, bytes to serve\n%%EOF\n")
	if _, err := e.svc.Keep(context.Background(), img.ID, imageparams.FormatPDF, pdf, nil); err != nil {
		t.Fatal(err)
	}
	path := "/v1/image/" + img.ID
	get := func(method, path string, header map[string]string) *apitest.Response {
		t.Helper()
		return apitest.Do(t, base, apitest.Request{Method: method, Path: path, Header: header})
	}

	r := get("GET", path, nil)
	apitest.WantStatus(t, r, http.StatusOK)
	want := map[string]string{
		"Content-Type": "image/png", "ETag": etag, "Cache-Control": "public, max-age=31536000, immutable",
		"X-Content-Type-Options": "nosniff", contract.HeaderOrg: o.ID, contract.HeaderImage: img.ID, "Accept-Ranges": "",
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Fatalf("%s: %q, want %q", k, got, v)
		}
	}
	if !bytes.Equal(r.Body, master) {
		t.Fatal("the body is not the master")
	}
	if err := e.svc.Compact(img.ID); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		method  string
		path    string
		header  map[string]string
		status  int
		etag    string
		body    func([]byte) bool
		message string // of an error
	}{
		{name: "compacted master", path: path, status: 200, etag: etag,
			body: func(b []byte) bool { return len(b) < len(master) && apitest.SamePixels(t, b, master) }},
		{name: "uppercase id, .PNG", path: "/v1/image/" + strings.ToUpper(img.ID) + ".PNG", status: 200, etag: etag},
		{name: "if-none-match", path: path, header: map[string]string{"If-None-Match": etag}, status: 304, etag: etag,
			body: func(b []byte) bool { return len(b) == 0 }},
		{name: "if-none-match after compaction, any etag", path: path, header: map[string]string{"If-None-Match": `"x", ` + etag},
			status: 304, etag: etag},
		{name: "head", method: "HEAD", path: path, status: 200, etag: etag, body: func(b []byte) bool { return len(b) == 0 }},
		{name: "range on a png is the whole file", path: path, header: map[string]string{"Range": "bytes=0-3"}, status: 200, etag: etag,
			body: func(b []byte) bool { return len(b) > 4 }},
		{name: "pdf", path: path + ".pdf", status: 200, body: func(b []byte) bool { return bytes.Equal(b, pdf) }},
		{name: "range on a pdf", path: path + ".pdf", header: map[string]string{"Range": "bytes=0-3"}, status: 206,
			body: func(b []byte) bool { return string(b) == "%PDF" }},
		{name: "range past the end of a pdf", path: path + ".pdf", header: map[string]string{"Range": "bytes=5000-6000"}, status: 416,
			message: "range is not satisfiable"},
		{name: "failed precondition", path: path, header: map[string]string{"If-Match": `"other"`}, status: 412,
			message: "precondition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			r := get(method, tt.path, tt.header)
			if tt.message != "" {
				apitest.WantMessage(t, apitest.WantError(t, r, tt.status), tt.message)
				if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
					t.Fatalf("an error answer with Cache-Control %q", cc)
				}
				return
			}
			apitest.WantStatus(t, r, tt.status)
			if tt.etag != "" && r.Header.Get("ETag") != tt.etag {
				t.Fatalf("ETag %q, want %q", r.Header.Get("ETag"), tt.etag)
			}
			if tt.body != nil && !tt.body(r.Body) {
				t.Fatalf("unexpected body of %d bytes", len(r.Body))
			}
		})
	}
}

// TestServeErrors: a GET that cannot answer the file answers the standard
// body, not cached: 404 for what is not an image of an active
// organization, the recorded failure of a render that failed for good,
// and a transient failure (here the stopped engine's) without recording it.
func TestServeErrors(t *testing.T) {
	e := newEnv(t)
	base := e.serveHTTP(e.handler())
	active, suspended := e.newOrg("pro"), e.newOrg("pro")
	ofSuspended := e.create(suspended, rendition.Item{Params: html("s")})
	e.ready(ofSuspended.ID, testPNG(t, 4, 4, 0))
	if _, err := e.orgs.SetSuspended(t.Context(), suspended.ID, true); err != nil {
		t.Fatal(err)
	}
	failed := e.create(active, rendition.Item{Params: html("f")})
	e.svc.Fail(failed.Image, render.ErrSelectorNotFound, false)
	pending := e.create(active, rendition.Item{Params: html("p")})

	tests := []struct {
		name    string
		path    string
		status  int
		message string
		// malformed: a path that never names an image is answered before
		// any lookup, without Cache-Control (it can never change).
		malformed bool
	}{
		{name: "not an id", path: "/v1/image/abc", status: 404, message: "Image not found", malformed: true},
		{name: "id without hyphens", path: "/v1/image/" + strings.ReplaceAll(pending.ID, "-", ""), status: 404, malformed: true},
		{name: "unknown extension", path: "/v1/image/" + pending.ID + ".gif", status: 404, malformed: true},
		{name: "unknown image", path: "/v1/image/0195f0a0-0000-7000-8000-000000000000", status: 404, message: "Image not found"},
		{name: "suspended organization", path: "/v1/image/" + ofSuspended.ID, status: 404, message: "Image not found"},
		{name: "recorded failure", path: "/v1/image/" + failed.ID, status: 400, message: "Render failed: " + render.ErrSelectorNotFound.Error()},
		{name: "recorded failure, jpg", path: "/v1/image/" + failed.ID + ".jpg", status: 400, message: "Render failed: "},
		{name: "render failed now", path: "/v1/image/" + pending.ID, status: 500, message: "Render failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: tt.path})
			apitest.WantMessage(t, apitest.WantError(t, r, tt.status), tt.message)
			if cc := r.Header.Get("Cache-Control"); cc != "no-store" && !tt.malformed {
				t.Fatalf("an error answer with Cache-Control %q", cc)
			}
		})
	}
	if img := e.get(t.Context(), pending.ID); img.State != rendition.StatePending || img.Failure != nil {
		t.Fatalf("a transient failure was recorded: %+v", img)
	}
}

// TestParsePath: "<id>[.ext]" gives the canonical id and the format.
func TestParsePath(t *testing.T) {
	const id = "0195f0a0-1234-7abc-8def-0123456789ab"
	tests := []struct {
		name   string
		seg    string
		format imageparams.Format
		ok     bool
	}{
		{name: "bare id", seg: id, format: imageparams.FormatPNG, ok: true},
		{name: "uppercase", seg: strings.ToUpper(id) + ".JPEG", format: imageparams.FormatJPG, ok: true},
		{name: "jpg", seg: id + ".jpg", format: imageparams.FormatJPG, ok: true},
		{name: "webp", seg: id + ".webp", format: imageparams.FormatWebP, ok: true},
		{name: "pdf", seg: id + ".pdf", format: imageparams.FormatPDF, ok: true},
		{name: "png", seg: id + ".png", format: imageparams.FormatPNG, ok: true},
		{name: "PNG", seg: id + ".PNG", format: imageparams.FormatPNG, ok: true},
		{name: "Png", seg: id + ".Png", format: imageparams.FormatPNG, ok: true},
		{name: "JPG", seg: id + ".JPG", format: imageparams.FormatJPG, ok: true},
		{name: "jpeg", seg: id + ".jpeg", format: imageparams.FormatJPG, ok: true},
		{name: "Jpeg", seg: id + ".Jpeg", format: imageparams.FormatJPG, ok: true},
		{name: "WEBP", seg: id + ".WEBP", format: imageparams.FormatWebP, ok: true},
		{name: "PDF", seg: id + ".PDF", format: imageparams.FormatPDF, ok: true},
		{name: "unknown extension", seg: id + ".gif"},
		{name: "extension with a trailing dot", seg: id + ".PNG."},
		{name: "extension after two dots", seg: id + "..png"},
		{name: "longer extension", seg: id + ".pngx"},
		{name: "jpe", seg: id + ".jpe"},
		{name: "two extensions", seg: id + ".png.png"},
		{name: "empty extension", seg: id + "."},
		{name: "no hyphens", seg: strings.ReplaceAll(id, "-", "")},
		{name: "braces", seg: "{" + id + "}"},
		{name: "urn", seg: "urn:uuid:" + id},
		{name: "empty", seg: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, format, ok := ParsePath(tt.seg)
			if ok != tt.ok || (ok && (got != id || format != tt.format)) {
				t.Fatalf("ParsePath(%q) = %q, %q, %v", tt.seg, got, format, ok)
			}
		})
	}
}
