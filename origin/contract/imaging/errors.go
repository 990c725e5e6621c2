package imaging

import "errors"

// Errors of Apply and of the conversions. Apply's image-dependent ones reach
// the caller as an *apierr.Error with status 400 that wraps them, so
// errors.Is and apierr.From both work.
var (
	// ErrCropOutOfBounds: the crop leaves the image or is empty for this
	// image's size.
	ErrCropOutOfBounds = errors.New("crop out of bounds")
	// ErrTooLarge: the result exceeds 5000×5000 after a resize, or the output
	// format's own limit (WebP 16383, JPEG 65535 pixels per side).
	ErrTooLarge = errors.New("result too large")
	// ErrDecode: the source bytes are not a decodable image (a corrupt or
	// truncated master). libvips decodes while it encodes, so a failure of
	// the encoder is reported as this too.
	ErrDecode = errors.New("decode source image")
	// ErrUnsupported: the options or formats cannot be applied (transforms on
	// a PDF, an unknown output format).
	ErrUnsupported = errors.New("unsupported transform")
)
