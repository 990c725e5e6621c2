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
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Engine renders requests on a pool of Chromium tabs.
//
// A render is first admitted (Tabs+Queue renders at most, Tabs+⌈Queue/2⌉ of
// one organization: more answer ErrQueueFull at once), then waits for a slot
// (Tabs of them), handed out round-robin between the organizations waiting
// (see tabQueue). It stays admitted until Render returns, and keeps the slot
// until it let go of its tab, so at most Tabs renders use Chromium at once
// and at most Tabs+Queue callers are inside Render.
//
// Tabs: a tab that served a render is reset (see release) once no other
// render is loading its page, so that the reset does not slow down a
// navigation; until then it is dirty, and a render of its organization that
// finds no clean tab has it reset at once.
//
// Browsers: one is current, and a watcher goroutine per browser closes it
// (killing whatever is left of its processes): once no render uses it after
// it served RecycleAfter renders, or at once when it died; its renders then
// fail with ErrBrowser and are tried again on a new browser.
type Engine struct {
	cfg      Config
	account  account   // who Chromium runs as
	profiles string    // where the browsers' profiles are: cfg.ProfileDir, or ProfileRoot of it
	tabs     *tabQueue // admission and the slots' turns
	// lastActive is when a render last entered or left Render, in Unix
	// nanoseconds.
	lastActive atomic.Int64
	slots      chan struct{} // tabs.slots: a token per render using a tab, until the tab is clean
	quit       chan struct{} // closed when Stop begins: waiting renders give up
	kill       context.Context
	killNow    context.CancelFunc // aborts browser launches when Stop gives up waiting
	metrics    metrics

	mu       sync.Mutex
	current  *browser              // where new renders go; nil until a launch
	browsers map[*browser]struct{} // launched and not yet closed
	idle     []*tab                // clean tabs of current, least recently used first
	dirty    []*tab                // tabs waiting for their reset (resetLater)
	loading  int                   // renders between taking a tab and starting their capture
	quiet    chan struct{}         // closed and replaced when loading drops to 0
	busy     chan struct{}         // closed and replaced when loading rises from 0
	stopped  bool
	running  int           // renders, from admission until their tab is clean (or dropped)
	drained  chan struct{} // made by Stop while renders run, closed when running drops to 0
	// The wait groups only grow under mu while !stopped, so Stop may wait on
	// them once it has set stopped.
	launches sync.WaitGroup // browser launches
	watchers sync.WaitGroup // one watch goroutine per launched browser

	startMu sync.Mutex // serializes browser launches

	// dirtyFor is the longest a tab waits for its reset (resetDelay; tests
	// lengthen it), and resetStarted, when set, is told of each reset as it
	// starts with how many renders are loading: an observer, for tests.
	dirtyFor     time.Duration
	resetStarted func(t *tab, loading int)
	// refilled, when set, is told when a refill ended: an observer, for
	// tests.
	refilled func()
	// launching, when set, is told as a launch of Chromium begins: an
	// observer, for tests.
	launching func()

	guardOnce  sync.Once
	guard      sync.WaitGroup // guardMemory, once started
	memoryKill atomic.Int64   // when guardMemory last killed a renderer, Unix nanoseconds
}

