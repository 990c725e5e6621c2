package main

import (
	"image"
	"image/color"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestReadmeQuickStart runs every `sh` block of the README's quick start, in
// order and as one script, against a real `pictor serve`, with only the
// environment the README tells a reader to set (PICTOR, API_ID, API_KEY),
// then decodes the files the script wrote: the README cannot drift from
// what Pictor does.
func TestReadmeQuickStart(t *testing.T) {
	s := startServe(t, t.TempDir(), nil)
	script := strings.Join(snippets(t, "README.md", "## Quick start", "sh"), "\n")
	dir := t.TempDir()
	runScript(t, dir, script, map[string]string{"PICTOR": s.URL, "API_ID": s.Owner.APIID, "API_KEY": s.Owner.APIKey})

	read := func(name, contentType string) *apitest.Response {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("the quick start wrote no %s: %v", name, err)
		}
		return &apitest.Response{Status: 200, Header: http.Header{"Content-Type": {contentType}}, Body: b}
	}
	// The card: 600×315 CSS pixels at device scale 2, a gradient from
	// indigo (top left) to sky blue (bottom right).
	indigo, sky := color.NRGBA{0x4f, 0x46, 0xe5, 0xff}, color.NRGBA{0x0e, 0xa5, 0xe9, 0xff}
	for _, f := range []struct {
		name, contentType string
		w, h              int
		tol               int
	}{
		{"card.png", "image/png", 1200, 630, 8},
		{"card.webp", "image/webp", 1200, 630, 20},
		{"card-600.png", "image/png", 600, 315, 10},
	} {
		img := apitest.DecodeImage(t, read(f.name, f.contentType))
		apitest.WantSize(t, img, f.w, f.h)
		apitest.WantPixel(t, img, 2, 2, indigo, f.tol)
		apitest.WantPixel(t, img, f.w-3, f.h-3, sky, f.tol)
	}

	// The template, rendered with values by POST and by its signed URL: the
	// same card, dark with light text where the title is.
	navy := color.NRGBA{0x0f, 0x17, 0x2a, 0xff}
	launch := read("launch.png", "image/png")
	for _, name := range []string{"launch.png", "signed-template.png"} {
		img := apitest.DecodeImage(t, read(name, "image/png"))
		apitest.WantSize(t, img, 1200, 630)
		apitest.WantPixel(t, img, 10, 10, navy, 2)
		if !hasLight(img, 80, 180, 700, 300) {
			t.Errorf("%s: no title drawn in its box", name)
		}
	}
	if signed := read("signed-template.png", "image/png"); string(signed.Body) != string(launch.Body) {
		t.Error("the signed template URL rendered other bytes than the POST with the same values")
	}

	// The create-and-render URL: a 600×315 viewport at scale 2 with a
	// rose heading on white.
	img := apitest.DecodeImage(t, read("signed-render.png", "image/png"))
	apitest.WantSize(t, img, 1200, 630)
	apitest.WantPixel(t, img, 1190, 620, color.NRGBA{0xff, 0xff, 0xff, 0xff}, 0)
	if !hasColor(img, color.NRGBA{0xe1, 0x1d, 0x48, 0xff}, 6) {
		t.Error("signed-render.png: no rose heading (the css parameter was not applied)")
	}
}

// hasLight reports whether the box x0,y0–x1,y1 of img holds a light pixel.
func hasLight(img image.Image, x0, y0, x1, y1 int) bool {
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			if c := apitest.Pixel(img, x, y); c.R > 0xe0 && c.G > 0xe0 && c.B > 0xe0 {
				return true
			}
		}
	}
	return false
}

// hasColor reports whether any pixel of img is within tol of want.
func hasColor(img image.Image, want color.NRGBA, tol int) bool {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if apitest.Near(apitest.Pixel(img, x, y), want, tol) {
				return true
			}
		}
	}
	return false
}
