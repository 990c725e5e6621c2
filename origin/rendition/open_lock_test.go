package rendition

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/imageparams"
)

// TestOpenOutsideRecordLock: Open of a stored file reads the record
// without the image's record lock and opens the blob (an S3 round trip)
// outside it: it answers while another transaction holds that lock, as
// a delete, a compaction's record update or a render's does.
func TestOpenOutsideRecordLock(t *testing.T) {
	e := newEnv(t)
	o := e.newOrg("pro")
	img := e.create(o, Item{Params: html("x")})
	master := testPNG(t, 32, 24, 1)
	e.ready(img.ID, master)

	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- e.store.Update(context.Background(), recordLock(img.ID), func(kv.Txn) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	// A bound for a hang only (Open waiting for the lock never returns
	// before release), not a measure.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := e.svc.Open(ctx, img.ID, imageparams.FormatPNG)
	close(release)
	if err != nil {
		t.Fatalf("Open while the record lock is held: %v", err)
	}
	defer f.Close()
	if got, err := io.ReadAll(f); err != nil || !bytes.Equal(got, master) {
		t.Fatalf("read %d bytes, %v; want the master", len(got), err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
