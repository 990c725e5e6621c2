package baseline

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/load"
)

// chromiumArgs are the flags of a one-shot screenshot, as a naive service
// would run it.
func chromiumArgs(profile, out, page string) []string {
	return []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--hide-scrollbars",
		fmt.Sprintf("--window-size=%d,%d", card.Width, card.Height),
		fmt.Sprintf("--force-device-scale-factor=%d", card.Scale),
		"--screenshot=" + out, "file://" + page,
	}
}

// ChromiumScreenshot writes the card to card-N.html, runs one Chromium
// (the binary bin) on it with a fresh profile, as a naive service would,
// and returns the time from writing the page
// to reading the first byte of the screenshot, checked to be the card's
// size, and the CPU time Chromium used (its helpers included, as it waits
// for them). Everything it created is removed.
func ChromiumScreenshot(ctx context.Context, bin, workDir string, n int, html string) (latency, cpu time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	dir := filepath.Join(workDir, fmt.Sprintf("card-%d", n))
	defer os.RemoveAll(dir)
	profile := filepath.Join(dir, "profile")
	page := filepath.Join(dir, fmt.Sprintf("card-%d.html", n))
	out := filepath.Join(dir, "out.png")

	start := time.Now()
	if err := os.MkdirAll(profile, 0o700); err != nil {
		return 0, 0, err
	}
	if err := os.WriteFile(page, []byte(html), 0o600); err != nil {
		return 0, 0, err
	}
	cmd := exec.CommandContext(ctx, bin, chromiumArgs(profile, out, page)...)
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	// Its own process group, so that the browser's helpers can be ended
	// with it, by its id.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // helpers left behind, if any
	}
	if ps := cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}
	if err != nil {
		return 0, cpu, fmt.Errorf("chromium --screenshot: %w: %s", err, stderr.lastLine())
	}
	f, err := os.Open(out)
	if err != nil {
		return 0, cpu, fmt.Errorf("chromium --screenshot: %w: %s", err, stderr.lastLine())
	}
	defer f.Close()
	head := make([]byte, 24)
	if _, err := io.ReadFull(f, head[:1]); err != nil {
		return 0, cpu, fmt.Errorf("chromium --screenshot: read %s: %w", out, err)
	}
	latency = time.Since(start)
	if _, err := io.ReadFull(f, head[1:]); err != nil {
		return 0, cpu, fmt.Errorf("chromium --screenshot: read %s: %w", out, err)
	}
	if err := card.CheckPNG(head); err != nil {
		return 0, cpu, fmt.Errorf("chromium --screenshot: %w", err)
	}
	return latency, cpu, nil
}
