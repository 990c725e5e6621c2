package rendition

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/usage"
)

// TestCreditsExactAcrossOrigins: 80 concurrent creations of one credit
// each against a 50-credit plan, spread over the services sharing the
// store, charge exactly 50: the others are refused with the plan limit,
// and the store holds 50 images.
func TestCreditsExactAcrossOrigins(t *testing.T) {
	tests := []struct {
		backend  storetest.Backend
		services int
	}{
		{backend: backends[0], services: 1},
		{backend: backends[1], services: 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d services", tt.backend.Name, tt.services), func(t *testing.T) {
			var engines []*testEngine
			for i := range tt.services {
				engines = append(engines, newTestEngine(t, uint8(i), false))
			}
			o := newOrigins(t, tt.backend, 2*time.Second, engines...)
			g := o.newOrg("free")
			const creations = 80
			var mu sync.Mutex
			var ok, refused int
			var wg sync.WaitGroup
			for i := range creations {
				wg.Go(func() {
					svc := o.svcs[i%len(o.svcs)]
					_, _, err := svc.Create(context.Background(), g, []Item{{Params: html(fmt.Sprintf("image %d", i))}})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						ok++
					case errors.Is(err, usage.ErrPlanLimit):
						refused++
					default:
						t.Errorf("creation %d: %v", i, err)
					}
				})
			}
			wg.Wait()
			if ok != 50 || refused != creations-50 {
				t.Fatalf("%d created, %d refused; want 50 and %d", ok, refused, creations-50)
			}
			used, err := usage.Used(t.Context(), o.stores[0], g, o.clock.Now())
			if err != nil || used != 50 {
				t.Fatalf("usage reads %d (%v), want 50", used, err)
			}
			list, more, err := o.svcs[len(o.svcs)-1].List(t.Context(), g.ID, "", 100)
			if err != nil || len(list) != 50 || more {
				t.Fatalf("the organization lists %d images (more %v, %v), want 50", len(list), more, err)
			}
		})
	}
}

// readAll opens the image's PNG on svc and reads it whole.
func readAll(ctx context.Context, svc *Service, id string) ([]byte, error) {
	f, err := svc.Open(ctx, id, imageparams.FormatPNG)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// TestOneRenderAcrossOrigins: concurrent opens of a new image on two
// services sharing the store and the blobs render it once in all, and
// every open gets the same bytes, those the record describes.
func TestOneRenderAcrossOrigins(t *testing.T) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			o := newOrigins(t, b, 2*time.Second, newTestEngine(t, 1, true), newTestEngine(t, 2, true))
			g := o.newOrg("pro")
			// StorageOnly: no background render; the opens race for it.
			created, _, err := o.svcs[0].Create(context.Background(), g, []Item{{Params: html("x"), StorageOnly: true}})
			if err != nil {
				t.Fatal(err)
			}
			id := created[0].ID
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			const perService = 4
			got := make(chan []byte, 2*perService)
			var wg sync.WaitGroup
			for i := range 2 * perService {
				wg.Go(func() {
					data, err := readAll(ctx, o.svcs[i%2], id)
					if err != nil {
						t.Error(err)
					}
					got <- data
				})
			}
			// One render starts; the other service waits for it, however
			// long it takes, and is then given its file. (Both engines are
			// let go then, so that a second render would finish, and show.)
			var first *testEngine
			select {
			case <-o.engines[0].started:
				first = o.engines[0]
			case <-o.engines[1].started:
				first = o.engines[1]
			case <-ctx.Done():
				t.Fatal("no render started")
			}
			o.engines[0].release()
			o.engines[1].release()
			wg.Wait()
			close(got)
			for data := range got {
				if !bytes.Equal(data, first.data) {
					t.Fatalf("an open got other bytes (%d) than the one render's (%d)", len(data), len(first.data))
				}
			}
			if n := o.engines[0].calls.Load() + o.engines[1].calls.Load(); n != 1 {
				t.Fatalf("%d renders, want 1", n)
			}
			for i, svc := range o.svcs {
				if _, err := svc.cfg.Store.Get(ctx, leaseKey(id, imageparams.FormatPNG)); !errors.Is(err, kv.ErrNotFound) {
					t.Fatalf("service %d: the lease is still there after the render (%v)", i, err)
				}
			}
		})
	}
}

