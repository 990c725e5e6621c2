package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/chromiumtest"
)

// patience bounds every wait of these tests for something that must happen.
const patience = 30 * time.Second

// gate is a loopback site whose /hold answers only once the test opens the
// gate. A held render's page fetches it and calls ScreenshotReady() when the
// fetch ends, so the render runs until the test lets it finish.
type gate struct {
	url  string
	seen chan struct{} // a value per request for /hold that arrived
	open chan struct{}
	once sync.Once
}

func newGate(t *testing.T) *gate {
	t.Helper()
	g := &gate{seen: make(chan struct{}, 64), open: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hold" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Cache-Control", "no-store")
		select {
		case g.seen <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		select {
		case <-g.open:
			io.WriteString(w, "ok")
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.release) // runs first: Close waits for held requests
	g.url = srv.URL + "/hold"
	return g
}

// release lets every held request, and every later one, through.
func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// waitSeen waits for a request to arrive at the gate.
func (g *gate) waitSeen(t *testing.T) {
	t.Helper()
	select {
	case <-g.seen:
	case <-time.After(patience):
		t.Fatal("no request reached the gate")
	}
}

// held is a render that lasts until the gate opens.
func (g *gate) held(org string) *Request {
	return &Request{OrgID: org, HTML: fmt.Sprintf(`<div style="width:40px;height:20px;background:#00f"></div>`+
		`<script>fetch(%q, {mode: "no-cors", cache: "no-store"}).finally(() => ScreenshotReady())</script>`, g.url),
		WhenReady: true, MaxWait: 20 * time.Second, MaxWidth: 16384, MaxHeight: 16384}
}

// quick is a render that finishes at once.
func quick(org string) *Request {
	return &Request{OrgID: org, HTML: `<div style="width:40px;height:20px;background:#0f0"></div>`,
		MaxWait: 5 * time.Second, MaxWidth: 16384, MaxHeight: 16384}
}

type outcomeOf struct {
	res *Result
	err error
}

// start runs a render in a goroutine.
func start(e *Engine, ctx context.Context, r *Request) <-chan outcomeOf {
	ch := make(chan outcomeOf, 1)
	go func() {
		res, err := e.Render(ctx, r)
		ch <- outcomeOf{res, err}
	}()
	return ch
}

// wait returns the outcome of a render started with start.
func wait(t *testing.T, ch <-chan outcomeOf) outcomeOf {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(patience):
		t.Fatal("the render did not return")
		return outcomeOf{}
	}
}

// mustRender renders r and fails the test on an error or an empty image.
func mustRender(t *testing.T, e *Engine, r *Request) {
	t.Helper()
	res, err := e.Render(context.Background(), r)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	decodePNG(t, res.Data)
}

// metric reads the value of a counter or gauge of reg.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var v float64
		for _, m := range mf.GetMetric() {
			v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		return v
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// eventually polls cond until it holds, for at most patience.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v", what, patience)
		}
		<-tick.C
	}
}

// quiesce returns once no render runs and every released tab is clean: it
// takes every slot, as each render holds one until it released its tab,
// then has the released tabs that wait for their reset reset now.
func quiesce(t *testing.T, e *Engine) {
	t.Helper()
	for range cap(e.slots) {
		select {
		case e.slots <- struct{}{}:
		case <-time.After(patience):
			t.Fatal("the engine never became idle")
		}
	}
	for range cap(e.slots) {
		<-e.slots
	}
	// The tabs of the renders that ended may still wait for their reset.
	e.mu.Lock()
	var cleaned []<-chan struct{}
	for _, d := range e.dirty {
		d.hurryLocked()
		cleaned = append(cleaned, d.cleaned)
	}
	e.mu.Unlock()
	for _, c := range cleaned {
		select {
		case <-c:
		case <-time.After(patience):
			t.Fatal("a tab's reset never ended")
		}
	}
}

// current returns the browser new renders go to.
func current(e *Engine) *browser {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.current
}