type metrics struct {
	renders       *prometheus.CounterVec
	duration      prometheus.Histogram
	queueWait     prometheus.Histogram
	queued        prometheus.Gauge
	browserStarts prometheus.Counter
	browserDeaths prometheus.Counter
	tabsOpened    prometheus.Counter
	tabsOpen      prometheus.Gauge
	resetWaits    prometheus.Counter
	retries       prometheus.Counter
	stalls        prometheus.Counter
	frameWaits    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
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
		queued:        gauge("pictor_render_queued", "Renders waiting for a tab."),
		browserStarts: counter("pictor_render_browser_starts_total", "Chromium launches."),
		browserDeaths: counter("pictor_render_browser_deaths_total", "Browsers that exited without being asked to."),
		tabsOpened:    counter("pictor_render_tabs_opened_total", "Tabs (browser contexts) opened."),
		tabsOpen:      gauge("pictor_render_tabs_open", "Tabs open now, busy or idle."),
		resetWaits:    counter("pictor_render_reset_waits_total", "Renders that found no clean tab and waited for the reset of one their organization used."),
		retries:       counter("pictor_render_retries_total", "Renders tried once more on a fresh tab after the browser or the tab failed under them."),
		stalls:        counter("pictor_render_capture_stalls_total", fmt.Sprintf("Captures given up after waiting %v (and 1 s a megapixel) for a frame that never came.", shotTimeout)),
		frameWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_render_frame_waits_total", Help: "Cross-site frames (site isolation) a capture waited for to draw, by what each did.",
		}, []string{"outcome"}),
	}
	// Every outcome is exported from the start, at 0, so that rates and
	// alerts on one of them work before its first render.
	for _, o := range renderOutcomes {
		m.renders.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.renders, m.duration, m.queueWait, m.queued, m.browserStarts, m.browserDeaths, m.tabsOpened, m.tabsOpen, m.resetWaits, m.retries, m.stalls, m.frameWaits)
	}
	return m
}

// renderOutcomes are the outcome labels of pictor_render_total: outcome's
// and the two refusals of a full queue.
var renderOutcomes = []string{"ok", "canceled", "stopped", "timeout", "target", "browser", "input", "queue_full", "org_queue_full"}

// capacityCollectors export the engine's size (--render-tabs,
// --render-queue) and the tabs in use, for the queue's saturation.
func capacityCollectors(cfg Config, q *tabQueue) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pictor_render_tabs_busy", Help: "Render slots taken: renders in a tab, and tabs being reset for the next one (at most pictor_render_tabs_capacity).",
		}, func() float64 { return float64(len(q.slots)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pictor_render_tabs_capacity", Help: "Renders that run at once (--render-tabs).",
		}, func() float64 { return float64(cfg.Tabs) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pictor_render_queue_capacity", Help: "Renders that may wait for a tab (--render-queue); pictor_render_queued of them wait now, more are refused.",
		}, func() float64 { return float64(cfg.Queue) }),
	}
}

// New validates cfg and returns an engine; Start launches the browser.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	acct, err := resolveAccount(cfg.User, cfg.NoSandbox)
	if err != nil {
		return nil, err
	}
	profiles := cfg.ProfileDir
	if acct.other {
		profiles = ProfileRoot(cfg.ProfileDir)
	}
	kill, killNow := context.WithCancel(context.Background())
	quit := make(chan struct{})
	tabs := newTabQueue(cfg.Tabs, cfg.Queue, quit)
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(capacityCollectors(cfg, tabs)...)
	}
	return &Engine{
		cfg:      cfg,
		account:  acct,
		profiles: profiles,
		tabs:     tabs,
		slots:    tabs.slots,
		quit:     quit,
		kill:     kill,
		killNow:  killNow,
		metrics:  newMetrics(cfg.Registerer),
		browsers: map[*browser]struct{}{},
		quiet:    make(chan struct{}),
		busy:     make(chan struct{}),
		dirtyFor: resetDelay,
	}, nil
}

// Start kills what a crashed earlier run left in the profile directory,
// launches the browser and opens a warm tab per slot (with Lazy, the first
// render launches it).
func (e *Engine) Start(ctx context.Context) error {
	if left := endProcesses(e.profiles, 0, nil); len(left) > 0 {
		slog.WarnContext(ctx, "processes of an earlier run still there", "dir", e.profiles, "left", left)
	}
	if err := prepareProfileRoot(e.profiles, e.account); err != nil {
		return err
	}
	e.guardOnce.Do(func() {
		e.guard.Add(1)
		go e.guardMemory()
	})
	if entries, err := os.ReadDir(e.profiles); err == nil {
		for _, d := range entries {
			removeProfile(filepath.Join(e.profiles, d.Name()))
		}
	}
	if e.cfg.Lazy {
		return nil
	}
	b, err := e.claim(ctx, false)
	if err != nil {
		return err
	}
	return e.warm(ctx, b, e.cfg.Tabs)
}

