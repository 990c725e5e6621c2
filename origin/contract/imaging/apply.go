package imaging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// Apply crops, resizes and sets the density of src, a rendered master
// (PNG; any format libvips reads works), and encodes the result as out.
//
// A result that is the master itself is src, not a copy. An out-of-bounds
// crop or a too-large result is an *apierr.Error 400 wrapping
// ErrCropOutOfBounds or ErrTooLarge; undecodable bytes wrap ErrDecode. For
// PDF, src (the stored PDF) is returned as is, and any transform is
// ErrUnsupported. libvips work cannot be interrupted: ctx is checked before
// decoding and before encoding.
//
// A resize without a crop is the call vipsthumbnail makes (thumbnail from
// buffer): the PNG streams through the resize in a few MB whatever its
// height. A crop streams the same way (a scale-1 thumbnail load, pixel
// exact) unless it reaches far down a tall master, where libvips would hold
// every row above it; then the master is loaded with random access, which
// libvips keeps in memory up to 100 MB and in a temporary file beyond.
func Apply(ctx context.Context, src []byte, o Options, out Format) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	o = o.canonical()
	if out == WebP {
		o.DPI = 0
	}
	switch out {
	case PNG, JPEG, WebP:
	case PDF:
		if !o.IsIdentity() {
			return nil, fmt.Errorf("%w: a PDF takes no transforms", ErrUnsupported)
		}
		return src, nil
	default:
		return nil, fmt.Errorf("%w: output format %q", ErrUnsupported, out)
	}

	w, h, isPNG := pngSize(src)
	if out == PNG && isPNG && o.Width == 0 && o.Height == 0 && o.Crop == (Crop{}) {
		if o.DPI == 0 {
			return src, nil
		}
		// Density only: rewrite the chunk, leave the compressed pixels alone.
		if b, ok := setPNGDensity(src, o.DPI); ok {
			return b, nil
		}
	}

	Start()
	if !isPNG {
		var err error
		if w, h, err = headerSize(src); err != nil {
			return nil, err
		}
	}
	crop := rect{W: w, H: h}
	cropped := o.Crop != (Crop{})
	if cropped {
		var err error
		if crop, err = o.Crop.rect(w, h, o.given); err != nil {
			return nil, err
		}
	}
	resized := o.Width > 0 || o.Height > 0
	tw, th, cover := o.target(crop.W, crop.H)
	if resized && (tw > MaxSize || th > MaxSize) {
		path := "width"
		if o.Width == 0 {
			path = "height"
		}
		return nil, tooLarge(path, fmt.Sprintf("the resized image would be %d×%d pixels; the limit is %d×%d: set both width and height, or crop first", tw, th, MaxSize, MaxSize))
	}
	if m := out.maxSide(); tw > m || th > m {
		return nil, tooLarge("", fmt.Sprintf("the image is %d×%d pixels; %s images are limited to %d pixels per side: resize it or ask for another format", tw, th, out, m))
	}

	if err := ctx.Err(); err != nil {
		return nil, err
	}
	img, err := decode(src, w, h, crop, cropped, tw, th, cover)
	if err != nil {
		return nil, err
	}
	defer img.Close()
	if img.Width() != tw || img.Height() != th {
		return nil, fmt.Errorf("imaging: libvips made %d×%d, want %d×%d", img.Width(), img.Height(), tw, th)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return encode(img, out, o.DPI)
}

// seqBudget bounds the decoded rows a streamed crop may hold: libvips 8.14
// keeps every row above a sequential crop's bottom edge while it skips to
// it. A crop reaching further down loads the master with random access,
// which libvips keeps in memory up to its disc threshold (100 MB) and in a
// temporary file beyond.
const seqBudget = 48 << 20

