package rendition

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/render/rendertest"
)

// blockedDestinations hold every Open until release is closed, as a
// destination whose endpoint never answers would hold the write (a
// failure the real connector bounds with its timeout, too slowly for a
// unit test).
type blockedDestinations struct {
	opened  chan string
	release chan struct{}
}

func (d blockedDestinations) Check(context.Context, *org.Org, string) (bool, error) {
	return false, nil
}
func (d blockedDestinations) Describe(err error) string { return err.Error() }
func (d blockedDestinations) Open(_ context.Context, orgID, id string) (Bucket, error) {
	d.opened <- id
	<-d.release
	return nil, errors.New("destination unreachable")
}

// TestStoreQueueFull: background writes beyond the workers and the queue
// are dropped, counted and never block the render that asked for them.
func TestStoreQueueFull(t *testing.T) {
	e := newEnv(t)
	dests := blockedDestinations{opened: make(chan string, 4), release: make(chan struct{})}
	stored := make(chan string, 4)
	cfg := DefaultConfig()
	cfg.Store, cfg.Blobs, cfg.Engine, cfg.Now, cfg.CompactIdle = e.store, e.blobs, rendertest.Stopped(t), e.clock.Now, -1
	cfg.Destinations, cfg.StorageWrites, cfg.StorageQueue = dests, 1, 1
	cfg.OnStored = func(id string, err error) { stored <- id }
	svc, err := NewService(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	released := false
	release := func() {
		if !released {
			released = true
			close(dests.release)
		}
	}
	t.Cleanup(release) // before Close: the worker must not hold it
	imgs := make([]*Image, 3)
	for i, id := range []string{"a", "b", "c"} {
		imgs[i] = &Image{ID: id, OrgID: "org", Params: imageparams.Params{StorageDestinationID: "dest"}}
		if err := svc.records.put(imgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	svc.storeLater(imgs[0])
	select {
	case <-dests.opened: // the only worker holds a
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never opened the destination")
	}
	done := make(chan struct{})
	go func() {
		svc.storeLater(imgs[1]) // waits in the queue
		svc.storeLater(imgs[2]) // the queue is full: dropped
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("storeLater blocked on a full queue")
	}
	if st := svc.StoreStats(); st.Waiting != 1 || st.Dropped != 1 {
		t.Fatalf("stats %+v, want 1 waiting and 1 dropped", st)
	}
	release()
	var got []string
	for range 2 {
		select {
		case id := <-stored:
			got = append(got, id)
		case <-time.After(30 * time.Second):
			t.Fatalf("writes ended: %v, want a and b", got)
		}
	}
	if got[0] != "a" || got[1] != "b" {
		t.Fatalf("writes ended: %v, want a then b", got)
	}
	if st := svc.StoreStats(); st.Waiting != 0 || st.Dropped != 1 {
		t.Fatalf("stats after the writes %+v", st)
	}
}

func TestBaseFormat(t *testing.T) {
	img := &Image{ID: "id"}
	base := Variant{Format: BaseFormat(img)}
	if base.Format != imageparams.FormatPNG || ObjectName(img.ID, base) != "id.png" || !base.IsBase(img) {
		t.Fatalf("base %s", base.Format)
	}
	if (Variant{Format: imageparams.FormatWebP}).IsBase(img) || (Variant{imageparams.FormatPNG, imaging.Options{Width: 10}}).IsBase(img) {
		t.Fatal("another format or a transformation is the base")
	}
	img.Params.PDF = &imageparams.PDFOptions{}
	if f := BaseFormat(img); f != imageparams.FormatPDF || ObjectName(img.ID, Variant{Format: f}) != "id.pdf" {
		t.Fatalf("base with pdf_options %s", f)
	}
}
