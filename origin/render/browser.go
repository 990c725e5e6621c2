package render

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
)

// browser is one Chromium process.
type browser struct {
	allocCancel context.CancelFunc
	ctx         context.Context // the browser's root chromedp context
	cancel      context.CancelFunc
	pid         int
	profile     string

	// Guarded by Engine.mu.
	renders int  // renders started on this browser
	active  int  // renders running now
	retired bool // no new renders; closed when active drops to 0
}

// chromiumFlags are the switches every browser starts with, on top of
// chromedp's defaults: headless as root, no background traffic, no UDP that
// could bypass the egress proxy, hidden scrollbars.
func (e *Engine) allocatorOptions(profile string) []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(e.cfg.Chromium),
		chromedp.UserDataDir(profile),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
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
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,MediaRouter,OptimizationHints,InterestFeedContentSuggestions,AutofillServerCommunication"),
		// Nothing may leave except through a tab's egress session: a
		// browser-wide proxy that accepts no connection catches whatever
		// does not belong to a tab.
		chromedp.ProxyServer("http://127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.WindowSize(DefaultWidth, DefaultHeight),
	)
	if e.cfg.BrowserOutput != nil {
		opts = append(opts, chromedp.CombinedOutput(e.cfg.BrowserOutput))
	}
	return opts
}

// startBrowser launches Chromium and waits until it answers.
func (e *Engine) startBrowser() (*browser, error) {
	start := time.Now()
	if err := os.MkdirAll(e.cfg.ProfileDir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: profile directory: %v", ErrBrowser, err)
	}
	profile, err := os.MkdirTemp(e.cfg.ProfileDir, "browser-")
	if err != nil {
		return nil, fmt.Errorf("%w: profile directory: %v", ErrBrowser, err)
	}
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), e.allocatorOptions(profile)...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(chromeErrorf), chromedp.WithLogf(chromeLogf))
	// The first Do binds the browser's life to its context, so the launch is
	// bounded by a timer on the browser's own context, not a derived one.
	watchdog := time.AfterFunc(30*time.Second, cancel)
	err = chromedp.Do(ctx)
	if !watchdog.Stop() && err == nil {
		err = errors.New("launch timed out")
	}
	if err != nil {
		cancel()
		allocCancel()
		killProcesses(profile)
		os.RemoveAll(profile)
		return nil, fmt.Errorf("%w: start chromium: %v", ErrBrowser, err)
	}
	b := &browser{allocCancel: allocCancel, ctx: ctx, cancel: cancel, profile: profile}
	if c := chromedp.FromContext(ctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		b.pid = c.Browser.Process().Pid
	}
	e.metrics.browserStarts.Inc()
	slog.Info("browser started", "pid", b.pid, "duration_ms", time.Since(start).Milliseconds())
	return b, nil
}

// alive reports whether the browser still runs.
func (b *browser) alive() bool { return b.ctx.Err() == nil }

// close stops the browser, kills whatever process of it survives and
// removes its profile.
func (b *browser) close() {
	b.cancel()
	b.allocCancel()
	if b.pid != 0 {
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(b.pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	killProcesses(b.profile)
	if err := os.RemoveAll(b.profile); err != nil {
		slog.Warn("remove browser profile", "dir", b.profile, "error", err)
	}
}

func chromeErrorf(format string, args ...any) {
	slog.Debug("chromedp", "detail", fmt.Sprintf(format, args...))
}

func chromeLogf(format string, args ...any) {
	slog.Debug("chromedp", "detail", fmt.Sprintf(format, args...))
}
