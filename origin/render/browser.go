package render

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/chromedp"
)

// browser is one Chromium process.
type browser struct {
	allocCancel context.CancelFunc
	ctx         context.Context // the browser's root chromedp context
	cancel      context.CancelFunc
	pid         int      // the main process, leader of the browser's process group
	outside     []procID // its processes outside the group, seen at launch
	profile     string
	drained     chan struct{} // closed when retired and no render uses it
	closing     atomic.Bool   // close was called: an exit from now on is expected
	closeOnce   sync.Once

	tabs atomic.Int32 // its tabs: opening, busy, dirty or idle
	// connector is the process that held the last socket connecting to a
	// tab's egress session (the network service), when peer checks
	// processes: connectors yields it first.
	connector atomic.Pointer[procID]

	// Guarded by Engine.mu.
	renders     int  // renders started on this browser
	active      int  // claims on it: renders running now, Start or refill warming tabs
	retired     bool // no new renders; closed when active drops to 0
	drainClosed bool // drained is closed
	refilling   bool // refill is opening tabs on it
}

// features are the Chromium features every browser runs without.
//
// BackForwardCache, RenderDocument and PaintHolding: a tab never goes back,
// so keeping the rendered page alive in the back/forward cache when the tab
// is reset to its blank document is waste; a new frame host per document
// (RenderDocument) costs a frame, widget and compositor setup on every
// navigation; and holding the previous document's paint until the new one
// paints only delays the first frame. Together they cut a card's Chromium
// CPU by about a fifth (docs/render-performance.md); none changes a pixel.
const features = "Translate,BlinkGenPropertyTrees,MediaRouter,OptimizationHints,InterestFeedContentSuggestions," +
	"AutofillServerCommunication,BackForwardCache,RenderDocument,PaintHolding"

// allocatorOptions are the switches every browser starts with, on top of
// chromedp's defaults: Chromium's own sandbox (unless NoSandbox) as the
// engine's account, no crash reporting, no background traffic, no UDP that
// could bypass the egress proxy, hidden scrollbars.
// The allocator stores the browser's command in *launched as it starts it.
func (e *Engine) allocatorOptions(profile string, launched **exec.Cmd) []chromedp.ExecAllocatorOption {
	setup := browserCmd(e.account, profile)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(e.cfg.browserBinary()),
		chromedp.UserDataDir(profile),
		// chromedp adds --no-sandbox by itself when Pictor runs as root,
		// unless the flag is set: Chromium runs as e.account instead.
		chromedp.Flag("no-sandbox", e.cfg.NoSandbox),
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
			setup(cmd)
			*launched = cmd
		}),
		chromedp.NoInheritEnv,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("disable-crash-reporter", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("font-render-hinting", "none"),
		// Site isolation is off unless SiteIsolation (below).
		chromedp.Flag("disable-features", features),
		// chromedp's defaults turn the popup blocker off; a page's
		// window.open without a user gesture is blocked, as in a browser,
		// instead of leaving windows open in the tab's context. The
		// headless shell has no popup blocker: it refuses every new window
		// instead (window.open returns null, a target=_blank link stays).
		chromedp.Flag("disable-popup-blocking", false),
		chromedp.Flag("block-new-web-contents", true),
		// Nothing may leave except through a tab's egress session: a
		// browser-wide proxy that accepts no connection catches whatever
		// does not belong to a tab.
		chromedp.ProxyServer("http://127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.WindowSize(DefaultWidth, DefaultHeight),
	)
	if e.cfg.SiteIsolation {
		// The full browser isolates sites by default; the headless shell
		// only when asked.
		opts = append(opts, chromedp.Flag("site-per-process", true))
	} else {
		// Cross-site iframes stay in their page's renderer process. With
		// isolation on, each gets a process (and a DevTools target) of its
		// own, which interceptHeaders attaches to.
		opts = append(opts,
			chromedp.Flag("disable-features", features+",IsolateOrigins,site-per-process"),
			chromedp.Flag("disable-site-isolation-trials", true))
	}
	if e.cfg.BrowserOutput != nil {
		opts = append(opts, chromedp.CombinedOutput(e.cfg.BrowserOutput))
	}
	return opts
}

