package og

import (
	"context"
	"io"
	"sync"

	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/rendition"
)

// handoff passes the file of a variant that a shared read or render
// (a flight) opened to the request that started the flight; the requests
// that joined it open their own. The starter takes it, or, when it stopped
// waiting first, the file is closed as it arrives.
type handoff struct {
	variant string

	mu   sync.Mutex
	id   string // the image f is of
	f    *rendition.File
	done bool // taken or left: a file given later is closed
}

// give hands f over when it is the file of h's variant, else closes it.
// A nil h closes it.
func (h *handoff) give(v, id string, f *rendition.File) {
	if h == nil || v != h.variant {
		f.Close()
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done || h.f != nil {
		f.Close()
		return
	}
	h.id, h.f = id, f
}

// take returns the file given, if any, and its image's id, for the caller
// to close. A nil h has none.
func (h *handoff) take() (string, *rendition.File) {
	if h == nil {
		return "", nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	id, f := h.id, h.f
	h.f, h.done = nil, true
	return id, f
}

// leave closes the file given, and any given later.
func (h *handoff) leave() {
	if _, f := h.take(); f != nil {
		f.Close()
	}
}

// openRendered opens a variant's image once it is rendered, waiting no
// longer than ctx allows. The file is read under the service's context
// with ctx's deadline, not under ctx itself, which ends with its flight:
// the file may be handed to the request that started the flight.
func (s *Service) openRendered(ctx context.Context, id string) (*rendition.File, error) {
	fctx, cancel := context.WithCancel(s.ctx)
	if dl, ok := ctx.Deadline(); ok {
		cancel()
		fctx, cancel = context.WithDeadline(s.ctx, dl)
	}
	f, err := s.cfg.Images.Open(fctx, id, imageparams.FormatPNG)
	if err != nil {
		cancel()
		return nil, err
	}
	f.Object = cancelOnClose{Object: f.Object, cancel: cancel}
	return f, nil
}

// cancelOnClose ends a file's context when it is closed.
type cancelOnClose struct {
	blob.Object
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.Object.Close()
	c.cancel()
	return err
}

// WriteTo lets the object write itself (sendfile, for a file), as
// io.Copy does when it is not wrapped.
func (c cancelOnClose) WriteTo(w io.Writer) (int64, error) {
	if wt, ok := c.Object.(io.WriterTo); ok {
		return wt.WriteTo(w)
	}
	return io.Copy(w, struct{ io.Reader }{c.Object})
}