// warm opens n tabs on b for the idle ones, as the least recently used,
// and ends the caller's claim on b. It stops at the first tab that fails
// to open, and returns that error; the tabs it opened are kept while b is
// current.
func (e *Engine) warm(ctx context.Context, b *browser, n int) error {
	var tabs []*tab
	var err error
	for range n {
		t, terr := e.newTab(ctx, b)
		if terr != nil {
			err = terr
			break
		}
		tabs = append(tabs, t)
	}
	var drop []*tab
	e.mu.Lock()
	if e.current == b && !e.stopped {
		e.idle = append(tabs, e.idle...)
		drop = e.trimIdleLocked()
	} else {
		drop = tabs
	}
	e.doneOn(b)
	e.mu.Unlock()
	closeTabs(drop)
	return err
}

// Stop refuses new renders, fails the queued ones with ErrStopped, waits
// (within ctx) for running ones and closes every browser. It returns once no
// Chromium process of the engine is left, not even one dead and not yet
// reaped (or after browserExitWait per browser), also when ctx ends first:
// then the renders still running fail. Stop may be called more than once, and after
// a failed or missing Start.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	if !e.stopped {
		e.stopped = true
		close(e.quit)
	}
	if e.running > 0 && e.drained == nil {
		e.drained = make(chan struct{})
	}
	drained := e.drained
	e.mu.Unlock()

	var err error
	if drained != nil {
		select {
		case <-drained:
		case <-ctx.Done():
			err = fmt.Errorf("stop render engine: %w", ctx.Err())
		}
	}
	e.killNow()
	e.launches.Wait()

	e.mu.Lock()
	idle := e.idle
	e.idle, e.current = nil, nil
	var browsers []*browser
	for b := range e.browsers {
		browsers = append(browsers, b)
	}
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, b := range browsers {
		wg.Go(b.close)
	}
	wg.Wait()
	closeTabs(idle) // quick once their browser is gone: only the egress sessions are left
	e.watchers.Wait()
	e.guard.Wait()
	if e.profiles != e.cfg.ProfileDir {
		os.Remove(e.profiles) // the directory of its own under os.TempDir(), once empty
	}
	return err
}

// Render runs r and returns its output. It waits for a tab, its turn coming
// round-robin between organizations, while the queue has room for it, and
// fails at once with ErrQueueFull when it has none. Config.Timeout
// bounds the render from the moment it has a slot; a render the browser fails
// under (ErrBrowser) is tried once more on a fresh tab within that deadline.
// When ctx ends first, the error wraps ctx.Err().
func (e *Engine) Render(ctx context.Context, r *Request) (*Result, error) {
	select {
	case <-e.quit:
		return nil, ErrStopped
	default:
	}
	if err := e.tabs.admit(r.OrgID); err != nil {
		label := "queue_full"
		if errors.Is(err, errOrgShare) {
			label = "org_queue_full"
		}
		e.metrics.renders.WithLabelValues(label).Inc()
		return nil, err
	}
	e.lastActive.Store(time.Now().UnixNano())
	defer func() {
		e.lastActive.Store(time.Now().UnixNano())
		e.tabs.leave(r.OrgID)
	}()
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil, ErrStopped
	}
	e.running++
	e.mu.Unlock()

	if err := e.waitSlot(ctx, r.OrgID); err != nil {
		e.done()
		e.metrics.renders.WithLabelValues(outcome(err)).Inc()
		return nil, err
	}

	start := time.Now()
	deadline := start.Add(e.cfg.Timeout)
	res, t, err := e.renderOnce(ctx, deadline, r)
	if errors.Is(err, ErrBrowser) && ctx.Err() == nil && time.Now().Before(deadline) {
		// The browser or the tab failed under us: once more on a fresh one.
		slog.WarnContext(ctx, "render retried after a browser failure", "error", err)
		e.metrics.retries.Inc()
		e.release(t)
		res, t, err = e.renderOnce(ctx, deadline, r)
	}
	e.metrics.duration.Observe(time.Since(start).Seconds())
	e.metrics.renders.WithLabelValues(outcome(err)).Inc()
	// The caller has its result; the tab is cleaned for its next render
	// before the slot frees, so the next render finds it warm.
	go func() {
		defer e.done()
		e.release(t)
		e.tabs.release()
	}()
	return res, err
}

