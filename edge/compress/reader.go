package compress

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// Levels of the compression done per request: fast ones, since it is
// paid on every relayed answer (the build-time forms use the best).
// Brotli's window is 256 KiB (2^18), which bounds its memory per stream;
// quality 3 was as small as 4 and faster on a JSON list (BenchmarkReader).
const (
	brotliQuality = 3
	brotliWindow  = 18
	gzipLevel     = 5
)

// chunk is how much of the source a Reader compresses at a time: its
// memory is bounded by it (plus the coder's window), whatever the body's
// size.
const chunk = 32 << 10

type encoder interface {
	io.WriteCloser
	Reset(io.Writer)
}

var (
	readers = [...]sync.Pool{
		Gzip: {New: func() any {
			w, _ := gzip.NewWriterLevel(nil, gzipLevel) // the level is valid
			return &Reader{enc: w, e: Gzip}
		}},
		Brotli: {New: func() any {
			return &Reader{enc: brotli.NewWriterOptions(nil, brotli.WriterOptions{Quality: brotliQuality, LGWin: brotliWindow}), e: Brotli}
		}},
	}
	errClosed = errors.New("compress: read after close")
)

// Reader compresses a body as it is read: it reads the source a chunk at
// a time and hands out what the coder made of it, so a relayed answer
// streams in bounded memory and is never buffered whole.
type Reader struct {
	e      Encoding
	enc    encoder
	src    io.ReadCloser
	out    bytes.Buffer
	in     [chunk]byte
	ended  bool // the source is read to its end and the coder closed
	closed bool
}

// NewReader returns src's bytes coded with e (Gzip or Brotli). Close
// closes src and recycles the Reader.
func NewReader(src io.ReadCloser, e Encoding) *Reader {
	r := readers[e].Get().(*Reader)
	r.src = src
	r.out.Reset()
	r.ended, r.closed = false, false
	r.enc.Reset(&r.out)
	return r
}

// Read fills p with coded bytes. An error of the source is returned as it
// is: the answer is then cut off, never ended as if it were whole.
func (r *Reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, errClosed
	}
	for r.out.Len() == 0 && !r.ended {
		n, err := r.src.Read(r.in[:])
		if n > 0 {
			r.enc.Write(r.in[:n]) // into a bytes.Buffer: does not fail
		}
		switch {
		case err == io.EOF:
			r.enc.Close() // flushes the last block into r.out
			r.ended = true
		case err != nil:
			return 0, err
		}
	}
	if r.out.Len() == 0 {
		return 0, io.EOF
	}
	return r.out.Read(p)
}

// Close closes the source and puts the Reader back for another body.
func (r *Reader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.src.Close()
	r.src = nil
	r.enc.Reset(io.Discard) // drops any state of a body not read to its end
	r.out.Reset()
	if r.out.Cap() > 4*chunk {
		r.out = bytes.Buffer{} // one very compressible burst: do not keep its buffer
	}
	readers[r.e].Put(r)
	return err
}
