package imaging

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/davidbyttow/govips/v2/vips"
	"golang.org/x/image/webp"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// gradient is a w×h master whose colour says where a pixel came from: red
// grows with x, green with y. With alpha, the right half is transparent.
func gradient(w, h int, alpha bool) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{R: uint8(x * 255 / max(1, w-1)), G: uint8(y * 255 / max(1, h-1)), B: 60, A: 255}
			if alpha && x >= w/2 {
				c.A = 0
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func decodeAs(t testing.TB, f Format, b []byte) image.Image {
	t.Helper()
	var img image.Image
	var err error
	switch f {
	case PNG:
		img, err = png.Decode(bytes.NewReader(b))
	case JPEG:
		img, err = jpeg.Decode(bytes.NewReader(b))
	case WebP:
		if img, err = webp.Decode(bytes.NewReader(b)); err == nil {
			img = webpRGBA(img)
		}
	}
	if err != nil {
		t.Fatalf("decode %s: %v", f, err)
	}
	return img
}

func nrgba(c color.Color) color.NRGBA { return color.NRGBAModel.Convert(c).(color.NRGBA) }

// webpRGBA converts a decoded lossy WebP to RGBA. VP8 stores limited-range
// BT.601 YCbCr, which x/image/webp returns as is, while image/color
// converts with JPEG's full range: every colour would shift toward grey.
func webpRGBA(img image.Image) image.Image {
	out := image.NewNRGBA(img.Bounds())
	clamp := func(f float64) uint8 { return uint8(math.Max(0, math.Min(255, math.Round(f)))) }
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			var c color.YCbCr
			a := uint8(255)
			switch m := img.(type) {
			case *image.YCbCr:
				c = m.YCbCrAt(x, y)
			case *image.NYCbCrA:
				c, a = m.NYCbCrAAt(x, y).YCbCr, m.NYCbCrAAt(x, y).A
			default:
				return img // lossless: already RGBA
			}
			l, u, v := 1.164*(float64(c.Y)-16), float64(c.Cb)-128, float64(c.Cr)-128
			out.SetNRGBA(x, y, color.NRGBA{R: clamp(l + 1.596*v), G: clamp(l - 0.392*u - 0.813*v), B: clamp(l + 2.017*u), A: a})
		}
	}
	return out
}

func apply(t testing.TB, src []byte, f Format, query string) []byte {
	t.Helper()
	o, err := Parse(f, []byte(query))
	if err != nil {
		t.Fatalf("%q: %v", query, err)
	}
	out, err := Apply(context.Background(), src, o, f)
	if err != nil {
		t.Fatalf("%q as %s: %v", query, f, err)
	}
	return out
}

// TestApply checks each result's size and, by sampling colours, which part
// of the master it shows: crop is the expected region of the 300×120
// master, scaled to the result (covering it, centered, when cover).
func TestApply(t *testing.T) {
	master := gradient(300, 120, false)
	src := encodePNG(t, master)
	full := rect{0, 0, 300, 120}
	tests := []struct {
		name   string
		query  string
		crop   rect
		w, h   int
		cover  bool
		format []Format // all three when nil
	}{
		{name: "width keeps the ratio", query: "width=150", crop: full, w: 150, h: 60},
		{name: "height keeps the ratio", query: "height=60", crop: full, w: 150, h: 60},
		{name: "upscale", query: "width=600", crop: full, w: 600, h: 240},
		{name: "both cover a square", query: "width=100&height=100", crop: full, w: 100, h: 100, cover: true},
		{name: "both cover a tall box", query: "width=50&height=100", crop: full, w: 50, h: 100, cover: true},
		{name: "both, same ratio", query: "width=150&height=60", crop: full, w: 150, h: 60, cover: true},
		{name: "format only", query: "", crop: full, w: 300, h: 120, format: []Format{JPEG, WebP}},
		{name: "left third", query: "x_1=0&crop_width=33%", crop: rect{0, 0, 99, 120}, w: 99, h: 120},
		{name: "middle third", query: "x_1=33%&x_2=66%", crop: rect{99, 0, 99, 120}, w: 99, h: 120},
		{name: "centered square", query: "aspect_ratio=1_1&crop_height=100%", crop: rect{90, 0, 120, 120}, w: 120, h: 120},
		{name: "bottom right corner", query: "x_2=100%&crop_width=40&y_origin=end&crop_height=30", crop: rect{260, 90, 40, 30}, w: 40, h: 30},
		{name: "crop before resize", query: "width=50&x_1=33%&x_2=66%", crop: rect{99, 0, 99, 120}, w: 50, h: 61},
		{name: "crop then cover", query: "x_1=150&width=40&height=40", crop: rect{150, 0, 150, 120}, w: 40, h: 40, cover: true},
		{name: "aspect aligned then resized", query: "aspect_ratio=16_9&x_origin=end&width=64", crop: rect{87, 0, 213, 120}, w: 64, h: 36},
		{name: "crop then upscale", query: "x_1=10&x_2=20&y_1=10&y_2=15&height=50", crop: rect{10, 10, 10, 5}, w: 100, h: 50},
	}
	for _, tc := range tests {
		formats := tc.format
		if formats == nil {
			formats = []Format{PNG, JPEG, WebP}
		}
		for _, f := range formats {
			t.Run(tc.name+"/"+string(f), func(t *testing.T) {
				img := decodeAs(t, f, apply(t, src, f, tc.query))
				if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
					t.Fatalf("size %dx%d, want %dx%d", b.Dx(), b.Dy(), tc.w, tc.h)
				}
				checkShows(t, img, master, tc.crop, tc.cover)
			})
		}
	}
}

