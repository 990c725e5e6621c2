package cache

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
)

// Body is a body to send: an L2 body opened (OpenBody), or an L1 body in
// memory (MemoryBody). Read it, or hand it to a socket: SendTo sends an L2
// body with sendfile from its own offset (the file is shared by every
// answer sending it), Memory gives an L1 body's bytes to write as they
// are. Close it once, when done.
type Body struct {
	// Conn, when set, holds the headers back for WriteTo, so that they
	// leave with the body (see Coalescer).
	Conn Coalescer

	h        *fileHandle
	mem      []byte // a body in memory: mem[off:end] is left to send
	off, end int64
	sent     *atomic.Uint64 // the cache's count of bytes sent with sendfile
}

// Coalescer is a connection that can hold its next write back for what
// follows, so that an answer's headers and its body leave together: in one
// writev with a body in memory, ahead of a body sent with sendfile with
// MSG_MORE (full segments, as nginx's tcp_nopush gives).
type Coalescer interface {
	// MoreFollows(true) holds the connection's next write back until the
	// write or sendfile after it; MoreFollows(false) sends what is still
	// held, if any.
	MoreFollows(bool) error
}

// memoryBodies recycles the Bodies of L1 hits, which allocate nothing.
var memoryBodies = sync.Pool{New: func() any { return new(Body) }}

// MemoryBody returns a Body sending p, which must not change until the
// Body is closed. Close returns it for reuse: use it no more after that.
func MemoryBody(p []byte) *Body {
	b := memoryBodies.Get().(*Body)
	b.mem, b.off, b.end = p, 0, int64(len(p))
	return b
}

// Memory returns what is left to send of a body in memory, or false for a
// body on disk.
func (b *Body) Memory() ([]byte, bool) {
	if b.mem == nil {
		return nil, false
	}
	return b.mem[b.off:b.end], true
}

// Read reads the body from where the last Read or SendTo ended.
func (b *Body) Read(p []byte) (int, error) {
	if b.h == nil && b.mem == nil {
		return 0, ErrClosed
	}
	if b.off >= b.end {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), b.end-b.off)]
	if b.mem != nil {
		n := copy(p, b.mem[b.off:])
		b.off += int64(n)
		return n, nil
	}
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

// sendfileAbove: an L2 body longer than this is sent with sendfile after
// the headers; a shorter one is read into the writer's buffer behind them
// (fasthttp's is 64 KiB at the edge), so that both leave in one write.
const sendfileAbove = 48 << 10

// bufferedWriter is bufio.Writer's part WriteTo needs.
type bufferedWriter interface {
	io.ReaderFrom
	Flush() error
}

// WriteTo writes the rest of the body to w. Behind a buffered writer
// (fasthttp's) holding the headers, a body in memory or a long one on disk
// flushes them into the connection, which holds them (Coalescer), so that
// the writer hands the body to the connection's ReadFrom: one writev of
// headers and body from memory, or the headers then sendfile (SendTo). A
// short body on disk is read in behind the headers.
func (b *Body) WriteTo(w io.Writer) (int64, error) {
	bw, ok := w.(bufferedWriter)
	if !ok {
		return io.Copy(w, onlyReader{b})
	}
	if b.Conn == nil || b.mem == nil && b.end-b.off <= sendfileAbove {
		return bw.ReadFrom(onlyReader{b})
	}
	if err := b.Conn.MoreFollows(true); err != nil {
		return 0, err
	}
	n, err := int64(0), bw.Flush()
	if err == nil {
		n, err = bw.ReadFrom(onlyReader{b})
	}
	if err1 := b.Conn.MoreFollows(false); err == nil {
		err = err1
	}
	return n, err
}

// onlyReader hides Body's WriteTo from io.Copy and bufio, which would call
// it back; AsBody unwraps it for the connection's ReadFrom.
type onlyReader struct{ b *Body }

func (r onlyReader) Read(p []byte) (int, error) { return r.b.Read(p) }

// AsBody returns the Body r is, or wraps, for a connection's ReadFrom to
// send it with SendTo or write its Memory.
func AsBody(r io.Reader) (*Body, bool) {
	switch r := r.(type) {
	case *Body:
		return r, true
	case onlyReader:
		return r.b, true
	}
	return nil, false
}

// Len returns the length of what is left to send.
func (b *Body) Len() int { return int(b.end - b.off) }

// Part narrows the body to n bytes from start; Range answers use it
// before any Read.
func (b *Body) Part(start, n int64) {
	b.off, b.end = start, min(start+n, b.end)
}

// Close releases the file, or recycles a body in memory.
func (b *Body) Close() error {
	switch {
	case b.h != nil:
		b.h.release()
		b.h = nil
	case b.mem != nil:
		*b = Body{}
		memoryBodies.Put(b)
	}
	return nil
}

// SendTo writes the rest of the body to the socket c with sendfile, as
// net's own ReadFrom does for an *os.File, but from the body's offset. It
// reports errors.ErrUnsupported, having written nothing, for a body whose
// file is not the operating system's (tests).
func (b *Body) SendTo(c syscall.RawConn) (int64, error) {
	if b.mem != nil {
		return 0, errors.ErrUnsupported
	}
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
		raw     = cached(int(in), b.off, b.end-b.off)
	)
	err := c.Write(func(out uintptr) bool {
		for b.off < b.end {
			n, err := sendfile(int(out), int(in), &b.off, int(min(b.end-b.off, 1<<30)), raw)
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

// osFD is a body file opened by the operating system, read with pread
// (fd_linux.go: from the page cache without leaving the processor).
type osFD int

func (f osFD) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		k, err := pread(int(f), p[n:], off+int64(n))
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

func (f osFD) Close() error { return closeFD(int(f)) }

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