// IdleFor reports how long no render has been running or waiting (0 while
// one is), so that background work (recompressing masters) can stay out of
// the renders' way.
func (e *Engine) IdleFor() time.Duration {
	if e.tabs.busy() {
		return 0
	}
	return time.Since(time.Unix(0, e.lastActive.Load()))
}

// done ends a render's count in running.
func (e *Engine) done() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running--
	if e.running == 0 && e.drained != nil {
		close(e.drained)
		e.drained = nil
	}
}

// waitSlot takes a slot for a render of org, waiting for its turn while ctx
// lasts and the engine runs.
func (e *Engine) waitSlot(ctx context.Context, org string) error {
	e.metrics.queued.Inc()
	defer e.metrics.queued.Dec()
	queuedAt := time.Now()
	if err := e.tabs.wait(ctx, org); err != nil {
		return err
	}
	e.metrics.queueWait.Observe(time.Since(queuedAt).Seconds())
	return nil
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case errors.Is(err, ErrStopped):
		return "stopped"
	case errors.Is(err, ErrTimeout):
		return "timeout"
	case errors.Is(err, ErrUnreachable), errors.Is(err, ErrBlockedURL):
		return "target"
	case errors.Is(err, ErrBrowser), errors.Is(err, ErrCrashed):
		return "browser"
	}
	return "input"
}

// renderOnce renders on a tab before deadline and returns the tab, nil when
// none could be had, for release. A tab that was interrupted (deadline,
// caller, browser failure) is marked broken, so it is never reused.
func (e *Engine) renderOnce(ctx context.Context, deadline time.Time, r *Request) (*Result, *tab, error) {
	actx, cancel := context.WithDeadline(ctx, deadline)
	t, err := e.acquire(actx, r.OrgID)
	cancel()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			err = fmt.Errorf("render abandoned: %w (%v)", ctx.Err(), err)
		case !time.Now().Before(deadline):
			err = fmt.Errorf("%w after %v: %v", ErrTimeout, e.cfg.Timeout, err)
		}
		return nil, nil, err
	}
	// chromedp actions run on a context derived from the tab's; the caller's
	// context still ends the render.
	rctx, rcancel := context.WithDeadline(t.ctx, deadline)
	stop := context.AfterFunc(ctx, rcancel)
	res, err := e.render(rctx, t, r)
	e.loaded(t)
	stop()
	interrupted := rctx.Err()
	rcancel()
	if err == nil {
		return res, t, nil
	}
	switch {
	case ctx.Err() != nil:
		t.broken = true
		err = fmt.Errorf("render abandoned: %w (%v)", ctx.Err(), err)
	case errors.Is(interrupted, context.DeadlineExceeded):
		t.broken = true
		if !errors.Is(err, ErrTimeout) {
			err = fmt.Errorf("%w after %v: %v", ErrTimeout, e.cfg.Timeout, err)
		}
	case interrupted != nil || !t.b.alive():
		// The tab's context ended: its browser died or it was closed.
		t.broken = true
		err = fmt.Errorf("%w: the tab went away: %v", ErrBrowser, err)
	case errors.Is(err, ErrTimeout), errors.Is(err, ErrBrowser), errors.Is(err, ErrCrashed), errors.Is(err, ErrPageMemory), errors.Is(err, ErrPageBusy):
		// The page may still be running, or its renderer is gone.
		t.broken = true
	}
	return nil, t, err
}

