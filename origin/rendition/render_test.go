package rendition

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image"
	_ "image/jpeg" // decodes the JPEG rendition
	"io"
	"os"
	"testing"

	_ "golang.org/x/image/webp" // decodes the WebP rendition

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/imageparams"
)

// TestETagNamesTheFirstBytes: a rendition's ETag is the quoted hex of the
// first 16 bytes of the SHA-256 of the bytes it was first stored with, so
// the same file gets the same ETag and another file another.
func TestETagNamesTheFirstBytes(t *testing.T) {
	a, b := testPNG(t, 4, 4, 0), testPNG(t, 4, 4, 1)
	sum := sha256.Sum256(a)
	want := `"` + hex.EncodeToString(sum[:16]) + `"`
	tests := []struct {
		name string
		data []byte
		same bool
	}{
		{name: "the same bytes", data: bytes.Clone(a), same: true},
		{name: "other bytes", data: b},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var first, second Image
			setRendition(&first, imageparams.FormatPNG, renditionOf(a))
			setRendition(&second, imageparams.FormatPNG, renditionOf(tt.data))
			if got := first.Renditions["png"]; got.ETag != want || got.Size != int64(len(a)) {
				t.Fatalf("rendition %+v, want ETag %s and size %d", got, want, len(a))
			}
			if same := first.Renditions["png"].ETag == second.Renditions["png"].ETag; same != tt.same {
				t.Fatalf("ETags %s and %s: same = %v, want %v", first.Renditions["png"].ETag, second.Renditions["png"].ETag, same, tt.same)
			}
		})
	}
}

// TestConversionsAreMadeOnce: a JPEG or WebP rendition is made from the
// master on first use and served from storage after, with one ETag.
func TestConversionsAreMadeOnce(t *testing.T) {
	tests := []struct {
		name   string
		format imageparams.Format
		decode string
	}{
		{name: "jpeg", format: imageparams.FormatJPG, decode: "jpeg"},
		{name: "webp", format: imageparams.FormatWebP, decode: "webp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			img := e.create(e.newOrg("pro"), Item{Params: html("x")})
			e.ready(img.ID, testPNG(t, 40, 30, 0))
			first := open(t, e, img.ID, tt.format)
			second := open(t, e, img.ID, tt.format)
			if first.rend != second.rend || first.rend.ETag == "" {
				t.Fatalf("renditions %+v then %+v", first.rend, second.rend)
			}
			if !os.SameFile(first.info, second.info) {
				t.Fatal("the rendition was made again")
			}
			cfg, format, err := image.DecodeConfig(bytes.NewReader(first.data))
			if err != nil || format != tt.decode || cfg.Width != 40 || cfg.Height != 30 {
				t.Fatalf("the rendition decodes as %s %dx%d (%v)", format, cfg.Width, cfg.Height, err)
			}
			if master := e.get(t.Context(), img.ID).Renditions["png"]; master.ETag == first.rend.ETag {
				t.Fatal("the rendition has the master's ETag")
			}
		})
	}
}

// opened is what Open gave.
type opened struct {
	rend Info
	info os.FileInfo
	data []byte
}

func open(t *testing.T, e *env, id string, format imageparams.Format) opened {
	t.Helper()
	f, err := e.svc.Open(context.Background(), id, format)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Object.(*os.File).Stat() // the files store's
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if f.Format != format || f.Image.ID != id || f.Rendition.Size != int64(len(data)) {
		t.Fatalf("Open(%s, %s): format %s, image %s, size %d of %d bytes", id, format, f.Format, f.Image.ID, f.Rendition.Size, len(data))
	}
	return opened{rend: f.Rendition, info: info, data: data}
}

// TestCompactKeepsETag: compaction stores the master in fewer bytes with
// the same pixels under the same ETag (the record's size follows the
// file), once; it leaves an image without a master alone.
func TestCompactKeepsETag(t *testing.T) {
	e := newEnv(t)
	o := e.newOrg("pro")
	img := e.create(o, Item{Params: html("x")})
	raw := testPNG(t, 64, 48, 3)
	e.ready(img.ID, raw)
	before := open(t, e, img.ID, imageparams.FormatPNG)

	if err := e.svc.Compact(img.ID); err != nil {
		t.Fatal(err)
	}
	after := open(t, e, img.ID, imageparams.FormatPNG)
	if after.rend.ETag != before.rend.ETag || after.rend.Size >= before.rend.Size {
		t.Fatalf("master %+v after compaction, %+v before", after.rend, before.rend)
	}
	if !apitest.SamePixels(t, raw, after.data) {
		t.Fatal("compaction changed the pixels")
	}
	if err := e.svc.Compact(img.ID); err != nil {
		t.Fatal(err)
	}
	if again := open(t, e, img.ID, imageparams.FormatPNG); !os.SameFile(after.info, again.info) || again.rend != after.rend {
		t.Fatal("a compact master was compacted again")
	}

	pending := e.create(o, Item{Params: html("pending")})
	if err := e.svc.Compact(pending.ID); err != nil || len(e.get(t.Context(), pending.ID).Renditions) != 0 {
		t.Fatalf("compacting an image without a master: %v", err)
	}
}

// TestRenderRequest: an image's parameters reach the render as the engine
// expects them: limits from the jumbo size, PDF defaults.
func TestRenderRequest(t *testing.T) {
	tests := []struct {
		name                 string
		params               imageparams.Params
		pdf                  bool
		maxWidth, maxHeight  int
		pdfScale             float64
		viewportW, viewportH int
	}{
		{name: "plain", params: html("x"), maxWidth: MaxSide, maxHeight: MaxSide},
		{name: "viewport", params: imageparams.Params{HTML: "x", Viewport: &imageparams.Size{Width: 800, Height: 600}},
			maxWidth: MaxSide, maxHeight: MaxSide, viewportW: 800, viewportH: 600},
		{name: "jumbo within the area", params: imageparams.Params{HTML: "x", Jumbo: &imageparams.Size{Width: 2000, Height: 5000}},
			maxWidth: 2000, maxHeight: 5000},
		{name: "jumbo cut to the area", params: imageparams.Params{HTML: "x", Jumbo: &imageparams.Size{Width: 10000, Height: 20000}},
			maxWidth: 10000, maxHeight: MaxPixels / 10000},
		{name: "pdf defaults", params: html("x"), pdf: true, maxWidth: MaxSide, maxHeight: MaxSide, pdfScale: 1},
		{name: "pdf scale", params: imageparams.Params{HTML: "x", PDF: &imageparams.PDFOptions{Scale: 0.5}}, pdf: true,
			maxWidth: MaxSide, maxHeight: MaxSide, pdfScale: 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := renderRequest(&Image{OrgID: "org", Params: tt.params}, tt.pdf)
			if r.OrgID != "org" || r.MaxWidth != tt.maxWidth || r.MaxHeight != tt.maxHeight || r.MaxPixels != MaxPixels ||
				r.ViewportWidth != tt.viewportW || r.ViewportHeight != tt.viewportH {
				t.Fatalf("request %+v", r)
			}
			if (r.PDF != nil) != tt.pdf || (r.PDF != nil && r.PDF.Scale != tt.pdfScale) {
				t.Fatalf("PDF options %+v", r.PDF)
			}
		})
	}
}