// checkShows samples img and compares it with the part of master it should
// show: crop scaled to img's size (cover: scaled to cover and centered).
func checkShows(t *testing.T, img image.Image, master *image.NRGBA, crop rect, cover bool) {
	t.Helper()
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	sx, sy := float64(w)/float64(crop.W), float64(h)/float64(crop.H)
	var ox, oy float64
	if cover {
		s := math.Max(sx, sy)
		sx, sy = s, s
		ox, oy = (float64(crop.W)*s-float64(w))/2, (float64(crop.H)*s-float64(h))/2
	}
	const tolerance = 10 // lossy codecs, resampling, and a pixel of rounding
	for _, p := range [][2]float64{{0.5, 0.5}, {0.1, 0.1}, {0.9, 0.1}, {0.1, 0.9}, {0.9, 0.9}, {0.3, 0.7}} {
		x, y := int(p[0]*float64(w)), int(p[1]*float64(h))
		mx := float64(crop.X) + (float64(x)+0.5+ox)/sx - 0.5
		my := float64(crop.Y) + (float64(y)+0.5+oy)/sy - 0.5
		want := master.NRGBAAt(int(math.Round(mx)), int(math.Round(my)))
		got := nrgba(img.At(x, y))
		if diff(got.R, want.R) > tolerance || diff(got.G, want.G) > tolerance || diff(got.B, want.B) > tolerance {
			t.Errorf("pixel (%d,%d) = %v, want about %v (master %.1f,%.1f)", x, y, got, want, mx, my)
		}
	}
}

func diff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

func TestIdentityIsTheMaster(t *testing.T) {
	src := encodePNG(t, gradient(30, 20, true))
	for _, q := range []string{"", "dl=1", "x_1=0&y_2=100%", "utm=1"} {
		out := apply(t, src, PNG, q)
		if &out[0] != &src[0] || len(out) != len(src) {
			t.Errorf("%q: the master was copied or changed", q)
		}
	}
}

// TestCropIsPixelExact: a crop without resize keeps every pixel, alpha
// included (the scale-1 thumbnail load does not resample).
func TestCropIsPixelExact(t *testing.T) {
	master := image.NewNRGBA(image.Rect(0, 0, 200, 90))
	for y := range 90 {
		for x := range 200 {
			master.SetNRGBA(x, y, color.NRGBA{uint8(x * 7), uint8(y * 13), uint8(x * y), uint8(x + 3*y)})
		}
	}
	src := encodePNG(t, master)
	for _, q := range []string{"x_1=10&x_2=110&y_1=5&y_2=55", "aspect_ratio=1_1&x_origin=end", "crop_width=33%&crop_height=50%", "dpi=300&y_1=1"} {
		t.Run(q, func(t *testing.T) {
			o, _ := Parse(PNG, []byte(q))
			r, err := o.Crop.rect(200, 90, 0)
			if err != nil {
				t.Fatal(err)
			}
			img := decodeAs(t, PNG, apply(t, src, PNG, q))
			if img.Bounds().Dx() != r.W || img.Bounds().Dy() != r.H {
				t.Fatalf("size %v, want %+v", img.Bounds(), r)
			}
			for y := range r.H {
				for x := range r.W {
					if got, want := nrgba(img.At(x, y)), master.NRGBAAt(r.X+x, r.Y+y); got != want {
						t.Fatalf("pixel (%d,%d) = %v, want %v", x, y, got, want)
					}
				}
			}
		})
	}
}