// startBrowser launches Chromium and waits until it answers, at most 30
// seconds, while ctx lasts and Stop has not given up on the engine.
func (e *Engine) startBrowser(ctx context.Context) (*browser, error) {
	start := time.Now()
	if err := prepareProfileRoot(e.profiles, e.account); err != nil {
		return nil, err
	}
	profile, err := os.MkdirTemp(e.profiles, "browser-")
	if err != nil {
		return nil, fmt.Errorf("%w: profile directory: %v", ErrBrowser, err)
	}
	if err := prepareProfile(profile, e.account); err != nil {
		os.RemoveAll(profile)
		return nil, fmt.Errorf("%w: profile directory: %v", ErrBrowser, err)
	}
	// Orphans of the browser come to this process, which reaps them when
	// the browser closes.
	adoptOrphans()
	var cmd *exec.Cmd // set during the launch, by chromedp.Do below
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), e.allocatorOptions(profile, &cmd)...)
	// The first Do binds the browser's life to its context, so the launch is
	// bounded by canceling the browser's own context, not a derived one: its
	// parent's, for chromedp's cancel function waits for the browser and may
	// be called once only (twice, it blocks for good when no browser came).
	pctx, abandon := context.WithCancel(allocCtx)
	bctx, cancel := chromedp.NewContext(pctx, chromedp.WithErrorf(chromeErrorf), chromedp.WithLogf(chromeLogf))
	lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
	defer lcancel()
	stopKill := context.AfterFunc(e.kill, lcancel)
	defer stopKill()
	stopLaunch := context.AfterFunc(lctx, abandon)
	if e.launching != nil {
		e.launching()
	}
	err = chromedp.Do(bctx)
	if !stopLaunch() && err == nil {
		err = fmt.Errorf("launch abandoned: %w", context.Cause(lctx))
	}
	pid := 0 // the main process, which leads the browser's process group
	if cmd != nil && cmd.Process != nil {
		pid = cmd.Process.Pid
	}
	if err != nil {
		cancel()
		allocCancel()
		endProcesses(profile, pid, nil)
		removeProfile(profile)
		return nil, fmt.Errorf("%w: start chromium: %v", ErrBrowser, err)
	}
	b := &browser{allocCancel: allocCancel, ctx: bctx, cancel: cancel, pid: pid, profile: profile, drained: make(chan struct{})}
	// The crashpad handlers, which the browser starts before it answers,
	// leave its group; once they exited their command line no longer names
	// the profile, and close would not know them.
	b.outside = outsideGroup(profile, pid)
	e.metrics.browserStarts.Inc()
	slog.InfoContext(ctx, "browser started", "pid", b.pid, "user", e.account.name, "sandbox", !e.cfg.NoSandbox,
		"duration_ms", time.Since(start).Milliseconds())
	return b, nil
}

// alive reports whether the browser still runs.
func (b *browser) alive() bool { return b.ctx.Err() == nil }

// drain closes drained once; the caller holds Engine.mu.
func (b *browser) drain() {
	if !b.drainClosed {
		b.drainClosed = true
		close(b.drained)
	}
}

// close stops the browser and returns once every process of it is gone, or
// browserExitWait passed, and its profile is removed. Concurrent and
// repeated calls return once it is done.
func (b *browser) close() {
	b.closeOnce.Do(func() {
		b.closing.Store(true)
		// Nothing of the profile is kept, so nothing is shut down gently:
		// every process of the browser is killed at once (its children
		// would otherwise take a while to notice the main one died) and
		// reaped; chromedp reaps the main process, and canceling the root
		// context lets go of it.
		if left := endProcesses(b.profile, b.pid, b.outside); len(left) > 0 {
			slog.Warn("browser processes still there after closing", "pid", b.pid, "left", left, "waited", browserExitWait)
		}
		b.cancel()
		b.allocCancel()
		if err := removeProfile(b.profile); err != nil {
			slog.Warn("remove browser profile", "dir", b.profile, "error", err)
		}
	})
}

// removeProfile removes a browser's profile, and the directory the full
// browser (not the headless shell, which makes none) keeps for its
// process singleton under its TMPDIR, which its profile's SingletonSocket
// link names: a browser killed at once, as close kills it, leaves that
// directory behind, one per browser ever closed.
func removeProfile(profile string) error {
	if target, err := os.Readlink(filepath.Join(profile, "SingletonSocket")); err == nil {
		dir := filepath.Dir(target)
		if filepath.Dir(dir) == filepath.Clean(os.TempDir()) && strings.HasPrefix(filepath.Base(dir), "org.chromium.Chromium.") {
			os.RemoveAll(dir)
		}
	}
	return os.RemoveAll(profile)
}

func chromeErrorf(format string, args ...any) {
	slog.Debug("chromedp", "detail", fmt.Sprintf(format, args...))
}

func chromeLogf(format string, args ...any) {
	slog.Debug("chromedp", "detail", fmt.Sprintf(format, args...))
}
