package load

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Progress shows the run in progress on one line of a terminal, redrawn
// four times a second: requests done, errors, the current and average
// rate, elapsed time. On anything else (a log, CI) it writes a line every
// few seconds instead. A nil *Progress shows nothing.
type Progress struct {
	w        io.Writer
	tty      bool
	interval time.Duration

	mu   sync.Mutex // serializes writes to w
	stop chan struct{}
	done chan struct{}
}

// rateWindow is the span over which the current rate is measured.
const rateWindow = 2 * time.Second

// NewProgress returns a Progress writing to w, redrawing one line in
// place when tty is set.
func NewProgress(w io.Writer, tty bool) *Progress {
	p := &Progress{w: w, tty: tty, interval: 5 * time.Second}
	if tty {
		p.interval = 250 * time.Millisecond
	}
	return p
}

// IsTerminal reports whether f is a character device, such as a terminal.
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Notef prints a message on a line of its own.
func (p *Progress) Notef(format string, args ...any) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}

// begin starts showing a run; done and errs are its live counters.
func (p *Progress) begin(label string, total time.Duration, done, errs *atomic.Int64) {
	if p == nil {
		return
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	start := time.Now()
	type snap struct {
		at time.Time
		n  int64
	}
	go func() {
		defer close(p.done)
		hist := []snap{{start, 0}}
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			final := false
			select {
			case <-t.C:
			case <-p.stop:
				final = true
			}
			now, n := time.Now(), done.Load()
			hist = append(hist, snap{now, n})
			for len(hist) > 2 && now.Sub(hist[1].at) >= rateWindow {
				hist = hist[1:]
			}
			cur := 0.0
			if dt := now.Sub(hist[0].at).Seconds(); dt > 0 {
				cur = float64(n-hist[0].n) / dt
			}
			line := progressLine(label, n, errs.Load(), cur, now.Sub(start), total)
			p.mu.Lock()
			switch {
			case p.tty && final:
				fmt.Fprintf(p.w, "\r\033[K%s\n", line)
			case p.tty:
				fmt.Fprintf(p.w, "\r\033[K%s", line)
			default:
				fmt.Fprintln(p.w, line)
			}
			p.mu.Unlock()
			if final {
				return
			}
		}
	}()
}

// end stops showing the current run, after a last line.
func (p *Progress) end() {
	if p == nil || p.stop == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.stop = nil
}

// progressLine formats one progress line. total 0 means no time limit.
func progressLine(label string, done, errs int64, cur float64, elapsed, total time.Duration) string {
	avg := 0.0
	if elapsed > 0 {
		avg = float64(done) / elapsed.Seconds()
	}
	limit := ""
	if total > 0 {
		limit = "/" + total.Round(time.Second).String()
	}
	return fmt.Sprintf("%s: %d done, %d errors, %s/s now, %s/s avg, %s%s",
		label, done, errs, FormatRate(cur), FormatRate(avg), elapsed.Round(100*time.Millisecond), limit)
}