// leftOf returns the live processes of browser b (browserProcs): the
// headless shell's children do not name the profile, and once b's main
// process died they are found in its process group only.
func leftOf(t *testing.T, b *browser) []int {
	t.Helper()
	var pids []int
	for _, p := range browserProcs(t, b) {
		if !p.zombie {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// killAll SIGKILLs every process of a profile.
func killAll(t *testing.T, profile string) []int {
	t.Helper()
	pids := Processes(profile)
	if len(pids) == 0 {
		t.Fatalf("no process runs on %s", profile)
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return pids
}

// metered returns a configure func that gives the engine reg.
func metered(reg *prometheus.Registry, more func(*Config)) func(*Config) {
	return func(c *Config) {
		c.Registerer = reg
		if more != nil {
			more(c)
		}
	}
}

func TestPoolAndQueue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		tabs, queue int
	}{
		{name: "one tab, no queue: a second render is refused at once", tabs: 1, queue: 0},
		{name: "one tab, queue of one: the second waits and succeeds", tabs: 1, queue: 1},
		{name: "two tabs render at once, a third waits", tabs: 2, queue: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			e := newEngine(t, metered(reg, func(c *Config) { c.Tabs, c.Queue = tc.tabs, tc.queue }))
			g := newGate(t)
			ctx := context.Background()

			// Tabs held renders all reach the site: they run at once.
			var running []<-chan outcomeOf
			for i := range tc.tabs {
				running = append(running, start(e, ctx, g.held(fmt.Sprintf("org%d", i))))
				g.waitSeen(t)
			}
			var queued []<-chan outcomeOf
			for range tc.queue {
				queued = append(queued, start(e, ctx, quick("q")))
			}
			eventually(t, "the queue fills", func() bool { return metric(t, reg, "pictor_render_queued") == float64(tc.queue) })

			if _, err := e.Render(ctx, quick("late")); !errors.Is(err, ErrQueueFull) {
				t.Fatalf("render with every tab busy and the queue full: %v, want ErrQueueFull", err)
			}
			all := slices.Concat(running, queued)
			for _, ch := range all {
				select {
				case o := <-ch:
					t.Fatalf("a render ended while the gate was closed: %v", o.err)
				default:
				}
			}

			g.release()
			for _, ch := range all {
				if o := wait(t, ch); o.err != nil {
					t.Fatalf("render: %v", o.err)
				}
			}
			if got := metric(t, reg, "pictor_render_queued"); got != 0 {
				t.Fatalf("queued gauge %v after the queue emptied", got)
			}
		})
	}
}

func TestSequentialRendersNeedNoQueue(t *testing.T) {
	t.Parallel()
	// The slot stays taken while the tab is cleaned after Render returned;
	// that must not count against the queue.
	e := newEngine(t, func(c *Config) { c.Tabs, c.Queue = 1, 0 })
	for range 4 {
		mustRender(t, e, quick("o"))
	}
}

func TestInterruptedRenderLosesItsTab(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		timeout time.Duration // Config.Timeout: long enough to open a tab on a loaded machine
		cancel  bool          // the caller gives up, instead of the deadline passing
		want    error
		notErr  error
	}{
		{name: "the deadline passes", timeout: 5 * time.Second, want: ErrTimeout, notErr: context.Canceled},
		{name: "the caller cancels", timeout: time.Minute, cancel: true, want: context.Canceled, notErr: ErrTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			e := newEngine(t, metered(reg, func(c *Config) { c.Tabs, c.Timeout = 1, tc.timeout }))
			refilled := make(chan struct{}, 1)
			e.refilled = func() { refilled <- struct{}{} }
			g := newGate(t)
			opened := metric(t, reg, "pictor_render_tabs_opened_total")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := start(e, ctx, g.held("o"))
			if tc.cancel {
				g.waitSeen(t) // the render runs
				cancel()
			}
			o := wait(t, ch)
			if !errors.Is(o.err, tc.want) || errors.Is(o.err, tc.notErr) {
				t.Fatalf("render: %v, want %v and not %v", o.err, tc.want, tc.notErr)
			}

			// The interrupted tab is closed and replaced; the fresh one
			// serves the next render.
			waitRefill(t, refilled)
			mustRender(t, e, quick("o"))
			if got := metric(t, reg, "pictor_render_tabs_opened_total"); got != opened+1 {
				t.Fatalf("tabs opened: %v, want %v (one fresh tab)", got, opened+1)
			}
			quiesce(t, e)
			if got := metric(t, reg, "pictor_render_tabs_open"); got != 1 {
				t.Fatalf("tabs open: %v, want 1", got)
			}
		})
	}
}

