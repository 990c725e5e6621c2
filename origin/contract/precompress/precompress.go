package precompress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// ErrStale means a committed compressed form does not decode to its source.
var ErrStale = errors.New("precompressed form is not its source's")

// Suffixes of the compressed forms, next to their source.
const (
	BrotliSuffix = ".br"
	GzipSuffix   = ".gz"
)

// Brotli compresses b at Brotli's best (quality 11, the largest window).
func Brotli(b []byte) []byte {
	var out bytes.Buffer
	w := brotli.NewWriterOptions(&out, brotli.WriterOptions{Quality: brotli.BestCompression, LGWin: 24})
	w.Write(b) // a bytes.Buffer does not fail
	w.Close()
	return out.Bytes()
}

// Gzip compresses b at gzip's best, with no name nor time in the header:
// the same source always gives the same bytes.
func Gzip(b []byte) []byte {
	var out bytes.Buffer
	w, _ := gzip.NewWriterLevel(&out, gzip.BestCompression) // the level is valid
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// Write writes path.br and path.gz from the file at path.
func Write(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("precompress %s: %w", path, err)
	}
	if err := os.WriteFile(path+BrotliSuffix, Brotli(src), 0o644); err != nil {
		return fmt.Errorf("precompress %s: %w", path, err)
	}
	if err := os.WriteFile(path+GzipSuffix, Gzip(src), 0o644); err != nil {
		return fmt.Errorf("precompress %s: %w", path, err)
	}
	return nil
}

// Check reports whether br and gz, the committed forms, decode to src and
// are smaller than it.
func Check(src, br, gz []byte) error {
	got, err := io.ReadAll(brotli.NewReader(bytes.NewReader(br)))
	if err != nil {
		return fmt.Errorf("%w: brotli: %v", ErrStale, err)
	}
	if !bytes.Equal(got, src) {
		return fmt.Errorf("%w: the brotli form decodes to %d other bytes", ErrStale, len(got))
	}
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return fmt.Errorf("%w: gzip: %v", ErrStale, err)
	}
	if got, err = io.ReadAll(r); err != nil {
		return fmt.Errorf("%w: gzip: %v", ErrStale, err)
	}
	if !bytes.Equal(got, src) {
		return fmt.Errorf("%w: the gzip form decodes to %d other bytes", ErrStale, len(got))
	}
	if len(br) >= len(src) || len(gz) >= len(src) {
		return fmt.Errorf("%w: a compressed form (br %d, gzip %d bytes) is not smaller than its source (%d)", ErrStale, len(br), len(gz), len(src))
	}
	return nil
}