// TestLeaseTakeover: an origin that dies while it renders (it neither
// renews nor releases its lease, nor records anything) delays the image
// by the lease's life: then another origin takes the lease over and
// renders it, once. The dead origin's render, finishing late, does not
// overwrite the file.
func TestLeaseTakeover(t *testing.T) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			const lease = 2 * time.Second
			o := newOrigins(t, b, lease, newTestEngine(t, 1, true), newTestEngine(t, 2, false))
			dead, live := o.svcs[0], o.svcs[1]
			g := o.newOrg("pro")
			created, _, err := dead.Create(context.Background(), g, []Item{{Params: html("x")}}) // renders in the background
			if err != nil {
				t.Fatal(err)
			}
			id := created[0].ID
			<-o.engines[0].started
			o.stores[0].cut.Store(true) // killed

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			data, err := readAll(ctx, live, id)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, o.engines[1].data) {
				t.Fatalf("the open got %d bytes, not those of the live origin's render", len(data))
			}
			if d := time.Since(start); d > lease+30*time.Second {
				t.Fatalf("the image took %v, the lease lasts %v", d, lease)
			}
			if a, b := o.engines[0].calls.Load(), o.engines[1].calls.Load(); a != 1 || b != 1 {
				t.Fatalf("renders: %d by the dead origin, %d by the live one; want 1 and 1", a, b)
			}
			// The dead origin's render ends late: it finds its lease
			// unconfirmable and stores nothing.
			o.engines[0].release()
			dead.Close()
			f, err := live.Open(ctx, id, imageparams.FormatPNG)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			after, err := io.ReadAll(f)
			if err != nil || !bytes.Equal(after, o.engines[1].data) || f.Rendition.Size != int64(len(after)) {
				t.Fatalf("after the dead origin's render ended: %d bytes (%v), recorded %d", len(after), err, f.Rendition.Size)
			}
			if _, err := live.cfg.Store.Get(ctx, leaseKey(id, imageparams.FormatPNG)); !errors.Is(err, kv.ErrNotFound) {
				t.Fatalf("the lease is still there after the render (%v)", err)
			}
		})
	}
}

// TestLeaseRenewal: a render that outlasts its lease's life is not taken
// over while its origin lives, since it renews the lease: the other
// origin waits past the first expiry and gets its result, one render in
// all.
func TestLeaseRenewal(t *testing.T) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			const lease = 3 * time.Second
			o := newOrigins(t, b, lease, newTestEngine(t, 1, true), newTestEngine(t, 2, false))
			slow, other := o.svcs[0], o.svcs[1]
			renewed := make(chan struct{}, 16)
			slow.renewed = func(string) { renewed <- struct{}{} }
			g := o.newOrg("pro")
			created, _, err := slow.Create(context.Background(), g, []Item{{Params: html("x")}}) // renders in the background
			if err != nil {
				t.Fatal(err)
			}
			id := created[0].ID
			<-o.engines[0].started

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			type result struct {
				data []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				data, err := readAll(ctx, other, id)
				done <- result{data, err}
			}()
			// Four renewals a third of the lease apart: the lease taken
			// before them would have expired.
			for range 4 {
				select {
				case <-renewed:
				case r := <-done:
					t.Fatalf("the other origin did not wait for the render: %d bytes, %v", len(r.data), r.err)
				case <-ctx.Done():
					t.Fatal("the lease was not renewed")
				}
			}
			select {
			case r := <-done:
				t.Fatalf("the other origin did not wait for the render: %d bytes, %v", len(r.data), r.err)
			default:
			}
			o.engines[0].release()
			r := <-done
			if r.err != nil || !bytes.Equal(r.data, o.engines[0].data) {
				t.Fatalf("the other origin got %d bytes (%v), not those of the render", len(r.data), r.err)
			}
			if a, b := o.engines[0].calls.Load(), o.engines[1].calls.Load(); a != 1 || b != 0 {
				t.Fatalf("renders: %d by the slow origin, %d by the other; want 1 and 0", a, b)
			}
		})
	}
}

// TestDeleteDropsLeases: deleting an image deletes its render leases with
// its record, so a render under way learns it lost its lease, and an id
// created again (a signed URL's) starts without one.
func TestDeleteDropsLeases(t *testing.T) {
	o := newOrigins(t, backends[0], 2*time.Second, newTestEngine(t, 1, true))
	svc := o.svcs[0]
	g := o.newOrg("pro")
	created, _, err := svc.Create(context.Background(), g, []Item{{Params: html("x")}})
	if err != nil {
		t.Fatal(err)
	}
	id := created[0].ID
	<-o.engines[0].started
	if _, err := svc.cfg.Store.Get(t.Context(), leaseKey(id, imageparams.FormatPNG)); err != nil {
		t.Fatalf("no lease while the render runs: %v", err)
	}
	if n, err := svc.Delete(context.Background(), g.ID, []string{id}); n != 1 || err != nil {
		t.Fatalf("delete: %d, %v", n, err)
	}
	if _, err := svc.cfg.Store.Get(t.Context(), leaseKey(id, imageparams.FormatPNG)); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("the lease outlived its image (%v)", err)
	}
	o.engines[0].release()
	svc.Close() // waits for the render
	if _, err := svc.cfg.Blobs.Read(context.Background(), id, fileNames[imageparams.FormatPNG]); err == nil {
		t.Fatal("the render of a deleted image left its file")
	}
	if _, err := svc.cfg.Store.Get(t.Context(), leaseKey(id, imageparams.FormatPNG)); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("the render of a deleted image left a lease (%v)", err)
	}
}

