package images

import (
	"bytes"
	"context"
	"image"
	_ "image/jpeg" // image.DecodeConfig reads what the origin answers
	_ "image/png"
	"net/http"
	"strings"
	"testing"

	_ "golang.org/x/image/webp"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/perm"
)

// spellings are every spelling of every format (issue 27), the canonical
// one first.
var spellings = []struct {
	format      imageparams.Format
	contentType string
	decoded     string // image.DecodeConfig's name; none for PDF
	exts        []string
}{
	{imageparams.FormatPNG, "image/png", "png", []string{".png", "", ".PNG", ".Png"}},
	{imageparams.FormatJPG, "image/jpeg", "jpeg", []string{".jpg", ".JPG", ".jpeg", ".JPEG", ".Jpeg"}},
	{imageparams.FormatWebP, "image/webp", "webp", []string{".webp", ".WEBP", ".WebP"}},
	{imageparams.FormatPDF, "application/pdf", "", []string{".pdf", ".PDF", ".Pdf"}},
}

// TestHostileGetEverySpelling: the origin reads every spelling of a format
// as the edge does (an edge without a purge channel relays masters and
// formats as asked, and signed URLs): a GET of the image in any spelling,
// the id in either case, or of a signed URL with the format segment in
// any spelling, answers that format, the same file as its canonical
// spelling (decoded, one ETag); any other extension or format is a 404
// with the standard body.
func TestHostileGetEverySpelling(t *testing.T) {
	e := newEnv(t)
	o := e.newOrg("pro")
	k := &Signer{Org: o, APIID: "key-create", Secret: "secret-1", Grant: perm.Grant{AllFuture: true}}
	base := e.serveHTTP(e.handler(k))
	signed := "/v1/image/create-and-render/" + k.APIID + "/" + Sign(k.Secret, signedQuery)
	// The stopped engine fails the render; the image is kept, and made
	// ready below as a render would.
	apitest.WantError(t, apitest.Do(t, base, apitest.Request{Method: "GET", Path: signed + "?" + signedQuery}), http.StatusInternalServerError)
	ids := sortedKeys(e.keys(t.Context(), "img/"))
	if len(ids) != 1 {
		t.Fatalf("images %v", ids)
	}
	id := strings.TrimPrefix(ids[0], "img/")
	e.ready(id, testPNG(t, 64, 48, 3))
	pdf := []byte("%PDF-1.4\n% bytes to serve\n%%EOF\n")
	if _, err := e.svc.Keep(context.Background(), id, imageparams.FormatPDF, pdf, nil); err != nil {
		t.Fatal(err)
	}

	for _, f := range spellings {
		t.Run(string(f.format), func(t *testing.T) {
			etag := ""
			var paths []string
			for _, ext := range f.exts {
				paths = append(paths, "/v1/image/"+id+ext, "/v1/image/"+strings.ToUpper(id)+ext,
					signed+strings.Replace(ext, ".", "/", 1)+"?"+signedQuery)
			}
			for _, path := range paths {
				r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: path})
				apitest.WantStatus(t, r, http.StatusOK)
				if ct := r.Header.Get("Content-Type"); ct != f.contentType || r.Header.Get(contract.HeaderImage) != id {
					t.Fatalf("GET %s: Content-Type %q, image %q", path, ct, r.Header.Get(contract.HeaderImage))
				}
				if etag == "" {
					etag = r.Header.Get("ETag")
				}
				if r.Header.Get("ETag") != etag {
					t.Fatalf("GET %s: ETag %q, another file than the canonical spelling's %q", path, r.Header.Get("ETag"), etag)
				}
				if f.decoded == "" {
					if !bytes.Equal(r.Body, pdf) {
						t.Fatalf("GET %s: not the PDF", path)
					}
					continue
				}
				cfg, name, err := image.DecodeConfig(bytes.NewReader(r.Body))
				if err != nil || name != f.decoded || cfg.Width != 64 || cfg.Height != 48 {
					t.Fatalf("GET %s: a %s of %d×%d (%v), want a %s of 64×48", path, name, cfg.Width, cfg.Height, err, f.decoded)
				}
			}
		})
	}
	for _, ext := range []string{".", "..png", ".PNG.", ".png.", ".gif", ".pngx", ".jpe", ".JPEGG", ".p%20ng"} {
		t.Run("bad "+ext, func(t *testing.T) {
			for _, i := range []string{id, strings.ToUpper(id)} {
				r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/v1/image/" + i + ext})
				apitest.WantMessage(t, apitest.WantError(t, r, http.StatusNotFound), "Image not found")
			}
			if seg := strings.Replace(ext, ".", "/", 1); seg != "/" && !strings.Contains(seg[1:], ".") {
				r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: signed + seg + "?" + signedQuery})
				apitest.WantMessage(t, apitest.WantError(t, r, http.StatusNotFound), "Unknown format")
			}
		})
	}
}
