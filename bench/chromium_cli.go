package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func chromiumCLIScenario() Scenario {
	return Scenario{
		Name: "chromium-cli",
		About: "the baseline of a naive service: a cold `chromium --headless --screenshot` process with a fresh " +
			"profile per card (same HTML, 1200×630 at scale 2), one at a time, then --cli-parallel at once",
		Run: runChromiumCLI,
	}
}

func runChromiumCLI(ctx context.Context, env *Env) ([]*Result, error) {
	cfg := env.Config
	bin, err := exec.LookPath(cfg.Chromium)
	if err != nil {
		return nil, fmt.Errorf("--chromium %q: %w", cfg.Chromium, err)
	}
	runID := rand.Text()[:8]
	var seq, cpu atomic.Int64
	op := func(ctx context.Context, _ int) (time.Duration, error) {
		n := int(seq.Add(1))
		lat, used, err := chromiumScreenshot(ctx, bin, env.WorkDir, n, CardDocument(CardHTML(n, fmt.Sprintf("%s-%06d", runID, n))))
		cpu.Add(int64(used))
		return lat, err
	}
	// One unmeasured screenshot brings Chromium's files into the page
	// cache: "cold" means a new process and profile per image, as a naive
	// service has, not a cold disk.
	w, err := Drive(ctx, "chromium-cli/warm-up", "image", Load{Clients: 1, Requests: 1}, env.Progress, op)
	if err != nil {
		return nil, fmt.Errorf("chromium-cli warm-up: %w", err)
	}
	if w.Errors > 0 {
		return nil, fmt.Errorf("chromium-cli warm-up: %s", w.FirstError)
	}
	var results []*Result
	for _, run := range []struct {
		name    string
		clients int
	}{
		{"chromium-cli/sequential", 1},
		{"chromium-cli/parallel", cfg.CLIParallel},
	} {
		before := cpu.Load()
		r, err := Drive(ctx, run.name, "image", Load{Clients: run.clients, Duration: cfg.Duration}, env.Progress, op)
		if r != nil {
			r.CPU = time.Duration(cpu.Load() - before)
			results = append(results, r)
		}
		if err != nil {
			return results, err
		}
	}
	return results, nil
}

// chromiumArgs are the flags of a one-shot screenshot, as a naive service
// would run it.
func chromiumArgs(profile, out, page string) []string {
	return []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--hide-scrollbars",
		fmt.Sprintf("--window-size=%d,%d", CardWidth, CardHeight),
		fmt.Sprintf("--force-device-scale-factor=%d", CardScale),
		"--screenshot=" + out, "file://" + page,
	}
}

// chromiumScreenshot writes the card to card-N.html, runs one Chromium
// on it with a fresh profile and returns the time from writing the page
// to reading the first byte of the screenshot, checked to be the card's
// size, and the CPU time Chromium used (its helpers included, as it waits
// for them). Everything it created is removed.
func chromiumScreenshot(ctx context.Context, bin, workDir string, n int, html string) (latency, cpu time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
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
	if err := checkCardPNG(head); err != nil {
		return 0, cpu, fmt.Errorf("chromium --screenshot: %w", err)
	}
	return latency, cpu, nil
}

// tailBuffer keeps the last 4 KB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

// lastLine returns the last non-empty line written.
func (t *tailBuffer) lastLine() string {
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
