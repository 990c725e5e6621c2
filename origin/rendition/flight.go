package rendition

import (
	"bytes"
	"context"
	"log/slog"
	"time"

	"github.com/pictorhq/pictor/origin/imageparams"
)

// A flight makes one file of an image (a render, a conversion, a PDF)
// once per process, however many callers ask (await). Once the file is
// made and this process is sure to be its maker (it holds the render
// lease), the flight publishes the bytes before storing them: a GET
// waiting for a master or a PDF is answered from them (awaitFile,
// OpenForGet) while the blob store writes them and the record is updated,
// 10 to 40 ms of a card's latency on this machine, the more the busier
// its disk (docs/render-performance.md, issue 19). The answer is the one a
// later GET of the stored file gives: the same bytes, the ETag of those
// bytes (computed once, for both), the record the update writes. A delete
// of the image waits for the flights that published (waitStores), so that
// it still returns after every stored file is removed.
type flight struct {
	published chan struct{} // closed when file is set
	file      *fresh
	done      chan struct{} // closed when img and err are set
	img       *Image
	err       error
}

// fresh is a file made and not yet (or just) stored: its bytes, and the
// record the store is about to write for it.
type fresh struct {
	data      []byte
	image     *Image
	rendition Info
}

// open returns the file as Open returns a stored one. The bytes are
// shared, never copied: nobody writes them once published.
func (f *fresh) open(format imageparams.Format) *File {
	return &File{Object: memObject{bytes.NewReader(f.data)}, Image: f.image, Rendition: f.rendition, Format: format}
}

// memObject is a blob.Object over bytes in memory.
type memObject struct{ *bytes.Reader }

func (memObject) Close() error { return nil }

// publish hands the flight's file to the callers waiting for it; later
// calls do nothing.
func (f *flight) publish(file *fresh) {
	if f == nil || f.file != nil {
		return
	}
	f.file = file
	close(f.published)
}

// await runs fn once per key however many callers ask, and lets each caller
// stop waiting when its own ctx ends without stopping the work; Close
// stops the work and waits for it. It keeps one maker of a file per
// process; the render lease (leased) one per store. It returns when the
// work ended, the file stored.
func (s *Service) await(ctx context.Context, key string, fn func(context.Context, *flight) (*Image, error)) (*Image, error) {
	f := s.fly(key, fn)
	select {
	case <-f.done:
		return f.img, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// awaitFile is await returning as soon as the flight published its file
// (then the *fresh is set and the record may not hold the file yet), or
// when the work ended without publishing one.
func (s *Service) awaitFile(ctx context.Context, key string, fn func(context.Context, *flight) (*Image, error)) (*fresh, error) {
	f := s.fly(key, fn)
	select {
	case <-f.published:
		return f.file, nil
	case <-f.done:
		select {
		case <-f.published: // both: the bytes are there either way
			return f.file, nil
		default:
		}
		return nil, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fly returns key's flight, starting one when none runs. A flight that
// ended is forgotten before its done closes, so a caller that finds none
// starts the next.
func (s *Service) fly(key string, fn func(context.Context, *flight) (*Image, error)) *flight {
	s.flightsMu.Lock()
	defer s.flightsMu.Unlock()
	if f := s.flights[key]; f != nil {
		return f
	}
	f := &flight{published: make(chan struct{}), done: make(chan struct{})}
	if !s.begin() {
		f.err = errClosed
		close(f.done)
		return f
	}
	s.flights[key] = f
	go func() {
		defer s.wg.Done()
		wctx, cancel := context.WithTimeout(s.ctx, 3*time.Minute)
		img, err := fn(wctx, f)
		cancel()
		if err != nil && f.file != nil {
			// Someone was answered from these bytes: say they are not kept.
			slog.WarnContext(wctx, "a file answered from memory could not be stored; the next request makes it again", "flight", key, "error", err)
		}
		s.flightsMu.Lock()
		delete(s.flights, key)
		s.flightsMu.Unlock()
		f.img, f.err = img, err
		close(f.done)
	}()
	return f
}

// waitStores waits, while ctx lasts, for this process's flights of the
// image that published their file and are storing it.
func (s *Service) waitStores(ctx context.Context, id string) {
	var storing []*flight
	s.flightsMu.Lock()
	for format := range fileNames {
		if f := s.flights[string(format)+"/"+id]; f != nil {
			select {
			case <-f.published:
				storing = append(storing, f)
			default: // still making it: its store finds the record gone
			}
		}
	}
	s.flightsMu.Unlock()
	for _, f := range storing {
		if s.storing != nil {
			s.storing(id)
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return
		}
	}
}
