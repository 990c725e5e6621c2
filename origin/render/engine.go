package render

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Engine renders requests on a pool of Chromium tabs.
type Engine struct {
	cfg     Config
	slots   chan struct{} // one per concurrent render
	waiting chan struct{} // one per queued render
	metrics metrics

	mu       sync.Mutex
	current  *browser
	idle     []*tab
	stopped  bool
	closing  sync.WaitGroup // retired browsers being closed
	cleaning sync.WaitGroup // tabs being reset after a render

	startMu sync.Mutex // serializes browser launches
}

type metrics struct {
	renders       *prometheus.CounterVec
	duration      prometheus.Histogram
	queueWait     prometheus.Histogram
	queued        prometheus.Gauge
	browserStarts prometheus.Counter
	tabsOpened    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) metrics {
	m := metrics{
		renders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_render_total", Help: "Renders by outcome.",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pictor_render_duration_seconds", Help: "Time a render spends in a tab.",
			Buckets: prometheus.ExponentialBuckets(0.025, 1.6, 16),
		}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "pictor_render_queue_wait_seconds", Help: "Time a render waits for a tab.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pictor_render_queued", Help: "Renders waiting for a tab.",
		}),
		browserStarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pictor_render_browser_starts_total", Help: "Chromium launches.",
		}),
		tabsOpened: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pictor_render_tabs_opened_total", Help: "Tabs (browser contexts) opened.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.renders, m.duration, m.queueWait, m.queued, m.browserStarts, m.tabsOpened)
	}
	return m
}

// New validates cfg and returns an engine; Start launches the browser.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Engine{
		cfg:     cfg,
		slots:   make(chan struct{}, cfg.Tabs),
		waiting: make(chan struct{}, cfg.Tabs+cfg.Queue),
		metrics: newMetrics(cfg.Registerer),
	}, nil
}

// Start kills what a crashed earlier run left in the profile directory,
// launches the browser and opens a warm tab per slot.
func (e *Engine) Start(ctx context.Context) error {
	killProcesses(e.cfg.ProfileDir)
	if entries, err := os.ReadDir(e.cfg.ProfileDir); err == nil {
		for _, d := range entries {
			os.RemoveAll(filepath.Join(e.cfg.ProfileDir, d.Name()))
		}
	}
	b, err := e.browser()
	if err != nil {
		return err
	}
	for range e.cfg.Tabs {
		t, err := e.newTab(ctx, b)
		if err != nil {
			return err
		}
		e.mu.Lock()
		e.idle = append(e.idle, t)
		e.mu.Unlock()
	}
	return nil
}

// Stop refuses new renders, waits (within ctx) for running ones and closes
// every browser.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	// Take every slot: running renders and their clean-up finish first.
	var err error
	for range cap(e.slots) {
		select {
		case e.slots <- struct{}{}:
		case <-ctx.Done():
			err = fmt.Errorf("stop render engine: %w", ctx.Err())
		}
		if err != nil {
			break
		}
	}
	e.cleaning.Wait()
	e.mu.Lock()
	idle, current := e.idle, e.current
	e.idle, e.current = nil, nil
	e.mu.Unlock()
	for _, t := range idle {
		t.close()
	}
	if current != nil {
		current.close()
	}
	e.closing.Wait()
	return err
}

// Render runs r and returns its output. It waits for a tab while the queue
// has room and fails at once with ErrQueueFull when it has none.
func (e *Engine) Render(ctx context.Context, r *Request) (*Result, error) {
	select {
	case e.waiting <- struct{}{}:
	default:
		e.metrics.renders.WithLabelValues("queue_full").Inc()
		return nil, ErrQueueFull
	}
	e.metrics.queued.Inc()
	queuedAt := time.Now()
	select {
	case e.slots <- struct{}{}:
		e.metrics.queued.Dec()
		<-e.waiting
	case <-ctx.Done():
		e.metrics.queued.Dec()
		<-e.waiting
		return nil, ctx.Err()
	}
	e.metrics.queueWait.Observe(time.Since(queuedAt).Seconds())

	start := time.Now()
	res, t, err := e.renderOnce(ctx, r)
	if errors.Is(err, ErrBrowser) && ctx.Err() == nil {
		// The browser or the tab failed under us: once more on a fresh one.
		slog.WarnContext(ctx, "render retried after a browser failure", "error", err)
		e.release(t, err)
		res, t, err = e.renderOnce(ctx, r)
	}
	e.metrics.duration.Observe(time.Since(start).Seconds())
	e.metrics.renders.WithLabelValues(outcome(err)).Inc()
	// The caller has its result; the tab is cleaned for its next render
	// before the slot frees, so the next render finds it warm.
	e.cleaning.Add(1)
	go func() {
		defer e.cleaning.Done()
		e.release(t, err)
		<-e.slots
	}()
	return res, err
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrUnreachable), errors.Is(err, ErrBlockedURL):
		return "target"
	case errors.Is(err, ErrBrowser):
		return "browser"
	}
	return "input"
}

