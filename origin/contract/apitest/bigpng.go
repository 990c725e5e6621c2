package apitest

import (
	"bytes"
	"fmt"
	"image"
	"image/png"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/pictorhq/pictor/origin/contract/imaging"
)

// largePNG is the area from which DecodeImage decodes a PNG with libvips:
// Go's decoder, instrumented under the race detector, takes seconds for
// a jumbo capture (7 s for 64 megapixels on an idle machine). A variable
// for the test, which lowers it.
var largePNG = 4_000_000

// decodePNG decodes a PNG with Go's decoder, or with libvips into an
// *image.NRGBA when it is large.
func decodePNG(data []byte) (image.Image, error) {
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if cfg.Width*cfg.Height < largePNG {
		return png.Decode(bytes.NewReader(data))
	}
	imaging.Start()
	img, err := vips.NewImageFromBuffer(data)
	if err != nil {
		return nil, err
	}
	defer img.Close()
	if err := img.ToColorSpace(vips.InterpretationSRGB); err != nil {
		return nil, err
	}
	if err := img.Cast(vips.BandFormatUchar); err != nil {
		return nil, err
	}
	if !img.HasAlpha() {
		if err := img.AddAlpha(); err != nil {
			return nil, err
		}
	}
	pix, err := img.ToBytes()
	if err != nil {
		return nil, err
	}
	w, h := img.Width(), img.Height()
	if w != cfg.Width || h != cfg.Height || img.Bands() != 4 || len(pix) != 4*w*h {
		return nil, fmt.Errorf("libvips decoded %dx%d with %d bands in %d bytes, the header says %dx%d",
			w, h, img.Bands(), len(pix), cfg.Width, cfg.Height)
	}
	return &image.NRGBA{Pix: pix, Stride: 4 * w, Rect: image.Rect(0, 0, w, h)}, nil
}
