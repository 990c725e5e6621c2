package rendition

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/imageparams"
)

// heldBlobs holds every Put of a file named name until release (or
// fail, which makes the held Puts fail instead of writing).
type heldBlobs struct {
	blob.Blobs
	name     string
	entered  chan struct{} // a value per held Put
	release  chan struct{}
	failWith error
	once     sync.Once
}

func newHeldBlobs(b blob.Blobs, name string) *heldBlobs {
	return &heldBlobs{Blobs: b, name: name, entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (h *heldBlobs) let() { h.once.Do(func() { close(h.release) }) }

func (h *heldBlobs) Put(ctx context.Context, id, name string, data []byte) error {
	if name == h.name {
		h.entered <- struct{}{}
		<-h.release
		if h.failWith != nil {
			return h.failWith
		}
	}
	return h.Blobs.Put(ctx, id, name, data)
}

// flightEnv is an env whose service renders with a test engine and
// stores through held blobs.
func flightEnv(t *testing.T, hold string) (*env, *heldBlobs, *testEngine) {
	e := newEnv(t)
	held := newHeldBlobs(e.blobs, hold)
	eng := newTestEngine(t, 7, false)
	cfg := DefaultConfig()
	cfg.Store, cfg.Blobs, cfg.Engine, cfg.Now, cfg.CompactIdle = e.store, held, eng, e.clock.Now, -1
	svc, err := NewService(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	t.Cleanup(held.let) // before Close: cleanups run last-in first-out
	e.svc = svc
	return e, held, eng
}

// TestGetAnsweredStoreFails: when the write of a master whose bytes were
// already answered fails, the image stays pending (nothing recorded), the
// next GET renders it again and is answered, and the record then holds
// what that render stored.
func TestGetAnsweredStoreFails(t *testing.T) {
	e, held, eng := flightEnv(t, fileNames[imageparams.FormatPNG])
	held.failWith = errors.New("disk full")
	o := e.newOrg("pro")
	img := e.create(o, Item{Params: html("x"), StorageOnly: true}) // no background render
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	f, err := e.svc.OpenForGet(ctx, img.ID, imageparams.FormatPNG) // answered while the write is held
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	<-held.entered
	// The flight is taken before the write goes on: once it ended, a
	// caller would start a render of its own.
	first := flightOf(t, e.svc, "png/"+img.ID)
	held.let()
	<-first.done
	if first.err == nil || first.err.Error() != "disk full" {
		t.Fatalf("the flight ended with %v, want the store's error", first.err)
	}
	if got := e.get(ctx, img.ID); got.State != StatePending || len(got.Renditions) != 0 {
		t.Fatalf("a master that was not stored is recorded: %+v", got)
	}

	held.failWith = nil
	f, err = e.svc.OpenForGet(ctx, img.ID, imageparams.FormatPNG)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := e.svc.master(ctx, img.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.get(ctx, img.ID); got.State != StateReady || got.Renditions["png"].ETag != f.Rendition.ETag {
		t.Fatalf("record after the second render: %+v, answered %+v", got, f.Rendition)
	}
	if n := eng.calls.Load(); n != 2 {
		t.Fatalf("%d renders, want 2", n)
	}
}

// flightOf returns the flight of key that runs now.
func flightOf(t *testing.T, s *Service, key string) *flight {
	t.Helper()
	s.flightsMu.Lock()
	defer s.flightsMu.Unlock()
	f := s.flights[key]
	if f == nil {
		t.Fatalf("no flight of %s runs", key)
	}
	return f
}

// TestOpenWaitsForStore: Open (for other callers than a GET: storage
// destinations, OG pages) returns the stored file, after the write.
func TestOpenWaitsForStore(t *testing.T) {
	e, held, _ := flightEnv(t, fileNames[imageparams.FormatPNG])
	img := e.create(e.newOrg("pro"), Item{Params: html("x"), StorageOnly: true}) // no background render
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opened := make(chan error, 1)
	go func() {
		f, err := e.svc.Open(ctx, img.ID, imageparams.FormatPNG)
		if err == nil {
			f.Close()
		}
		opened <- err
	}()
	<-held.entered
	select {
	case err := <-opened:
		t.Fatalf("Open returned (%v) while the master was being written", err)
	default:
	}
	held.let()
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	if got := e.get(ctx, img.ID); got.State != StateReady {
		t.Fatalf("Open returned before the record held the master: %+v", got)
	}
}

// TestDeleteAfterAnsweredGet: a delete of an image whose master a GET was
// just answered from, while the master is still being written, returns
// once the write ended and every file of the image is gone.
func TestDeleteAfterAnsweredGet(t *testing.T) {
	e, held, _ := flightEnv(t, fileNames[imageparams.FormatPNG])
	waiting := make(chan string, 1)
	e.svc.storing = func(id string) { waiting <- id }
	o := e.newOrg("pro")
	img := e.create(o, Item{Params: html("x"), StorageOnly: true}) // no background render
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := e.svc.OpenForGet(ctx, img.ID, imageparams.FormatPNG)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	<-held.entered
	deleted := make(chan error, 1)
	go func() {
		_, err := e.svc.Delete(ctx, o.ID, []string{img.ID})
		deleted <- err
	}()
	select {
	case id := <-waiting:
		if id != img.ID {
			t.Fatalf("the delete waited for image %s", id)
		}
	case err := <-deleted:
		t.Fatalf("the delete returned (%v) while the master was still being written", err)
	}
	held.let()
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(e.dir, "images", "*", img.ID, "*")); len(files) > 0 {
		t.Fatalf("files of the deleted image left: %v", files)
	}
	if _, err := e.svc.Get(ctx, img.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the record after the delete: %v", err)
	}
}