func TestBrowserRecycledAfterRenders(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEngine(t, metered(reg, func(c *Config) { c.Tabs, c.RecycleAfter = 1, 2 }))
	first := current(e)
	for range 2 {
		mustRender(t, e, quick("o"))
	}
	firstPids := Processes(first.profile)
	if len(firstPids) < 2 || !slices.Contains(firstPids, first.pid) {
		t.Fatalf("Processes on the running browser's profile: %v, want its main process %d and its children", firstPids, first.pid)
	}
	if got := metric(t, reg, "pictor_render_browser_starts_total"); got != 1 {
		t.Fatalf("browser starts after RecycleAfter renders: %v, want 1", got)
	}
	mustRender(t, e, quick("o"))
	if got := metric(t, reg, "pictor_render_browser_starts_total"); got != 2 {
		t.Fatalf("browser starts after RecycleAfter+1 renders: %v, want 2", got)
	}
	second := current(e)
	if second == first {
		t.Fatal("the render after the quota ran on the old browser")
	}
	eventually(t, "the old browser's processes exit", func() bool { return len(leftOf(t, first)) == 0 })
	now := Processes(e.profiles)
	if len(now) == 0 {
		t.Fatal("no process of the new browser")
	}
	for _, pid := range now {
		if slices.Contains(firstPids, pid) {
			t.Fatalf("pid %d of the old browser still runs", pid)
		}
	}
	if _, err := os.Stat(first.profile); !os.IsNotExist(err) {
		t.Fatalf("old profile not removed: %v", err)
	}
	if got := metric(t, reg, "pictor_render_browser_deaths_total"); got != 0 {
		t.Fatalf("a recycled browser counted as a death: %v", got)
	}
}

func TestRetiredBrowserFinishesItsRenders(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEngine(t, metered(reg, func(c *Config) { c.Tabs, c.RecycleAfter = 2, 1 }))
	g := newGate(t)
	old := current(e)
	ch := start(e, context.Background(), g.held("o"))
	g.waitSeen(t)

	// The quota is used up: the next render launches a new browser while
	// the old one still serves the held render.
	mustRender(t, e, quick("o"))
	if current(e) == old || metric(t, reg, "pictor_render_browser_starts_total") != 2 {
		t.Fatal("no new browser for the render after the quota")
	}
	if len(leftOf(t, old)) == 0 {
		t.Fatal("the retired browser was closed under a running render")
	}
	g.release()
	if o := wait(t, ch); o.err != nil {
		t.Fatalf("render on the retired browser: %v", o.err)
	}
	eventually(t, "the retired browser closes once idle", func() bool { return len(leftOf(t, old)) == 0 })
}

func TestBrowserDeath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		inRender bool // kill while a render runs
		mainOnly bool // kill the main process only; its children must not outlive it
	}{
		{name: "between renders"},
		{name: "between renders, main process only", mainOnly: true},
		{name: "during a render", inRender: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			e := newEngine(t, metered(reg, func(c *Config) { c.Tabs = 1 }))
			g := newGate(t)
			mustRender(t, e, quick("o"))
			dead := current(e)

			var ch <-chan outcomeOf
			if tc.inRender {
				ch = start(e, context.Background(), g.held("o"))
				g.waitSeen(t)
			}
			if tc.mainOnly {
				syscall.Kill(dead.pid, syscall.SIGKILL)
			} else {
				killAll(t, dead.profile)
			}
			if tc.inRender {
				// The retry runs on a new browser and passes the open gate.
				g.release()
				if o := wait(t, ch); o.err != nil {
					t.Fatalf("render during the crash: %v", o.err)
				}
			} else {
				// Noticed without a render: the dead browser's tabs close.
				eventually(t, "the death is noticed", func() bool {
					return metric(t, reg, "pictor_render_browser_deaths_total") == 1 && metric(t, reg, "pictor_render_tabs_open") == 0
				})
			}
			mustRender(t, e, quick("o"))
			if current(e) == dead || metric(t, reg, "pictor_render_browser_starts_total") != 2 {
				t.Fatal("no new browser after the crash")
			}
			eventually(t, "no process of the dead browser remains", func() bool { return len(leftOf(t, dead)) == 0 })
			if got := metric(t, reg, "pictor_render_browser_deaths_total"); got != 1 {
				t.Fatalf("browser deaths: %v, want 1", got)
			}
		})
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		queue  bool // a render waits in the queue when Stop begins
		giveUp bool // Stop's context ends before the running render
	}{
		{name: "waits for the running render"},
		{name: "fails queued renders at once", queue: true},
		{name: "gives up when its context ends", giveUp: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			e := newEngine(t, metered(reg, func(c *Config) { c.Tabs, c.Queue = 1, 1 }))
			g := newGate(t)
			running := start(e, context.Background(), g.held("o"))
			g.waitSeen(t)
			b := current(e)
			var queued <-chan outcomeOf
			if tc.queue {
				queued = start(e, context.Background(), quick("o"))
				eventually(t, "the render is queued", func() bool { return metric(t, reg, "pictor_render_queued") == 1 })
			}

			stopCtx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stopped := make(chan error, 1)
			go func() { stopped <- e.Stop(stopCtx) }()
			select {
			case <-e.quit: // Stop began
			case <-time.After(patience):
				t.Fatal("Stop did not begin")
			}

			if _, err := e.Render(context.Background(), quick("o")); !errors.Is(err, ErrStopped) {
				t.Fatalf("render after Stop: %v, want ErrStopped", err)
			}
			if tc.queue {
				if o := wait(t, queued); !errors.Is(o.err, ErrStopped) {
					t.Fatalf("queued render: %v, want ErrStopped", o.err)
				}
			}
			if tc.giveUp {
				cancel()
			} else {
				g.release()
			}
			var err error
			select {
			case err = <-stopped:
			case <-time.After(patience):
				t.Fatal("Stop did not return")
			}
			o := wait(t, running)
			if tc.giveUp {
				if !errors.Is(err, context.Canceled) || o.err == nil {
					t.Fatalf("Stop: %v, running render: %v; want a canceled Stop and a failed render", err, o.err)
				}
			} else if err != nil || o.err != nil {
				t.Fatalf("Stop: %v, running render: %v; want both to succeed", err, o.err)
			}
			if left := append(Processes(e.profiles), leftOf(t, b)...); len(left) > 0 {
				t.Fatalf("chromium processes left when Stop returned: %v", left)
			}
		})
	}
}

