package render

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPageThatNeverYields: a page whose script never gives the main thread
// back (an endless loop as the page loads, once it has loaded, or during
// the capture) fails its render with ErrPageBusy once BusyLimit passes
// without an answer (during the capture: once the capture got no frame and
// the page does not answer either), not at the render's deadline (the
// caller here gives up at 25 s, the engine at 60 s); its renderer is gone,
// and the next render works.
func TestPageThatNeverYields(t *testing.T) {
	e := newEngine(t, func(c *Config) { c.Tabs = 1; c.BusyLimit = 4 * time.Second })
	for i, page := range []string{
		`<div style="width:100px;height:50px;background:red"></div><script>for (;;) {}</script>`,
		`<div style="width:100px;height:50px;background:red"></div><script>addEventListener("load", () => setTimeout(() => { for (;;) {} }, 0));</script>`,
		// Taller than the viewport: the capture resizes the view, and the
		// loop starts during the capture, which gets no frame.
		`<div style="width:100px;height:2000px;background:red"></div><script>addEventListener("resize", () => { for (;;) {} });</script>`,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
		_, err := e.Render(ctx, &Request{OrgID: "o", HTML: page, DeviceScale: 1, MaxWait: time.Second, MaxWidth: 16384, MaxHeight: 16384})
		cancel()
		if !errors.Is(err, ErrPageBusy) {
			t.Fatalf("page %d: render ended with %v, want ErrPageBusy", i, err)
		}
		// The renderer that spun (seconds of CPU; an idle or spare one has
		// a fraction of a second) goes with its discarded tab.
		for _, pid := range renderers(e.browserPIDs()) {
			if cpu, _ := processCPU(pid); cpu < 3*time.Second {
				continue
			}
			if err := waitExit(pid, 10*time.Second); err != nil {
				t.Fatalf("page %d: renderer %d: %v", i, pid, err)
			}
		}
		if c := renderBox(t, e, i, boxPage(`const ok = true;`)); c != boxGreen {
			t.Fatalf("render after page %d: box %v, want green", i, c)
		}
	}
}

// waitExit waits, at most d, for process pid to end.
func waitExit(pid int, d time.Duration) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(d.Milliseconds()))
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("still running after %v", d)
	}
	return nil
}
