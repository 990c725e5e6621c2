package chromiumtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Full is Debian's chromium, the whole browser; HeadlessShell its headless
// shell, the binary the renders use (render.DefaultChromium).
const (
	Full          = "/usr/bin/chromium"
	HeadlessShell = "/usr/lib/chromium/chromium-headless-shell"
)

// Path is the browser binary: $PICTOR_CHROMIUM, else the headless shell.
func Path() string {
	if p := os.Getenv("PICTOR_CHROMIUM"); p != "" {
		return p
	}
	return HeadlessShell
}

// NewTab starts headless Chromium for one test and returns a tab; the
// browser stops when the test ends. A missing browser fails the test: `make
// test` installs it.
func NewTab(t testing.TB, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	if _, err := os.Stat(Path()); err != nil {
		t.Fatalf("chromium: %v (make test installs it)", err)
	}
	dir := t.TempDir() // removed after the browser exited: cleanups run last-in first-out
	// The full browser keeps a directory for its process singleton under
	// TMPDIR, left behind when it is killed at the test's end: a short
	// one of the test's own (a socket's path holds at most 107 bytes).
	tmp, err := os.MkdirTemp("", "chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(dir),
		chromedp.Env("TMPDIR="+tmp),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	allocCtx, allocCancel := chromedp.NewExecAllocator(ctx, append(opts, extra...)...)
	t.Cleanup(allocCancel)
	tab, tabCancel := chromedp.NewContext(allocCtx)
	t.Cleanup(tabCancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return tab
}