// pausedBlobs holds each Put of the master after writing it, until
// resume: a compactor caught between swapping the file and recording it.
type pausedBlobs struct {
	blob.Blobs
	put    chan struct{}
	resume chan struct{}
}

func (p *pausedBlobs) Put(ctx context.Context, id, name string, data []byte) error {
	err := p.Blobs.Put(ctx, id, name, data)
	if name == fileNames[imageparams.FormatPNG] {
		p.put <- struct{}{}
		<-p.resume
	}
	return err
}

// TestOpenDuringCompactionElsewhere: an origin opening a master while
// another origin compacts it, between the compactor's swap of the file
// and its record, gets a file whose size is the one it is told, with the
// master's pixels, and the same after.
func TestOpenDuringCompactionElsewhere(t *testing.T) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			o := newOrigins(t, b, 2*time.Second, newTestEngine(t, 1, false), newTestEngine(t, 2, false))
			compactor, reader := o.svcs[0], o.svcs[1]
			g := o.newOrg("pro")
			created, _, err := reader.Create(context.Background(), g, []Item{{Params: html("x"), StorageOnly: true}})
			if err != nil {
				t.Fatal(err)
			}
			id := created[0].ID
			raw := testPNG(t, 64, 48, 3)
			if _, err := reader.Keep(context.Background(), id, imageparams.FormatPNG, raw, func(img *Image) {
				img.State, img.Width, img.Height = StateReady, 64, 48
			}); err != nil {
				t.Fatal(err)
			}
			paused := &pausedBlobs{Blobs: compactor.cfg.Blobs, put: make(chan struct{}), resume: make(chan struct{})}
			compactor.cfg.Blobs = paused
			compacted := make(chan error, 1)
			go func() { compacted <- compactor.Compact(id) }()
			<-paused.put

			check := func(when string) {
				t.Helper()
				f, err := reader.Open(context.Background(), id, imageparams.FormatPNG)
				if err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				defer f.Close()
				data, err := io.ReadAll(f)
				if err != nil || int64(len(data)) != f.Rendition.Size || !apitest.SamePixels(t, raw, data) {
					t.Fatalf("%s: %d bytes (%v), told %d", when, len(data), err, f.Rendition.Size)
				}
			}
			check("between the swap and its record")
			close(paused.resume)
			if err := <-compacted; err != nil {
				t.Fatal(err)
			}
			check("after the compaction")
			img, err := reader.Get(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if rend := img.Renditions["png"]; rend.Size >= int64(len(raw)) {
				t.Fatalf("the master was not compacted: %d bytes recorded, %d before", rend.Size, len(raw))
			}
		})
	}
}

// leaseWrites counts the render-lease writes made through a store's
// transactions.
type leaseWrites struct {
	kv.Store
	n atomic.Int64
}

func (l *leaseWrites) Update(ctx context.Context, lock string, fn func(kv.Txn) error) error {
	return l.Store.Update(ctx, lock, func(txn kv.Txn) error { return fn(leaseTxn{txn, l}) })
}

type leaseTxn struct {
	kv.Txn
	l *leaseWrites
}

func (t leaseTxn) Put(key, value []byte) error {
	if bytes.HasPrefix(key, []byte("img-lease/")) {
		t.l.n.Add(1)
	}
	return t.Txn.Put(key, value)
}

// TestLeasesOnlyOnASharedStore: a service alone on its store (the embedded
// default) makes a file without any render-lease write, which would only
// add synced commits to every render; one sharing its store takes and
// releases a lease.
func TestLeasesOnlyOnASharedStore(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			store := &leaseWrites{Store: backends[0].Open(t, 1)[0]}
			clock := apitest.NewClock(time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC))
			g, err := org.NewStore(store, clock.Now).Create("org pro", "pro")
			if err != nil {
				t.Fatal(err)
			}
			blobs, err := blob.Open(filepath.Join(t.TempDir(), "images"))
			if err != nil {
				t.Fatal(err)
			}
			eng := newTestEngine(t, 1, false)
			cfg := DefaultConfig()
			cfg.Store, cfg.Blobs, cfg.Engine, cfg.Now, cfg.CompactIdle, cfg.Shared = store, blobs, eng, clock.Now, -1, shared
			svc, err := NewService(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(svc.Close)
			created, _, err := svc.Create(context.Background(), g, []Item{{Params: html("x"), StorageOnly: true}})
			if err != nil {
				t.Fatal(err)
			}
			data, err := readAll(t.Context(), svc, created[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, eng.data) {
				t.Fatal("the file is not the render's")
			}
			switch n := store.n.Load(); {
			case !shared && n != 0:
				t.Fatalf("%d lease writes for a store of its own", n)
			case shared && n == 0:
				t.Fatal("no lease taken on a shared store")
			}
		})
	}
}