func TestStopIdleWithEndedContext(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	mustRender(t, e, quick("o"))
	quiesce(t, e)
	b := current(e)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Nothing runs, so an ended context is no reason to fail.
	if err := e.Stop(ctx); err != nil {
		t.Fatalf("Stop of an idle engine with an ended context: %v", err)
	}
	if left := append(Processes(e.profiles), leftOf(t, b)...); len(left) > 0 {
		t.Fatalf("chromium processes left when Stop returned: %v", left)
	}
}

func TestIdleTabsBoundedAndPerOrganization(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEngine(t, metered(reg, func(c *Config) { c.Tabs = 1 }))
	for _, org := range []string{"a", "b", "c"} {
		mustRender(t, e, quick(org))
	}
	quiesce(t, e)
	if got := metric(t, reg, "pictor_render_tabs_open"); got != 1 {
		t.Fatalf("tabs open with one slot after three organizations: %v, want 1", got)
	}
	opened := metric(t, reg, "pictor_render_tabs_opened_total")
	mustRender(t, e, quick("c")) // c's tab is the idle one: reused
	if got := metric(t, reg, "pictor_render_tabs_opened_total"); got != opened {
		t.Fatalf("the organization's idle tab was not reused: %v tabs opened, want %v", got, opened)
	}
	mustRender(t, e, quick("a")) // a's tab was dropped; c's is never lent to a
	if got := metric(t, reg, "pictor_render_tabs_opened_total"); got != opened+1 {
		t.Fatalf("tabs opened: %v, want %v", got, opened+1)
	}
}

func TestTabWornOut(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEngine(t, metered(reg, func(c *Config) { c.Tabs, c.TabUses = 1, 2 }))
	refilled := make(chan struct{}, 4)
	e.refilled = func() { refilled <- struct{}{} }
	opened := metric(t, reg, "pictor_render_tabs_opened_total")
	for i := range 4 {
		mustRender(t, e, quick("o"))
		if i%2 == 1 {
			waitRefill(t, refilled) // the worn-out tab's replacement is open
		}
	}
	quiesce(t, e)
	// Start's fresh tab served two renders, its replacement two more, and
	// that one's replacement waits.
	if got := metric(t, reg, "pictor_render_tabs_opened_total"); got != opened+2 {
		t.Fatalf("tabs opened: %v, want %v", got, opened+2)
	}
	if got := metric(t, reg, "pictor_render_tabs_open"); got != 1 {
		t.Fatalf("tabs open: %v, want 1 (the worn-out tab is closed, its replacement open)", got)
	}
}