// claim returns the browser new renders use, launching one when there is
// none or the current one died or served RecycleAfter renders, with one
// claim on it that doneOn ends. A render claim counts toward RecycleAfter.
func (e *Engine) claim(ctx context.Context, render bool) (*browser, error) {
	if b, err := e.claimCurrent(render); b != nil || err != nil {
		return b, err
	}
	e.startMu.Lock()
	defer e.startMu.Unlock()
	// Another render may have launched one while this one waited.
	if b, err := e.claimCurrent(render); b != nil || err != nil {
		return b, err
	}
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil, ErrStopped
	}
	var drop []*tab
	if e.current != nil {
		drop = e.retireLocked(e.current)
	}
	e.launches.Add(1)
	e.mu.Unlock()
	defer e.launches.Done()
	closeTabs(drop)

	// A render whose caller is gone launches nothing: its launch would be
	// abandoned at once, and others would wait for it meanwhile.
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	b, err := e.startBrowser(ctx)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		b.close()
		return nil, ErrStopped
	}
	e.browsers[b] = struct{}{}
	e.watchers.Add(1)
	go e.watch(b)
	e.current = b
	b.active++
	if render {
		b.renders++
	}
	e.mu.Unlock()
	return b, nil
}

// claimCurrent claims the current browser when it can take a render; it
// returns nil, nil when a new one is needed.
func (e *Engine) claimCurrent(render bool) (*browser, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil, ErrStopped
	}
	b := e.current
	if b == nil || !b.alive() || (render && b.renders >= e.cfg.RecycleAfter) {
		return nil, nil
	}
	b.active++
	if render {
		b.renders++
	}
	return b, nil
}

// retireLocked stops giving b new renders and returns its idle tabs, for
// the caller to close once it let go of mu. Its watcher closes b once no
// render uses it.
func (e *Engine) retireLocked(b *browser) []*tab {
	if e.current == b {
		e.current = nil
	}
	if b.retired {
		return nil
	}
	b.retired = true
	for _, t := range e.dirty {
		if t.b == b {
			t.hurryLocked() // it is closed, not reset: no need to wait
		}
	}
	var drop []*tab
	e.idle = slices.DeleteFunc(e.idle, func(t *tab) bool {
		if t.b == b {
			drop = append(drop, t)
			return true
		}
		return false
	})
	if b.active == 0 {
		b.drain()
	}
	return drop
}

// doneOn ends one claim on b.
func (e *Engine) doneOn(b *browser) {
	b.active--
	if b.retired && b.active == 0 {
		b.drain()
	}
}

// watch waits until b dies, or is retired and no render uses it any more;
// then it closes b's idle tabs and b, and forgets it.
func (e *Engine) watch(b *browser) {
	defer e.watchers.Done()
	select {
	case <-b.ctx.Done():
		if !b.closing.Load() {
			e.metrics.browserDeaths.Inc()
			slog.Warn("browser exited", "pid", b.pid)
		}
	case <-b.drained:
	}
	e.mu.Lock()
	drop := e.retireLocked(b)
	e.mu.Unlock()
	closeTabs(drop)
	// A dead browser is closed at once, renders on it or not: they fail
	// with ErrBrowser, and the closing kills whatever is left of it.
	b.close()
	e.mu.Lock()
	delete(e.browsers, b)
	e.mu.Unlock()
}

// acquire returns a tab for the organization: an idle one it used before,
// a fresh idle one, one of its own whose reset it hurries and waits for, or
// a new one. The render is loading from then on (see loaded).
func (e *Engine) acquire(ctx context.Context, org string) (*tab, error) {
	b, err := e.claim(ctx, true)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	t := e.takeIdleLocked(b, org)
	var cleaned <-chan struct{}
	if t == nil {
		cleaned = e.hurryLocked(b, org)
	}
	e.mu.Unlock()
	if cleaned != nil {
		e.metrics.resetWaits.Inc()
		select {
		case <-cleaned:
		case <-ctx.Done():
		}
		e.mu.Lock()
		t = e.takeIdleLocked(b, org) // another render may have been quicker
		e.mu.Unlock()
	}
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
	e.refill(b)
	e.mu.Lock()
	t.loading = true
	e.loading++
	if e.loading == 1 {
		close(e.busy)
		e.busy = make(chan struct{})
	}
	e.mu.Unlock()
	return t, nil
}

