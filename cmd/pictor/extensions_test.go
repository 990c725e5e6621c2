package main

import (
	"bytes"
	"fmt"
	"image"
	_ "image/jpeg" // image.DecodeConfig reads what the edges answer
	_ "image/png"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	_ "golang.org/x/image/webp"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestHostileExtensionSpellings (issue 27): every spelling of every format
// (".PNG", ".Png", ".jpeg", ".JPEG", ".WEBP", ".PDF", ...), the id in
// either case, with and without transformation parameters, answers that
// format transformed (decoded: format and size), through `pictor serve`
// and through separate edges in front of `pictor origin`, with the edge
// token and without it. On a caching edge the spellings of one rendition
// are one entry: only the first is fetched from the origin. Other
// extensions are 404 with the standard body. ".PNG?width=300" was the
// full-size master, cacheable for a year, fetched from the origin each
// time.
func TestHostileExtensionSpellings(t *testing.T) {
	t.Run("serve", func(t *testing.T) {
		s := startServe(t, t.TempDir(), nil)
		id, _ := createImage(t, s.URL, s.Owner, map[string]any{"html": box800})
		checkSpellings(t, s.URL, id, true)
	})
	t.Run("separate edges", func(t *testing.T) {
		dir := t.TempDir()
		creds := orgCreate(t, dir, "acme", "scale")
		token := strings.Repeat("x", 40)
		_, originURL := startProcess(t, "origin", "--data-dir", dir, "--addr", "127.0.0.1:0", "--allow-private-urls", "--edge-token", token)
		_, synced := startProcess(t, "edge", "--origin-url", originURL, "--addr", "127.0.0.1:0", "--cache-dir", filepath.Join(t.TempDir(), "synced"), "--edge-token", token)
		_, bare := startProcess(t, "edge", "--origin-url", originURL, "--addr", "127.0.0.1:0", "--cache-dir", filepath.Join(t.TempDir(), "bare"))
		id, _ := createImage(t, originURL, creds, map[string]any{"html": box800})
		t.Run("with token", func(t *testing.T) { checkSpellings(t, synced, id, true) })
		t.Run("without token", func(t *testing.T) { checkSpellings(t, bare, id, false) })
	})
}

// checkSpellings asks the edge at base for image id in every spelling. A
// caching edge fetches each rendition from the origin once; one that does
// not cache answers nothing from a cache.
func checkSpellings(t *testing.T, base, id string, caching bool) {
	formats := []struct {
		name, contentType string
		decoded           string // image.DecodeConfig's name; none for PDF
		exts              []string
	}{
		{"png", "image/png", "png", []string{".png", "", ".PNG", ".Png"}},
		{"jpg", "image/jpeg", "jpeg", []string{".jpg", ".JPG", ".jpeg", ".JPEG", ".Jpeg"}},
		{"webp", "image/webp", "webp", []string{".webp", ".WEBP"}},
		{"pdf", "application/pdf", "", []string{".pdf", ".PDF"}},
	}
	queries := []struct {
		query string
		w, h  int
		pdf   []string // the fields a PDF refuses
	}{
		{"", 800, 400, nil}, // box800 at the default device scale, 2
		{"?width=300", 300, 150, []string{"width"}},
		{"?crop_width=50%&height=100", 100, 100, []string{"crop_width", "height"}},
	}
	// cache is what the edge fetched from the origin, and what it
	// answered from its cache, so far.
	cache := func() (fetched, hits float64) {
		return apitest.Metric(t, base, "pictor_edge_origin_fetches_total"),
			apitest.Metric(t, base, "pictor_edge_hits_l1_total") + apitest.Metric(t, base, "pictor_edge_hits_l2_total")
	}
	for _, f := range formats {
		for _, q := range queries {
			t.Run(f.name+q.query, func(t *testing.T) {
				// Once the first spelling was answered, every other is a hit.
				var fetched, hits float64
				asked := 0
				for _, ext := range f.exts {
					for _, i := range []string{id, strings.ToUpper(id)} {
						path := "/v1/image/" + i + ext + q.query
						r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: path})
						if asked++; asked == 1 && caching {
							fetched, hits = cache()
						}
						if f.decoded == "" && q.pdf != nil {
							for _, field := range q.pdf {
								apitest.WantField(t, r, field)
							}
							continue
						}
						apitest.WantStatus(t, r, http.StatusOK)
						if ct := r.Header.Get("Content-Type"); ct != f.contentType {
							t.Fatalf("GET %s: Content-Type %q, want %q", path, ct, f.contentType)
						}
						if f.decoded == "" {
							if !bytes.HasPrefix(r.Body, []byte("%PDF-")) {
								t.Fatalf("GET %s: not a PDF: %.40q", path, r.Body)
							}
						} else {
							cfg, name, err := image.DecodeConfig(bytes.NewReader(r.Body))
							if err != nil || name != f.decoded || cfg.Width != q.w || cfg.Height != q.h {
								t.Fatalf("GET %s: a %s of %d×%d (%v), want a %s of %d×%d", path, name, cfg.Width, cfg.Height, err, f.decoded, q.w, q.h)
							}
						}
					}
				}
				if f.decoded == "" && q.pdf != nil || !caching {
					return
				}
				if nowFetched, nowHits := cache(); nowFetched != fetched || nowHits-hits != float64(asked-1) {
					t.Fatalf("%d spellings of one rendition after the first: %v origin fetches, %v cache hits, want none and %d",
						asked-1, nowFetched-fetched, nowHits-hits, asked-1)
				}
			})
		}
	}
	for _, ext := range []string{".", "..png", ".PNG.", ".gif", ".pngx", ".jpe"} {
		for _, q := range queries[:2] {
			path := "/v1/image/" + strings.ToUpper(id) + ext + q.query
			r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: path})
			if m := apitest.WantError(t, r, http.StatusNotFound); !strings.Contains(fmt.Sprint(m["message"]), "Image not found") {
				t.Fatalf("GET %s: %v", path, m)
			}
		}
	}
	if _, hits := cache(); caching != (hits > 0) {
		t.Fatalf("caching %v, yet %v hits", caching, hits)
	}
}
