package imaging

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/davidbyttow/govips/v2/vips"
)

// Qualities of the lossy renditions.
const (
	JPEGQuality = 90
	WebPQuality = 90
)

// pngCompression is the deflate level of stored masters (CompactPNG) and of
// PNG results of Apply.
const pngCompression = 6

var start sync.Once

// Start initializes libvips once: one worker thread per conversion (the
// callers run conversions in parallel themselves), a small operation cache,
// and its log routed to slog.
func Start() {
	start.Do(func() {
		vips.LoggingSettings(func(domain string, level vips.LogLevel, msg string) {
			if level <= vips.LogLevelWarning {
				slog.Warn("libvips", "domain", domain, "detail", msg)
			}
		}, vips.LogLevelWarning)
		vips.Startup(&vips.Config{ConcurrencyLevel: 1, MaxCacheMem: 16 << 20, MaxCacheSize: 50, MaxCacheFiles: 0})
	})
}

func load(data []byte) (*vips.ImageRef, error) {
	Start()
	img, err := vips.NewImageFromBuffer(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, vipsError(err))
	}
	return img, nil
}

// ToJPEG encodes a PNG as a progressive-free baseline JPEG, with
// transparency flattened onto white.
func ToJPEG(png []byte) ([]byte, error) { return convert(png, JPEG) }

// ToWebP encodes a PNG as a lossy WebP, transparency kept.
func ToWebP(png []byte) ([]byte, error) { return convert(png, WebP) }

// convert encodes src as out with the encoder of Apply, so a stored
// conversion and the same conversion made at GET time are the same bytes.
func convert(src []byte, out Format) ([]byte, error) {
	img, err := load(src)
	if err != nil {
		return nil, err
	}
	defer img.Close()
	return encode(img, out, 0)
}

// CompactPNG re-encodes a PNG with a stronger deflate level: the same
// pixels, usually a third to a fifth of Chromium's fast-path bytes.
func CompactPNG(png []byte) ([]byte, error) {
	img, err := load(png)
	if err != nil {
		return nil, err
	}
	defer img.Close()
	out, _, err := img.ExportPng(&vips.PngExportParams{Compression: pngCompression, Filter: vips.PngFilterNone})
	if err != nil {
		return nil, fmt.Errorf("encode PNG: %w", err)
	}
	return out, nil
}

// JoinVertical stacks PNG strips of equal width top to bottom into one PNG.
func JoinVertical(strips [][]byte) (png []byte, width, height int, err error) {
	if len(strips) == 0 {
		return nil, 0, 0, fmt.Errorf("join: no strips")
	}
	out, err := load(strips[0])
	if err != nil {
		return nil, 0, 0, err
	}
	defer out.Close()
	for i, s := range strips[1:] {
		img, err := load(s)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("strip %d: %w", i+1, err)
		}
		err = out.Join(img, vips.DirectionVertical)
		img.Close()
		if err != nil {
			return nil, 0, 0, fmt.Errorf("join strip %d: %w", i+1, err)
		}
	}
	png, _, err = out.ExportPng(&vips.PngExportParams{Compression: 1, Filter: vips.PngFilterNone})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("encode joined PNG: %w", err)
	}
	return png, out.Width(), out.Height(), nil
}
