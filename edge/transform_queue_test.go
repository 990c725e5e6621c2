package edge

import (
	"context"
	"errors"
	"testing"
)

// TestTransformQueue: renditions run at most as many at once as there are
// slots; a waiting one gives up when its context ends; past the queue
// bound a rendition is refused at once.
func TestTransformQueue(t *testing.T) {
	e := &Edge{transforms: make(chan struct{}, 1)}
	hold, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.transform(context.Background(), func() ([]byte, error) { close(hold); <-release; return nil, nil })
	}()
	<-hold // the one slot is taken

	// A waiter whose context is over leaves the queue without running.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.transform(ctx, func() ([]byte, error) { return nil, errors.New("ran without a slot") }); !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended: %v", err)
	}
	if e.waiting.Load() != 0 {
		t.Fatalf("waiting = %d after the waiter left", e.waiting.Load())
	}
	// A full queue refuses at once.
	e.waiting.Store(maxTransformQueue)
	if _, err := e.transform(context.Background(), func() ([]byte, error) { return nil, nil }); !errors.Is(err, errTransformsBusy) {
		t.Fatalf("past the queue bound: %v, want errTransformsBusy", err)
	}
	if e.waiting.Load() != maxTransformQueue {
		t.Fatalf("a refused rendition changed the queue to %d", e.waiting.Load())
	}
	e.waiting.Store(0)
	close(release)
	<-done
	out, err := e.transform(context.Background(), func() ([]byte, error) { return []byte("ok"), nil })
	if err != nil || string(out) != "ok" {
		t.Fatalf("after the slot was freed: %q, %v", out, err)
	}
}
