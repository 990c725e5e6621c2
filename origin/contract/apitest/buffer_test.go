package apitest

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestBufferWait: Wait returns at the write that makes match hold, and
// with ctx's error when none does.
func TestBufferWait(t *testing.T) {
	var b Buffer
	done := make(chan error, 1)
	go func() {
		done <- b.Wait(context.Background(), func(text string) bool { return strings.Contains(text, "ready") })
	}()
	b.Write([]byte("starting\n"))
	b.Write([]byte("ready\n"))
	if err := <-done; err != nil {
		t.Fatalf("Wait after the matching write: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		done <- b.Wait(ctx, func(text string) bool { return strings.Contains(text, "never") })
	}()
	b.Write([]byte("still not\n"))
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with no matching write: %v, want context.Canceled", err)
	}
}