// renderOnce renders on a tab and returns the tab, nil when none could be
// had, for release.
func (e *Engine) renderOnce(ctx context.Context, r *Request) (*Result, *tab, error) {
	t, err := e.acquire(ctx, r.OrgID)
	if err != nil {
		return nil, nil, err
	}
	// chromedp actions run on a context derived from the tab's; the caller's
	// context still ends the render.
	rctx, cancel := context.WithTimeout(t.ctx, e.cfg.Timeout)
	stop := context.AfterFunc(ctx, cancel)
	res, err := e.render(rctx, t, r)
	stop()
	cancel()
	return res, t, err
}

// browser returns the browser new renders use, launching or replacing it
// when it died or served its quota.
func (e *Engine) browser() (*browser, error) {
	e.startMu.Lock()
	defer e.startMu.Unlock()
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil, ErrStopped
	}
	b := e.current
	if b != nil && b.alive() && b.renders < e.cfg.RecycleAfter {
		e.mu.Unlock()
		return b, nil
	}
	if b != nil {
		e.retireLocked(b)
	}
	e.current = nil
	e.mu.Unlock()

	nb, err := e.startBrowser()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		go nb.close()
		return nil, ErrStopped
	}
	e.current = nb
	return nb, nil
}

// retireLocked stops giving b new renders and closes it once idle.
func (e *Engine) retireLocked(b *browser) {
	if b.retired {
		return
	}
	b.retired = true
	e.idle = slices.DeleteFunc(e.idle, func(t *tab) bool {
		if t.b == b {
			t.close()
			return true
		}
		return false
	})
	if b.active == 0 {
		e.closing.Add(1)
		go func() { defer e.closing.Done(); b.close() }()
	}
}

// acquire returns a tab for the organization: an idle one it used before,
// a fresh idle one, or a new one.
func (e *Engine) acquire(ctx context.Context, org string) (*tab, error) {
	b, err := e.browser()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	var t *tab
	pick := func(match func(*tab) bool) bool {
		for i, c := range e.idle {
			if c.b == b && match(c) {
				t = c
				e.idle = slices.Delete(e.idle, i, i+1)
				return true
			}
		}
		return false
	}
	if !pick(func(c *tab) bool { return c.org == org }) {
		pick(func(c *tab) bool { return c.org == "" })
	}
	b.renders++
	b.active++
	e.mu.Unlock()

	if t == nil {
		t, err = e.newTab(ctx, b)
		if err != nil {
			e.mu.Lock()
			e.doneOn(b)
			e.mu.Unlock()
			return nil, err
		}
	}
	t.org = org
	t.uses++
	return t, nil
}

// doneOn ends one render's claim on b.
func (e *Engine) doneOn(b *browser) {
	b.active--
	if b.retired && b.active == 0 {
		e.closing.Add(1)
		go func() { defer e.closing.Done(); b.close() }()
	}
}

// release returns a tab after a render: reused when healthy, closed when
// broken, worn out or on a retired browser. A fresh tab replaces a closed
// one so a warm tab is ready for the next organization.
func (e *Engine) release(t *tab, renderErr error) {
	if t == nil {
		return
	}
	healthy := !t.broken && t.b.alive() && t.uses < e.cfg.TabUses && !errors.Is(renderErr, ErrTimeout)
	if healthy {
		ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
		if err := t.reset(ctx); err != nil {
			healthy = false
		}
		cancel()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	b := t.b
	e.doneOn(b)
	if !healthy || b.retired || e.stopped {
		t.close()
		return
	}
	e.idle = append(e.idle, t)
	if len(e.idle) > e.cfg.Tabs+1 {
		// Keep the pool bounded: drop the least recently used tab.
		e.idle[0].close()
		e.idle = slices.Delete(e.idle, 0, 1)
	}
}
