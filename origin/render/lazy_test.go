package render

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

var (
	red  = color.NRGBA{255, 0, 0, 255}
	blue = color.NRGBA{0, 0, 255, 255}
)

// lazySite serves the pages of the lazy-image tests: /page/<name> from
// pages, /blue.png (100×100), /hang (an image that never comes) and
// /late.png, a blue image answered only once the page reported its load
// event through /loaded, so only a wait after the load shows it.
func lazySite(t *testing.T, pages map[string]string) *httptest.Server {
	t.Helper()
	var b bytes.Buffer
	img := image.NewNRGBA(image.Rect(0, 0, 100, 100))
	for i := 0; i < len(img.Pix); i += 4 {
		copy(img.Pix[i:], []byte{0, 0, 255, 255})
	}
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	release, loaded := make(chan struct{}), make(chan struct{})
	var once sync.Once
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch p := r.URL.Path; {
		case p == "/blue.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(b.Bytes())
		case p == "/late.png":
			select {
			case <-loaded:
			case <-r.Context().Done():
				return
			}
			w.Header().Set("Content-Type", "image/png")
			w.Write(b.Bytes())
		case p == "/loaded":
			once.Do(func() { close(loaded) })
		case p == "/hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case len(p) > len("/page/") && pages[p[len("/page/"):]] != "":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, pages[p[len("/page/"):]])
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() { close(release); site.Close() })
	return site
}

// reportLoad is a script that tells lazySite the page's load event fired.
const reportLoad = `<script>addEventListener('load', () => fetch('/loaded'));</script>`

// lazyCase is a render whose image is checked at probes: w×h pixels.
type lazyCase struct {
	name   string
	r      Request
	w, h   int
	probes []probe
}

// renderLazyCases renders each case with a 20 s max_wait and checks that
// the settle step ended with every image it waits for settled (not by
// running out of max_wait), then the pixels.
func renderLazyCases(t *testing.T, e *Engine, cases []lazyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			r.OrgID, r.MaxWait, r.MaxWidth, r.MaxHeight = "o", 20*time.Second, 16384, 16384
			res, err := e.Render(context.Background(), &r)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Settled {
				t.Error("the settle step ran out of max_wait: it waited for an image it should not have, or one never settled")
			}
			checkPixels(t, res, tc.w, tc.h, tc.probes)
		})
	}
}

type probe struct {
	x, y int
	want color.NRGBA
}

func checkPixels(t *testing.T, res *Result, w, h int, probes []probe) {
	t.Helper()
	img := decodePNG(t, res.Data)
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Fatalf("size %v, want %dx%d", b, w, h)
	}
	for _, p := range probes {
		if c := rgba(img, p.x, p.y); c != p.want {
			t.Errorf("pixel (%d,%d) = %v, want %v", p.x, p.y, c, p.want)
		}
	}
}

// TestLazyImageOutsideCaptureNotWaited renders pages whose only pending
// image is a loading="lazy" one 5,000 px below what is captured, and that
// never arrives: the render does not wait for it (the settle step ends with
// every image that matters loaded, long before max_wait), and the images in
// the capture are there.
func TestLazyImageOutsideCaptureNotWaited(t *testing.T) {
	below := `<div style="height:5000px"></div><img loading="lazy" src="/hang" width="100" height="100" style="display:block">`
	site := lazySite(t, map[string]string{
		"viewport": `<!DOCTYPE html><html><body style="margin:0;background:rgb(255,0,0)">` +
			`<img src="/blue.png" width="100" height="100" style="display:block">` + below + `</body></html>`,
		"selector": `<!DOCTYPE html><html><body style="margin:0;background:rgb(255,0,0)">` +
			`<div id="top" style="width:100px;height:100px"><img loading="lazy" src="/late.png" width="100" height="100" style="display:block"></div>` +
			below + reportLoad + `</body></html>`,
	})
	e := newEngine(t)
	renderLazyCases(t, e, []lazyCase{
		{"URL viewport", Request{URL: site.URL + "/page/viewport", ViewportWidth: 300, ViewportHeight: 200},
			300, 200, []probe{{50, 50, blue}, {200, 50, red}, {50, 150, red}}},
		{"HTML document viewport", Request{HTML: `<!DOCTYPE html><html><body style="margin:0;background:rgb(255,0,0)">` +
			`<img src="` + site.URL + `/blue.png" width="100" height="100" style="display:block">` +
			`<div style="height:5000px"></div><img loading="lazy" src="` + site.URL + `/hang" width="100" height="100"></body></html>`,
			ViewportWidth: 300, ViewportHeight: 200, DeviceScale: 1},
			300, 200, []probe{{50, 50, blue}, {200, 50, red}, {50, 150, red}}},
		{"selector", Request{URL: site.URL + "/page/selector", ViewportWidth: 300, ViewportHeight: 200, Selector: "#top"},
			100, 100, []probe{{0, 0, blue}, {50, 50, blue}, {99, 99, blue}}},
	})
}

