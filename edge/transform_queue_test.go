package edge

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTransformQueue: renditions run at most as many at once as there are
// slots; waiting ones wait within their context; past the queue bound a
// rendition is refused at once.
func TestTransformQueue(t *testing.T) {
	e := &Edge{transforms: make(chan struct{}, 1)}
	hold, release := make(chan struct{}), make(chan struct{})
	go e.transform(context.Background(), func() ([]byte, error) { close(hold); <-release; return nil, nil })
	<-hold // the one slot is taken

	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := e.transform(ctx, func() ([]byte, error) { return nil, errors.New("ran without a slot") })
		waited <- err
	}()
	// The waiter counts in the queue: fill the rest of it.
	deadline := time.Now().Add(10 * time.Second)
	for e.waiting.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the second rendition never queued")
		}
		time.Sleep(time.Millisecond)
	}
	e.waiting.Add(maxTransformQueue - 1)
	if _, err := e.transform(context.Background(), func() ([]byte, error) { return nil, nil }); !errors.Is(err, errTransformsBusy) {
		t.Fatalf("past the queue bound: %v, want errTransformsBusy", err)
	}
	e.waiting.Add(-(maxTransformQueue - 1))
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended: %v", err)
	}
	if e.waiting.Load() != 0 {
		t.Fatalf("waiting = %d after the waiter left", e.waiting.Load())
	}
	close(release)
	out, err := e.transform(context.Background(), func() ([]byte, error) { return []byte("ok"), nil })
	if err != nil || string(out) != "ok" {
		t.Fatalf("after the slot was freed: %q, %v", out, err)
	}
}