func TestAlpha(t *testing.T) {
	src := encodePNG(t, gradient(100, 40, true))
	tests := []struct {
		name   string
		format Format
		query  string
		right  func(color.NRGBA) bool // a pixel of the transparent half
	}{
		{"jpg flattens on white", JPEG, "", func(c color.NRGBA) bool { return c.R > 245 && c.G > 245 && c.B > 245 && c.A == 255 }},
		{"jpg flattens after resize", JPEG, "width=50", func(c color.NRGBA) bool { return c.R > 245 && c.G > 245 && c.B > 245 }},
		{"webp keeps alpha", WebP, "width=50", func(c color.NRGBA) bool { return c.A < 10 }},
		{"png keeps alpha", PNG, "height=20&x_1=1", func(c color.NRGBA) bool { return c.A == 0 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			img := decodeAs(t, tc.format, apply(t, src, tc.format, tc.query))
			b := img.Bounds()
			if left := nrgba(img.At(b.Dx()/8, b.Dy()/2)); left.A < 245 || left.R > 60 {
				t.Errorf("opaque half became %v", left)
			}
			if right := nrgba(img.At(b.Dx()*7/8, b.Dy()/2)); !tc.right(right) {
				t.Errorf("transparent half became %v", right)
			}
		})
	}
}

// pngDensity returns the pHYs chunks of a PNG, checking every chunk's CRC.
func pngDensity(t *testing.T, b []byte) (phys [][3]uint32) {
	t.Helper()
	if !bytes.HasPrefix(b, pngSignature) {
		t.Fatal("not a PNG")
	}
	for i := 8; i < len(b); {
		n := int(binary.BigEndian.Uint32(b[i:]))
		body := b[i+4 : i+8+n]
		if crc32.ChecksumIEEE(body) != binary.BigEndian.Uint32(b[i+8+n:]) {
			t.Fatalf("bad CRC in %q", body[:4])
		}
		if string(body[:4]) == "pHYs" {
			d := body[4:]
			phys = append(phys, [3]uint32{binary.BigEndian.Uint32(d), binary.BigEndian.Uint32(d[4:]), uint32(d[8])})
		}
		if string(body[:4]) == "IDAT" && len(phys) == 0 {
			t.Fatal("IDAT before pHYs")
		}
		i += 12 + n
	}
	return phys
}

// jfifDensity parses the JFIF APP0 segment that must follow SOI.
func jfifDensity(t *testing.T, b []byte) (units, x, y int) {
	t.Helper()
	if len(b) < 20 || b[0] != 0xFF || b[1] != 0xD8 || b[2] != 0xFF || b[3] != 0xE0 || string(b[6:11]) != "JFIF\x00" {
		t.Fatalf("no JFIF APP0 after SOI: % x", b[:min(len(b), 20)])
	}
	if n := binary.BigEndian.Uint16(b[4:]); n != 16 {
		t.Fatalf("APP0 length %d", n)
	}
	return int(b[13]), int(binary.BigEndian.Uint16(b[14:])), int(binary.BigEndian.Uint16(b[16:]))
}

func samePixels(t *testing.T, a, b image.Image) {
	t.Helper()
	if a.Bounds() != b.Bounds() {
		t.Fatalf("bounds %v vs %v", a.Bounds(), b.Bounds())
	}
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			if ca, cb := nrgba(a.At(x, y)), nrgba(b.At(x, y)); ca != cb {
				t.Fatalf("pixel (%d,%d): %v vs %v", x, y, ca, cb)
			}
		}
	}
}