// loaded ends the loading part of t's render: its navigation and page
// steps, which a reset in another tab slows down (it competes for the
// browser's main thread); a capture hardly minds one. The render calls it
// as its capture or print begins, and renderOnce once the render ended;
// repeated calls do nothing.
func (e *Engine) loaded(t *tab) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !t.loading {
		return
	}
	t.loading = false
	e.loading--
	if e.loading == 0 {
		close(e.quiet)
		e.quiet = make(chan struct{})
	}
}

// hurryLocked finds a dirty tab of b that served org and has its reset
// start at once; it returns a channel closed once that tab is idle, or
// dropped (nil when there is none).
func (e *Engine) hurryLocked(b *browser, org string) <-chan struct{} {
	for i := len(e.dirty) - 1; i >= 0; i-- {
		if t := e.dirty[i]; t.b == b && t.org == org {
			t.hurryLocked()
			return t.cleaned
		}
	}
	return nil
}

// takeIdleLocked removes and returns the most recently used idle tab of b
// that served org, else a fresh one, else nil. Tabs never cross
// organizations.
func (e *Engine) takeIdleLocked(b *browser, org string) *tab {
	for _, match := range []string{org, ""} {
		for i := len(e.idle) - 1; i >= 0; i-- {
			if t := e.idle[i]; t.b == b && t.org == match {
				e.idle = slices.Delete(e.idle, i, i+1)
				return t
			}
		}
	}
	return nil
}

// resetGrace is how long a dirty tab waits for a render to start loading
// in another tab before it is reset anyway, and resetDelay the longest it
// stays dirty: a page left running after its render uses the machine until
// its tab is reset.
const (
	resetGrace = 50 * time.Millisecond
	resetDelay = time.Second
)

// release takes back a tab after a render. One that can serve again is
// reset for its next render, cleaned and kept; one broken, worn out, or
// on a retired browser is closed. The reset runs later (resetLater), so
// the render's slot is free at once: at most Tabs tabs wait for theirs;
// one more is reset now.
func (e *Engine) release(t *tab) {
	if t == nil {
		return
	}
	e.mu.Lock()
	keep := e.reusableLocked(t)
	later := keep && len(e.dirty) < e.cfg.Tabs
	var drop []*tab
	if later {
		t.hurry, t.cleaned, t.hurried = make(chan struct{}), make(chan struct{}), false
		e.dirty = append(e.dirty, t)
		e.running++ // until the tab is clean: Stop waits for it
		// Dirty and idle tabs together stay within Tabs, as the idle ones
		// alone did before resets waited: a dirty tab still holds its page,
		// and the memory bound counts every open tab. The least recently
		// used idle tab goes.
		drop = e.trimIdleLocked()
	}
	e.mu.Unlock()
	closeTabs(drop)
	if later {
		go func() {
			defer e.done()
			e.resetLater(t)
		}()
		return
	}
	e.settle(t, keep)
}

// reusableLocked reports whether t may serve another render: not broken,
// not worn out, on a browser that takes renders, in an engine that runs.
func (e *Engine) reusableLocked(t *tab) bool {
	return !t.broken && t.uses < e.cfg.TabUses && !t.b.retired && t.b.alive() && !e.stopped
}

