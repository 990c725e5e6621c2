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

// TestConfigValidate: NewService starts from what it is given, no zero
// stands for a default: a Config missing a part or with a setting out of
// range is refused, DefaultConfig with the parts is not.
func TestConfigValidate(t *testing.T) {
	e := newEnv(t)
	valid := func() Config {
		c := DefaultConfig()
		c.Store, c.Blobs, c.Engine = e.store, e.blobs, e.svc.cfg.Engine
		return c
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("DefaultConfig with its parts: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
	}{
		{"no store", func(c *Config) { c.Store = nil }},
		{"no blobs", func(c *Config) { c.Blobs = nil }},
		{"no engine", func(c *Config) { c.Engine = nil }},
		{"no clock", func(c *Config) { c.Now = nil }},
		{"no render lease", func(c *Config) { c.RenderLease = 0 }},
		{"no background renders", func(c *Config) { c.BackgroundRenders = 0 }},
		{"compaction wait 0", func(c *Config) { c.CompactIdle = 0 }},
		{"no storage writers", func(c *Config) { c.StorageWrites = 0 }},
		{"no storage queue", func(c *Config) { c.StorageQueue = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.change(&c)
			if err := c.Validate(); err == nil {
				t.Error("Validate accepted it")
			}
			if svc, err := NewService(t.Context(), c); err == nil {
				svc.Close()
				t.Error("NewService accepted it")
			}
		})
	}
	off := valid()
	off.CompactIdle = -1
	if err := off.Validate(); err != nil {
		t.Errorf("compaction off (CompactIdle < 0): %v", err)
	}
}
