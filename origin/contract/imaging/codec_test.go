package imaging

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"
)

// testPNG is a w×h image: opaque red on the left half, transparent on the right.
func testPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			if x < w/2 {
				img.Set(x, y, color.NRGBA{R: 255, A: 255})
			}
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

func TestToJPEGFlattensOnWhite(t *testing.T) {
	out, err := ToJPEG(testPNG(t, 64, 32))
	if err != nil {
		t.Fatal(err)
	}
	img, err := jpeg.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 64 || img.Bounds().Dy() != 32 {
		t.Fatalf("size %v", img.Bounds())
	}
	r, g, b, _ := img.At(10, 10).RGBA()
	if r>>8 < 230 || g>>8 > 30 || b>>8 > 30 {
		t.Fatalf("left pixel %d,%d,%d, want red", r>>8, g>>8, b>>8)
	}
	r, g, b, _ = img.At(50, 10).RGBA()
	if r>>8 < 240 || g>>8 < 240 || b>>8 < 240 {
		t.Fatalf("transparent pixel became %d,%d,%d, want white", r>>8, g>>8, b>>8)
	}
}

func TestToWebP(t *testing.T) {
	out, err := ToWebP(testPNG(t, 40, 20))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, []byte("RIFF")) || !bytes.Equal(out[8:12], []byte("WEBP")) {
		t.Fatalf("not a WebP: %q", out[:12])
	}
}

func TestCompactPNGKeepsPixels(t *testing.T) {
	in := testPNG(t, 100, 50)
	out, err := CompactPNG(in)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := png.Decode(bytes.NewReader(in))
	b, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []image.Point{{0, 0}, {49, 10}, {50, 10}, {99, 49}} {
		if color.NRGBAModel.Convert(a.At(p.X, p.Y)) != color.NRGBAModel.Convert(b.At(p.X, p.Y)) {
			t.Fatalf("pixel %v changed", p)
		}
	}
}

func TestJoinVertical(t *testing.T) {
	out, w, h, err := JoinVertical([][]byte{testPNG(t, 30, 10), testPNG(t, 30, 15), testPNG(t, 30, 5)})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if w != 30 || h != 30 || img.Bounds().Dy() != 30 {
		t.Fatalf("joined %dx%d, decoded %v", w, h, img.Bounds())
	}
	if _, err := ToJPEG([]byte("not an image")); err == nil {
		t.Fatal("garbage decoded")
	}
}

// TestConversionsWrapErrDecode: bytes libvips cannot read are ErrDecode for
// every conversion, as for Apply.
func TestConversionsWrapErrDecode(t *testing.T) {
	garbage := []byte("not an image")
	for name, convert := range map[string]func([]byte) ([]byte, error){
		"ToJPEG":     ToJPEG,
		"ToWebP":     ToWebP,
		"CompactPNG": CompactPNG,
		"JoinVertical": func(b []byte) ([]byte, error) {
			png, _, _, err := JoinVertical([][]byte{b})
			return png, err
		},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := convert(garbage); !errors.Is(err, ErrDecode) {
				t.Fatalf("err = %v, want ErrDecode", err)
			}
		})
	}
}
