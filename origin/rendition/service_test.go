package rendition

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCloseWaitsForRenders: a render or conversion a caller started goes
// on when the caller stops waiting (its request ended), so Close must
// wait for it as it does for background renders: the origin closes the
// store right after Close, and a render that then records its result
// would use a closed store. Work asked for after Close does not start.
func TestCloseWaitsForRenders(t *testing.T) {
	e := newEnv(t)
	started, sawClose, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // before Close's cleanup, when the test fails early
	var finished atomic.Bool
	ctx, stopWaiting := context.WithCancel(context.Background())
	waited := make(chan error)
	go func() {
		_, err := e.svc.await(ctx, "png/test", func(ctx context.Context, _ *flight) (*Image, error) {
			close(started)
			<-ctx.Done() // Close ends the work's context...
			close(sawClose)
			<-release // ...and the work takes a moment to stop
			finished.Store(true)
			return nil, ctx.Err()
		})
		waited <- err
	}()
	<-started
	stopWaiting() // the request ends; the work goes on
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that stopped waiting got %v", err)
	}

	closed := make(chan struct{})
	go func() {
		e.svc.Close()
		close(closed)
	}()
	<-sawClose
	// Close is past canceling the work: give it every chance to return
	// early, which it must not do while the work runs.
	for range 1000 {
		select {
		case <-closed:
			t.Fatal("Close returned while a render it canceled was still running")
		default:
			runtime.Gosched()
		}
	}
	releaseOnce()
	<-closed
	if !finished.Load() {
		t.Fatal("Close returned before the render finished")
	}

	ran := false
	_, err := e.svc.await(context.Background(), "png/after", func(context.Context, *flight) (*Image, error) {
		ran = true
		return nil, nil
	})
	if ran || !errors.Is(err, errClosed) {
		t.Fatalf("work asked for after Close: ran = %v, err = %v", ran, err)
	}
}