// TestRenderHammer runs many renders at once while the browser recycles and
// tabs wear out; run it with -race.
func TestRenderHammer(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEngine(t, metered(reg, func(c *Config) { c.Tabs, c.Queue, c.RecycleAfter, c.TabUses = 2, 2, 4, 2 }))
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 6 {
		wg.Go(func() {
			for j := range 2 {
				_, err := e.Render(context.Background(), quick(fmt.Sprintf("org%d", (i+j)%3)))
				if err != nil && !errors.Is(err, ErrQueueFull) {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("render: %v", err)
	}
	quiesce(t, e)
	if got := metric(t, reg, "pictor_render_tabs_open"); got > 2 {
		t.Fatalf("tabs open when idle: %v, want at most 2", got)
	}
	cur := current(e)
	eventually(t, "only the current browser runs", func() bool {
		all, mine := Processes(e.profiles), Processes(cur.profile)
		slices.Sort(all)
		slices.Sort(mine)
		return len(mine) > 0 && slices.Equal(all, mine)
	})
}

// waitRefill waits, at most 30 s, for the engine to say (Engine.refilled,
// which sends on refilled) that a refill ended.
func waitRefill(t *testing.T, refilled <-chan struct{}) {
	t.Helper()
	select {
	case <-refilled:
	case <-time.After(30 * time.Second):
		t.Fatal("no tab was opened in place of the closed one within 30 s")
	}
}

// A lazy engine launches Chromium for its first render. A render whose
// context ends during the launch abandons it, and the next render launches
// one: an abandoned launch once left chromedp waiting for good under the
// engine's launch lock, so no render could launch again. A render whose
// context is done before it needs a launch starts none.
func TestLazyLaunchAbandoned(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	launching, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := newEngine(t, metered(reg, func(c *Config) { c.Lazy = true }))
	// The first render's context ends as its launch begins.
	var launches atomic.Int32
	e.launching = func() {
		if launches.Add(1) == 1 {
			cancel()
		}
	}
	if n := metric(t, reg, "pictor_render_browser_starts_total"); n != 0 {
		t.Fatalf("a lazy engine launched %v browsers at Start", n)
	}
	if res := wait(t, start(e, launching, quick("o"))); res.err == nil {
		t.Fatal("a render whose context ended during the launch succeeded")
	}
	if n := launches.Load(); n != 1 {
		t.Fatalf("%d launches for the first render, want 1", n)
	}
	if res := wait(t, start(e, launching, quick("o"))); !errors.Is(res.err, context.Canceled) {
		t.Fatalf("a render with a done context: %v, want context.Canceled", res.err)
	}
	if n := launches.Load(); n != 1 {
		t.Fatalf("a render with a done context launched Chromium (%d launches)", n)
	}
	if res := wait(t, start(e, context.Background(), quick("o"))); res.err != nil {
		t.Fatalf("render after an abandoned launch: %v", res.err)
	} else {
		decodePNG(t, res.res.Data)
	}
	if n := metric(t, reg, "pictor_render_browser_starts_total"); n != 1 {
		t.Fatalf("%v browsers started, want 1", n)
	}
}

// The full browser (site isolation's binary, or --chromium chromium), not
// the headless shell, keeps a directory for its process singleton under
// TMPDIR, named by its profile's SingletonSocket link. Closing the browser
// kills it at once, which leaves that directory: it goes with the profile,
// and Start removes those of the profiles a crash left behind. A link that
// names a directory anywhere else is not followed.
func TestFullBrowserLeavesNoTempDir(t *testing.T) {
	t.Parallel()
	profiles := t.TempDir()
	full := func(c *Config) {
		c.Chromium = chromiumtest.Full
		c.ProfileDir = profiles
		c.Tabs = 1
	}
	e := newEngine(t, full)
	target, err := os.Readlink(filepath.Join(current(e).profile, "SingletonSocket"))
	if err != nil {
		t.Fatalf("the full browser names no singleton directory: %v", err)
	}
	singleton := filepath.Dir(target)
	if _, err := os.Stat(singleton); err != nil {
		t.Fatalf("the singleton directory of the running browser: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(singleton); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s after the browser closed: %v, want it gone", singleton, err)
	}

	// Profiles a crash left: one naming a singleton directory under TMPDIR,
	// one naming a directory of the same name elsewhere.
	stale, err := os.MkdirTemp(os.TempDir(), "org.chromium.Chromium.")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stale) })
	elsewhere := filepath.Join(t.TempDir(), "org.chromium.Chromium.x")
	if err := os.MkdirAll(e.profiles, 0o700); err != nil { // Stop removed it
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"browser-crashed": stale, "browser-odd": elsewhere} {
		profile := filepath.Join(e.profiles, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(profile, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(dir, "SingletonSocket"), filepath.Join(profile, "SingletonSocket")); err != nil {
			t.Fatal(err)
		}
	}
	newEngine(t, full, func(c *Config) { c.Lazy = true })
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the singleton directory of a crashed browser after Start: %v, want it gone", err)
	}
	if _, err := os.Stat(elsewhere); err != nil {
		t.Fatalf("a directory outside TMPDIR that a profile named: %v, want it kept", err)
	}
}