// TestLazyImageInCaptureWaited renders lazy images that lie in what is
// captured, some so far down that Chromium would not load them by itself,
// and answered only after the load event: each is waited for and shows.
func TestLazyImageInCaptureWaited(t *testing.T) {
	late := `<img loading="lazy" src="/late.png" width="100" height="100" style="display:block">`
	site := lazySite(t, map[string]string{
		"viewport": `<!DOCTYPE html><html><body style="margin:0;background:rgb(255,0,0)">` +
			`<div style="height:50px"></div>` + late + reportLoad + `</body></html>`,
		"selector": `<!DOCTYPE html><html><body style="margin:0;background:rgb(255,0,0)">` +
			`<div style="height:5000px"></div><div id="low" style="width:100px;height:100px">` + late + `</div>` +
			reportLoad + `</body></html>`,
	})
	e := newEngine(t)
	renderLazyCases(t, e, []lazyCase{
		{"URL viewport", Request{URL: site.URL + "/page/viewport", ViewportWidth: 300, ViewportHeight: 200},
			300, 200, []probe{{50, 25, red}, {50, 100, blue}, {0, 50, blue}, {99, 149, blue}, {200, 100, red}}},
		{"selector 5000 px down", Request{URL: site.URL + "/page/selector", ViewportWidth: 300, ViewportHeight: 200, Selector: "#low"},
			100, 100, []probe{{0, 0, blue}, {50, 50, blue}, {99, 99, blue}}},
		{"auto-cropped snippet", Request{HTML: `<div style="width:100px;height:3000px;background:rgb(255,0,0)"></div>` +
			`<img loading="lazy" src="` + site.URL + `/blue.png" width="100" height="100" style="display:block">`, DeviceScale: 1},
			100, 3100, []probe{{50, 50, red}, {50, 2990, red}, {50, 3050, blue}, {99, 3099, blue}}},
	})
}

// TestFullPageLazyImage captures a whole page with a lazy image 5,000 px
// down, answered only after the load event: it is in the image.
func TestFullPageLazyImage(t *testing.T) {
	site := lazySite(t, map[string]string{
		"page": `<!DOCTYPE html><html><body style="margin:0;background:rgb(255,0,0)">` +
			`<div style="height:5000px"></div><img loading="lazy" src="/late.png" width="100" height="100" style="display:block">` +
			reportLoad + `</body></html>`,
	})
	e := newEngine(t)
	res, err := e.Render(context.Background(), &Request{OrgID: "o", URL: site.URL + "/page/page", ViewportWidth: 300, ViewportHeight: 200,
		FullPage: true, MaxWait: 20 * time.Second, MaxWidth: 16384, MaxHeight: 16384})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Settled {
		t.Error("the settle step ran out of max_wait")
	}
	checkPixels(t, res, 300, 5100, []probe{{50, 50, red}, {50, 4990, red}, {0, 5000, blue}, {50, 5050, blue}, {99, 5099, blue}, {200, 5050, red}})
}
