package cache

import (
	"errors"
	"io"
	"sync/atomic"
	"syscall"
)

// Body is an L2 body opened to be sent (OpenBody): read it, or hand it to
// a socket with SendTo, which uses sendfile from the body's own offset (the
// file is shared by every answer sending it). Close it once, when done.
type Body struct {
	// Conn, when set, is told before WriteTo flushes the headers of a body
	// it will send with sendfile (see Coalescer).
	Conn Coalescer

	h        *fileHandle
	off, end int64
	sent     *atomic.Uint64 // the cache's count of bytes sent with sendfile
}

// Coalescer is a connection that can hold its next write back for what
// follows (MSG_MORE), so that the headers and the start of a body sent
// with sendfile leave in full segments, as nginx's tcp_nopush does.
type Coalescer interface {
	// MoreFollows(true) holds the connection's next write back for more;
	// MoreFollows(false) undoes it if no write came.
	MoreFollows(bool)
}

// Read reads the body from where the last Read or SendTo ended.
func (b *Body) Read(p []byte) (int, error) {
	if b.h == nil {
		return 0, ErrClosed
	}
	if b.off >= b.end {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), b.end-b.off)]
	n, err := b.h.f.ReadAt(p, b.off)
	b.off += int64(n)
	if errors.Is(err, io.EOF) && n == len(p) {
		err = nil
	}
	if err == nil && n < len(p) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// sendfileAbove: a body longer than this is sent with sendfile after the
// headers; a shorter one is read into the writer's buffer behind them
// (fasthttp's is 64 KiB at the edge), so that both leave in one write.
const sendfileAbove = 48 << 10

// bufferedWriter is bufio.Writer's part WriteTo needs.
type bufferedWriter interface {
	io.ReaderFrom
	Flush() error
}

// WriteTo writes the rest of the body to w. Behind a buffered writer
// (fasthttp's) holding the headers, a long body flushes them first, so
// that the writer hands the body to the connection's ReadFrom, which sends
// it with sendfile (SendTo); a short one is read in behind them.
func (b *Body) WriteTo(w io.Writer) (int64, error) {
	if bw, ok := w.(bufferedWriter); ok {
		if b.end-b.off > sendfileAbove {
			if b.Conn != nil {
				b.Conn.MoreFollows(true)
			}
			err := bw.Flush()
			if b.Conn != nil {
				b.Conn.MoreFollows(false)
			}
			if err != nil {
				return 0, err
			}
		}
		return bw.ReadFrom(onlyReader{b})
	}
	return io.Copy(w, onlyReader{b})
}

// onlyReader hides Body's WriteTo from io.Copy and bufio, which would call
// it back; AsBody unwraps it for the connection's ReadFrom.
type onlyReader struct{ b *Body }

func (r onlyReader) Read(p []byte) (int, error) { return r.b.Read(p) }

// AsBody returns the Body r is, or wraps, for a connection's ReadFrom to
// send it with SendTo.
func AsBody(r io.Reader) (*Body, bool) {
	switch r := r.(type) {
	case *Body:
		return r, true
	case onlyReader:
		return r.b, true
	}
	return nil, false
}

// Part narrows the body to n bytes from start; Range answers use it
// before any Read.
func (b *Body) Part(start, n int64) {
	b.off, b.end = start, min(start+n, b.end)
}

// Close releases the file.
func (b *Body) Close() error {
	if b.h != nil {
		b.h.release()
		b.h = nil
	}
	return nil
}

// SendTo writes the rest of the body to the socket c with sendfile, as
// net's own ReadFrom does for an *os.File, but from the body's offset. It
// reports errors.ErrUnsupported, having written nothing, for a body whose
// file is not the operating system's (tests).
func (b *Body) SendTo(c syscall.RawConn) (int64, error) {
	if b.h == nil {
		return 0, ErrClosed
	}
	in, ok := b.h.f.(osFD)
	if !ok {
		return 0, errors.ErrUnsupported
	}
	var (
		written int64
		serr    error
	)
	err := c.Write(func(out uintptr) bool {
		for b.off < b.end {
			n, err := syscall.Sendfile(int(out), int(in), &b.off, int(min(b.end-b.off, 1<<30)))
			if n > 0 {
				written += int64(n)
			}
			switch {
			case errors.Is(err, syscall.EAGAIN):
				return false // wait until the socket takes more
			case errors.Is(err, syscall.EINTR):
			case err != nil:
				serr = err
				return true
			case n == 0:
				serr = io.ErrUnexpectedEOF // the file is shorter than it was
				return true
			}
		}
		return true
	})
	if err == nil {
		err = serr
	}
	b.sent.Add(uint64(written))
	return written, err
}

// readerAtCloser is an open body file.
type readerAtCloser interface {
	io.ReaderAt
	io.Closer
}

// osFD is a body file opened by the operating system, read with pread.
type osFD int

func (f osFD) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		k, err := syscall.Pread(int(f), p[n:], off+int64(n))
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return n, err
		case k == 0:
			return n, io.EOF
		}
		n += k
	}
	return n, nil
}

func (f osFD) Close() error { return syscall.Close(int(f)) }

// fileHandle is an open body file shared by the handle table and the hits
// using it; the last to release it closes it. Once its count reaches 0
// nobody can acquire it again, so a closed descriptor (whose number the
// kernel may give to another file) is never read.
type fileHandle struct {
	n    uint64 // the file's number
	f    readerAtCloser
	refs atomic.Int32
}

func (h *fileHandle) acquire() bool {
	for {
		r := h.refs.Load()
		if r <= 0 {
			return false
		}
		if h.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

func (h *fileHandle) release() {
	if h.refs.Add(-1) == 0 {
		h.f.Close()
	}
}

// handleSlots sizes the handle table: from minHandles to maxHandles,
// leaving reservedFDs of the files the process may open to everything
// else (the edge's 4,096 client connections by default, pebble, the
// origin's connections).
func handleSlots() int {
	const minHandles, maxHandles, reservedFDs = 256, 16384, 5120
	limit := uint64(maxHandles + reservedFDs)
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		limit = rl.Cur
	}
	if limit <= reservedFDs+minHandles {
		return minHandles
	}
	return int(min(limit-reservedFDs, maxHandles))
}