// resetLater resets a dirty tab once no other render is loading, so that
// the reset does not slow down a navigation: right after a render that
// began loading while t waited reaches its capture, or when none began
// within resetGrace (the browser is idle), or when a render of t's
// organization needs it (hurry), or after resetDelay, or as the engine
// stops or t's browser goes.
func (e *Engine) resetLater(t *tab) {
	grace := time.NewTimer(resetGrace)
	defer grace.Stop()
	limit := time.NewTimer(e.dirtyFor)
	defer limit.Stop()
	graceC := grace.C
	for waiting := true; waiting; {
		e.mu.Lock()
		var started, captured <-chan struct{}
		if e.loading == 0 {
			started = e.busy
		} else {
			captured, graceC = e.quiet, nil // the reset follows the loading render's capture
		}
		e.mu.Unlock()
		select {
		case <-started: // a render began loading: wait for its capture
		case <-captured:
			waiting = false
		case <-graceC:
			waiting = false
		case <-t.hurry:
			waiting = false
		case <-limit.C:
			waiting = false
		case <-e.quit:
			waiting = false
		case <-t.ctx.Done():
			waiting = false
		}
	}
	e.settle(t, true)
}

// settle resets t when keep, and returns it to the idle tabs when it can
// serve again, else closes it; it ends t's claim on its browser and its
// time as a dirty tab. Idle and dirty tabs together are at most Tabs,
// dropping the least recently used idle ones.
func (e *Engine) settle(t *tab, keep bool) {
	e.mu.Lock()
	keep = keep && e.reusableLocked(t)
	loading := e.loading
	e.mu.Unlock()
	if keep && e.resetStarted != nil {
		e.resetStarted(t, loading)
	}
	if keep {
		ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
		keep = t.reset(ctx) == nil
		cancel()
	}
	var drop []*tab
	e.mu.Lock()
	if i := slices.Index(e.dirty, t); i >= 0 {
		e.dirty = slices.Delete(e.dirty, i, i+1)
	}
	if keep && e.current == t.b && !e.stopped {
		e.idle = append(e.idle, t)
		drop = e.trimIdleLocked()
	} else {
		drop = append(drop, t)
	}
	e.doneOn(t.b)
	cleaned := t.cleaned // no longer dirty: nobody else finds it
	t.cleaned = nil
	e.mu.Unlock()
	closeTabs(drop)
	if cleaned != nil {
		close(cleaned)
	}
	if !keep {
		e.refill(t.b)
	}
}

// trimIdleLocked keeps idle and dirty tabs together within Tabs: it
// removes the least recently used idle tabs over that, and returns them
// for the caller to close once it let go of mu. A dirty tab still holds
// its page, and the memory bound counts every open tab.
func (e *Engine) trimIdleLocked() []*tab {
	n := min(len(e.idle)+len(e.dirty)-e.cfg.Tabs, len(e.idle))
	if n <= 0 {
		return nil
	}
	drop := slices.Clone(e.idle[:n])
	e.idle = slices.Delete(e.idle, 0, n)
	return drop
}

// refill opens tabs on b in the background until it has Tabs of them
// (opening, busy, dirty or idle), as Start does. Without it a tab closed
// after TabUses renders, or broken, and the tabs of a browser launched in
// place of a retired one, would come back only when a render finds none:
// a render that finds only a dirty tab of its organization waits for its
// reset instead (acquire), so a client rendering one image at a time would
// have waited for the previous render's reset every time from then on.
func (e *Engine) refill(b *browser) {
	e.mu.Lock()
	need := e.cfg.Tabs - int(b.tabs.Load())
	if need <= 0 || b.refilling || e.stopped || e.current != b || b.retired || !b.alive() {
		e.mu.Unlock()
		return
	}
	b.refilling = true
	b.active++
	e.running++ // Stop waits for it
	e.mu.Unlock()
	go func() {
		defer e.done()
		ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
		defer cancel()
		go func() {
			select {
			case <-e.quit:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := e.warm(ctx, b, need); err != nil {
			slog.WarnContext(ctx, "opening a tab in place of a closed one", "error", err)
		}
		e.mu.Lock()
		b.refilling = false
		e.mu.Unlock()
		if e.refilled != nil {
			e.refilled()
		}
	}()
}

// closeTabs closes tabs, each of which takes a round trip to the browser;
// never call it holding mu.
func closeTabs(tabs []*tab) {
	for _, t := range tabs {
		t.close()
	}
}
