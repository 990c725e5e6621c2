package apitest

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

// TestDecodeLargePNG: a PNG past largePNG, decoded with libvips, has the
// pixels it was encoded with, whatever its colour type, and so does a
// small one, decoded by Go.
func TestDecodeLargePNG(t *testing.T) {
	defer func(was int) { largePNG = was }(largePNG)
	largePNG = 200 * 150
	const w, h = 200, 150
	rgba := image.NewNRGBA(image.Rect(0, 0, w, h))
	opaque := image.NewNRGBA(rgba.Rect)
	gray := image.NewGray(rgba.Rect)
	for i := range gray.Pix {
		gray.Pix[i] = byte(i * 7)
	}
	for i := range rgba.Pix {
		rgba.Pix[i] = byte(i * 13)
		opaque.Pix[i] = byte(i * 13)
		if i%4 == 3 {
			opaque.Pix[i] = 255
		}
	}
	small := image.NewNRGBA(image.Rect(0, 0, 199, 150))
	copy(small.Pix, rgba.Pix)
	for _, tc := range []struct {
		name string
		img  image.Image
		want []byte // as NRGBA
	}{
		{"with transparency", rgba, rgba.Pix},
		{"opaque (RGB)", opaque, opaque.Pix},
		{"gray", gray, grayAsNRGBA(gray.Pix)},
		{"small", small, small.Pix},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := png.Encode(&buf, tc.img); err != nil {
				t.Fatal(err)
			}
			got, err := decodePNG(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if got.Bounds() != tc.img.Bounds() {
				t.Fatalf("bounds %v, want %v", got.Bounds(), tc.img.Bounds())
			}
			// Go's decoder makes an *image.Gray of a gray PNG and an
			// *image.RGBA of an opaque one; libvips's path only NRGBA.
			if _, ok := got.(*image.NRGBA); !ok && got.Bounds().Dx()*got.Bounds().Dy() >= largePNG {
				t.Fatalf("a large PNG was decoded into a %T, not by libvips", got)
			}
			n := image.NewNRGBA(got.Bounds())
			if g, ok := got.(*image.NRGBA); ok {
				n = g
			} else {
				for y := range got.Bounds().Dy() {
					for x := range got.Bounds().Dx() {
						n.Set(x, y, got.At(x, y))
					}
				}
			}
			if i := firstDifference(n.Pix, tc.want); i >= 0 {
				t.Fatalf("pixel %d (byte %d) = %v, want %v", i/4, i, n.Pix[i/4*4:i/4*4+4], tc.want[i/4*4:i/4*4+4])
			}
		})
	}
}

func grayAsNRGBA(g []byte) []byte {
	out := make([]byte, 0, 4*len(g))
	for _, v := range g {
		out = append(out, v, v, v, 255)
	}
	return out
}

func firstDifference(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
