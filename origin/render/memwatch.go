package render

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/chromedp"
)

// memoryCheckEvery is how often guardMemory looks: a page filling memory
// as fast as it can gains a few hundred megabytes between two looks.
const memoryCheckEvery = 100 * time.Millisecond

// guardMemory kills every renderer process whose resident memory passes
// RendererMemory, until Stop. Neither V8's heap limit nor the kernel stop a
// page that allocates typed arrays: one such page took 17 GB before its
// allocations failed. The render on the killed renderer ends at once with
// ErrPageMemory (endOnCrash watches for the crash). Between renders the tabs
// are reset to a blank document and nothing grows, so an idle engine does not
// scan /proc.
func (e *Engine) guardMemory() {
	defer e.guard.Done()
	tick := time.NewTicker(memoryCheckEvery)
	defer tick.Stop()
	w := rendererWatch{every: rereadEvery}
	for {
		select {
		case <-e.quit:
			return
		case <-tick.C:
		}
		if e.IdleFor() > 2*memoryCheckEvery {
			continue
		}
		for _, pid := range w.renderers(e.browserPIDs()) {
			if residentBytes(pid) > e.cfg.RendererMemory {
				e.memoryKill.Store(time.Now().UnixNano())
				syscall.Kill(pid, syscall.SIGKILL)
				slog.Warn("renderer killed: a page used too much memory", "pid", pid, "limit_bytes", e.cfg.RendererMemory)
			}
		}
	}
}

// browserPIDs returns the main processes of the engine's browsers.
func (e *Engine) browserPIDs() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	pids := make([]int, 0, len(e.browsers))
	for b := range e.browsers {
		pids = append(pids, b.pid)
	}
	return pids
}

// crashCause says why a tab's renderer died: the memory guard killed a
// renderer moments ago, or it crashed by itself.
func (e *Engine) crashCause() error {
	if time.Since(time.Unix(0, e.memoryKill.Load())) < 5*time.Second {
		return fmt.Errorf("%w (%d MiB)", ErrPageMemory, e.cfg.RendererMemory>>20)
	}
	return ErrCrashed
}

// endOnCrash ends the render of ctx through cancel, with crashCause, once
// its renderer dies: one the memory guard killed, or that crashed, answers
// nothing more, and the render would otherwise wait for its deadline.
func (e *Engine) endOnCrash(ctx context.Context, cancel context.CancelCauseFunc) {
	crashes := chromedp.Events(ctx, inspector.TargetCrashed)
	go func() {
		for _, err := range crashes {
			if err == nil {
				cancel(e.crashCause())
			}
			return
		}
	}()
}

// residentBytes returns a process's resident memory, 0 when it is gone.
func residentBytes(pid int) int64 {
	statm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "statm"))
	if err != nil {
		return 0
	}
	f := bytes.Fields(statm)
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return pages * int64(os.Getpagesize())
}