// TestDPI: dpi writes the density and leaves every pixel as it would be
// without it.
func TestDPI(t *testing.T) {
	src := encodePNG(t, gradient(120, 60, true))
	tests := []struct {
		format Format
		query  string
		dpi    int
	}{
		{PNG, "", 300},
		{PNG, "", 30},
		{PNG, "width=50", 144},
		{PNG, "x_1=10&y_2=50%", 600},
		{JPEG, "", 300},
		{JPEG, "width=50", 72},
		{JPEG, "aspect_ratio=1_1", 600},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s %q dpi=%d", tc.format, tc.query, tc.dpi), func(t *testing.T) {
			with := apply(t, src, tc.format, tc.query+fmt.Sprintf("&dpi=%d", tc.dpi))
			without := apply(t, src, tc.format, tc.query)
			samePixels(t, decodeAs(t, tc.format, with), decodeAs(t, tc.format, without))
			switch tc.format {
			case PNG:
				phys := pngDensity(t, with)
				if len(phys) != 1 || phys[0][2] != 1 || phys[0][0] != phys[0][1] {
					t.Fatalf("pHYs %v, want one in pixels per metre", phys)
				}
				if got := math.Round(float64(phys[0][0]) * 0.0254); int(got) != tc.dpi {
					t.Fatalf("pHYs %d px/m is %v dpi", phys[0][0], got)
				}
			case JPEG:
				units, x, y := jfifDensity(t, with)
				if units != 1 || x != tc.dpi || y != tc.dpi {
					t.Fatalf("JFIF units %d density %dx%d", units, x, y)
				}
				// Only the header differs: the entropy-coded data are the same bytes.
				if !bytes.Equal(with[2+18:], without[2:]) {
					t.Fatal("JPEG bytes differ beyond the JFIF segment")
				}
			}
		})
	}
	t.Run("png density only rewrites one chunk", func(t *testing.T) {
		// libvips writes pHYs itself (72 dpi for a master without one): replace it.
		master, err := Apply(context.Background(), src, Options{Width: 120}, PNG)
		if err != nil {
			t.Fatal(err)
		}
		if phys := pngDensity(t, master); len(phys) != 1 || phys[0][0] != 2834 {
			t.Fatalf("libvips pHYs %v, want its 72 dpi default", phys)
		}
		out := apply(t, master, PNG, "dpi=300")
		if phys := pngDensity(t, out); len(phys) != 1 || phys[0][0] != 11811 {
			t.Fatalf("pHYs %v, want one saying 300 dpi", phys)
		}
		if len(out) != len(master) {
			t.Fatalf("%d bytes from %d: more than the chunk changed", len(out), len(master))
		}
		samePixels(t, decodeAs(t, PNG, out), decodeAs(t, PNG, master))
	})
	t.Run("webp has no density", func(t *testing.T) {
		with, err := Apply(context.Background(), src, Options{DPI: 300, Width: 60}, WebP)
		if err != nil {
			t.Fatal(err)
		}
		without, _ := Apply(context.Background(), src, Options{Width: 60}, WebP)
		if !bytes.Equal(with, without) {
			t.Fatal("dpi changed a WebP")
		}
	})
}

func TestApplyErrors(t *testing.T) {
	small := encodePNG(t, gradient(300, 120, false))
	tall := encodePNG(t, gradient(30, 1200, false))
	wide := encodePNG(t, image.NewNRGBA(image.Rect(0, 0, 17000, 2)))
	tests := []struct {
		name   string
		src    []byte
		o      Options
		query  string // parsed into o when set
		format Format
		is     error
		paths  []string // validation errors of a 400
	}{
		{name: "crop past the edge", src: small, query: "x_1=250&crop_width=100", format: PNG, is: ErrCropOutOfBounds, paths: []string{"x_1", "crop_width"}},
		{name: "empty crop", src: small, query: "y_1=100&y_2=50%", format: JPEG, is: ErrCropOutOfBounds, paths: []string{"y_1", "y_2"}},
		{name: "square of a portrait", src: tall, query: "aspect_ratio=1_1&crop_height=100%", format: WebP, is: ErrCropOutOfBounds, paths: []string{"aspect_ratio"}},
		{name: "derived height over 5000", src: tall, query: "width=300", format: PNG, is: ErrTooLarge, paths: []string{"width"}},
		{name: "derived width over 5000", src: small, query: "height=2500", format: PNG, is: ErrTooLarge, paths: []string{"height"}},
		{name: "webp side limit", src: wide, format: WebP, is: ErrTooLarge},
		{name: "truncated master", src: small[:len(small)/2], query: "width=10", format: WebP, is: ErrDecode},
		{name: "truncated master, format only", src: small[:len(small)-20], format: JPEG, is: ErrDecode},
		{name: "not an image", src: []byte("<html>"), format: JPEG, is: ErrDecode},
		{name: "empty", src: nil, format: WebP, is: ErrDecode},
		{name: "pdf transform", src: []byte("%PDF-1.7"), o: Options{Width: 10}, format: PDF, is: ErrUnsupported},
		{name: "unknown format", src: small, format: "gif", is: ErrUnsupported},
		{name: "hand-built width", src: small, o: Options{Width: MaxSize + 1}, format: PNG, is: ErrUnsupported},
		{name: "hand-built span", src: small, o: Options{Crop: Crop{X: Span{From: Px(-1)}}}, format: PNG, is: ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			if tc.query != "" {
				var err error
				if o, err = Parse(tc.format, []byte(tc.query)); err != nil {
					t.Fatal(err)
				}
			}
			out, err := Apply(context.Background(), tc.src, o, tc.format)
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v (%d bytes), want %v", err, len(out), tc.is)
			}
			e := apierr.From(err)
			status := http.StatusInternalServerError
			if tc.is == ErrCropOutOfBounds || tc.is == ErrTooLarge {
				status = http.StatusBadRequest
			}
			if e.Status != status {
				t.Fatalf("status %d, want %d", e.Status, status)
			}
			if tc.paths != nil {
				if got := errorPaths(t, err); !slices.Equal(got, tc.paths) {
					t.Fatalf("paths %v, want %v", got, tc.paths)
				}
			}
			if bytes.Contains([]byte(err.Error()), []byte("goroutine")) {
				t.Fatalf("error carries a Go stack: %v", err)
			}
		})
	}
	t.Run("pdf passes through", func(t *testing.T) {
		pdf := []byte("%PDF-1.7 ...")
		out, err := Apply(context.Background(), pdf, Options{Download: true}, PDF)
		if err != nil || !bytes.Equal(out, pdf) {
			t.Fatalf("%q, %v", out, err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Apply(ctx, small, Options{Width: 10}, WebP); !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v", err)
		}
	})
}