// decode loads src. Without a crop it is the same shrink-on-load-friendly
// call as vipsthumbnail: the PNG streams through the resize in a few MB
// whatever its height. A crop is an extract on that stream when it stays
// within seqBudget, and the resize runs on what the crop keeps.
func decode(src []byte, w, h int, crop rect, cropped bool, tw, th int, cover bool) (*vips.ImageRef, error) {
	interesting, size := vips.InterestingNone, vips.SizeForce // the caller kept the aspect ratio
	if cover {
		interesting, size = vips.InterestingCentre, vips.SizeBoth
	}
	params := vips.NewImportParams() // fail on truncated or corrupt data
	if !cropped {
		img, err := vips.LoadThumbnailFromBuffer(src, tw, th, interesting, size, params)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDecode, vipsError(err))
		}
		return img, nil
	}
	var img *vips.ImageRef
	var err error
	if int64(crop.Y+crop.H)*int64(w)*4 <= seqBudget {
		// At scale 1 the thumbnail path loads sequentially without
		// resampling: the pixels are the master's (TestCropIsPixelExact).
		img, err = vips.LoadThumbnailFromBuffer(src, w, h, vips.InterestingNone, vips.SizeForce, params)
	} else {
		img, err = vips.LoadImageFromBuffer(src, params)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, vipsError(err))
	}
	if err := img.ExtractArea(crop.X, crop.Y, crop.W, crop.H); err != nil {
		img.Close()
		return nil, fmt.Errorf("crop %+v: %w", crop, vipsError(err))
	}
	if tw != crop.W || th != crop.H {
		if err := img.ThumbnailWithSize(tw, th, interesting, size); err != nil {
			img.Close()
			return nil, fmt.Errorf("resize to %d×%d: %w", tw, th, vipsError(err))
		}
	}
	return img, nil
}

// encode writes img as out, with dpi (when not 0) as density metadata.
// Evaluation happens here: decoding, cropping and resizing stream through
// the encoder.
func encode(img *vips.ImageRef, out Format, dpi int) ([]byte, error) {
	switch out {
	case PNG:
		b, _, err := img.ExportPng(&vips.PngExportParams{Compression: pngCompression, Filter: vips.PngFilterNone, StripMetadata: true})
		if err != nil {
			return nil, fmt.Errorf("%w: encoding PNG: %w", ErrDecode, vipsError(err))
		}
		if dpi != 0 {
			var ok bool
			if b, ok = setPNGDensity(b, dpi); !ok {
				return nil, fmt.Errorf("imaging: libvips wrote a PNG without IHDR or IDAT")
			}
		}
		return b, nil
	case JPEG:
		if img.HasAlpha() {
			if err := img.Flatten(&vips.Color{R: 255, G: 255, B: 255}); err != nil {
				return nil, fmt.Errorf("flatten: %w", vipsError(err))
			}
		}
		b, _, err := img.ExportJpeg(&vips.JpegExportParams{Quality: JPEGQuality, OptimizeCoding: true, StripMetadata: true})
		if err != nil {
			return nil, fmt.Errorf("%w: encoding JPEG: %w", ErrDecode, vipsError(err))
		}
		if dpi != 0 {
			var ok bool
			if b, ok = setJPEGDensity(b, dpi); !ok {
				return nil, fmt.Errorf("imaging: libvips wrote a JPEG without SOI")
			}
		}
		return b, nil
	}
	b, _, err := img.ExportWebp(&vips.WebpExportParams{Quality: WebPQuality, ReductionEffort: 4, StripMetadata: true})
	if err != nil {
		return nil, fmt.Errorf("%w: encoding WebP: %w", ErrDecode, vipsError(err))
	}
	return b, nil
}

// headerSize reads the size of a non-PNG source from its header.
func headerSize(src []byte) (w, h int, err error) {
	if len(src) == 0 || bytes.HasPrefix(src, []byte("%PDF")) {
		return 0, 0, fmt.Errorf("%w: not an image", ErrDecode)
	}
	img, err := vips.NewImageFromBuffer(src)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", ErrDecode, vipsError(err))
	}
	defer img.Close()
	return img.Width(), img.Height(), nil
}

// vipsError drops the Go stack that govips appends to libvips' message;
// the message is what the logs need.
func vipsError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "\nStack:\n"); i >= 0 {
		return errors.New(strings.TrimSpace(msg[:i]))
	}
	return err
}

func tooLarge(path, msg string) error {
	e := &apierr.Error{Status: http.StatusBadRequest, Message: "Invalid request: " + msg, Cause: ErrTooLarge}
	if path != "" {
		e.Message = "Invalid request: " + path + " " + msg
		e.Fields = []apierr.FieldError{{Path: path, Message: msg}}
	}
	return e
}