// TestMemoryIsBounded: libvips never holds a tall master (120 MB decoded)
// in memory, whether the crop is near its top (streamed) or its bottom
// (random access, spilled to a temporary file), nor for a resize.
// freshProcessEnv marks the test binary TestMemoryIsBounded starts anew.
const freshProcessEnv = "PICTOR_TEST_FRESH_PROCESS"

func TestMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes a 1000×30000 PNG")
	}
	if os.Getenv(freshProcessEnv) == "" {
		// libvips's high-water mark is per process, and other tests of the
		// package raise it: measure in a process of its own.
		cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryIsBounded$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), freshProcessEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("in a fresh process: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "--- PASS: TestMemoryIsBounded") {
			t.Fatalf("the fresh process did not run the test:\n%s", out)
		}
		return
	}
	Start()
	const w, h = 1000, 30000
	img, err := vips.Black(w, h)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if err := img.BandJoinConst([]float64{255, 255, 255}); err != nil {
		t.Fatal(err)
	}
	if err := img.ToColorSpace(vips.InterpretationSRGB); err != nil {
		t.Fatal(err)
	}
	src, _, err := img.ExportPng(&vips.PngExportParams{Compression: 1})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 32 << 20
	var st vips.MemoryStats
	vips.ReadVipsMemStats(&st)
	if st.MemHigh > limit {
		t.Fatalf("making the source took libvips to %d MB already", st.MemHigh>>20)
	}
	for _, q := range []string{"y_2=200&width=100", "y_1=29800&width=100", "width=100", "x_1=10%&y_1=50%&y_2=60%"} {
		out := apply(t, src, PNG, q)
		decodeAs(t, PNG, out)
		vips.ReadVipsMemStats(&st)
		t.Logf("%s: libvips high-water mark %.1f MB", q, float64(st.MemHigh)/(1<<20))
		if st.MemHigh > limit {
			t.Fatalf("%s: libvips memory high-water mark %d MB for a %d MB image", q, st.MemHigh>>20, w*h*4>>20)
		}
	}
}

// TestApplyConcurrently hammers libvips from many goroutines (run with -race).
func TestApplyConcurrently(t *testing.T) {
	src := encodePNG(t, gradient(300, 120, true))
	queries := []string{"width=100", "height=30&x_1=50%", "aspect_ratio=1_1&width=40&dpi=300", "width=64&height=64", "x_2=200&crop_width=50"}
	formats := []Format{PNG, JPEG, WebP}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 24 {
		wg.Go(func() {
			q, f := queries[i%len(queries)], formats[i%len(formats)]
			o, err := Parse(f, []byte(q))
			if err == nil {
				_, err = Apply(context.Background(), src, o, f)
			}
			if err != nil {
				errs <- fmt.Errorf("%q %s: %w", q, f, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestFormatOnlyMatchesTheOrigin: converting without a transform gives the
// bytes ToJPEG and ToWebP store, so the edge may serve either.
func TestFormatOnlyMatchesTheOrigin(t *testing.T) {
	src := encodePNG(t, gradient(200, 100, true))
	for _, tc := range []struct {
		format Format
		codec  func([]byte) ([]byte, error)
	}{{JPEG, ToJPEG}, {WebP, ToWebP}} {
		want, err := tc.codec(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := apply(t, src, tc.format, "dl=1"); !bytes.Equal(got, want) {
			t.Errorf("%s: Apply made %d bytes, the stored conversion %d", tc.format, len(got), len(want))
		}
	}
}
