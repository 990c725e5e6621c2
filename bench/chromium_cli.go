package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/bench/baseline"
	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/load"
)

func chromiumCLIScenario() Scenario {
	return Scenario{
		Name: "chromium-cli",
		About: "the baseline of a naive service: a cold `chromium --headless --screenshot` process with a fresh " +
			"profile per card (same HTML, 1200×630 at scale 2), one at a time, then --cli-parallel at once",
		Run: runChromiumCLI,
	}
}

func runChromiumCLI(ctx context.Context, env *Env) ([]*load.Result, error) {
	cfg := env.Config
	bin, err := exec.LookPath(cfg.Chromium)
	if err != nil {
		return nil, fmt.Errorf("--chromium %q: %w", cfg.Chromium, err)
	}
	runID := rand.Text()[:8]
	var seq, cpu atomic.Int64
	op := func(ctx context.Context, _ int) (time.Duration, error) {
		n := int(seq.Add(1))
		lat, used, err := baseline.ChromiumScreenshot(ctx, bin, env.WorkDir, n, card.Document(card.HTML(n, fmt.Sprintf("%s-%06d", runID, n))))
		cpu.Add(int64(used))
		return lat, err
	}
	// One unmeasured screenshot brings Chromium's files into the page
	// cache: "cold" means a new process and profile per image, as a naive
	// service has, not a cold disk.
	w, err := load.Drive(ctx, "chromium-cli/warm-up", "image", load.Load{Clients: 1, Requests: 1}, env.Progress, op)
	if err != nil {
		return nil, fmt.Errorf("chromium-cli warm-up: %w", err)
	}
	if w.Errors > 0 {
		return nil, fmt.Errorf("chromium-cli warm-up: %s", w.FirstError)
	}
	var results []*load.Result
	for _, run := range []struct {
		name    string
		clients int
	}{
		{"chromium-cli/sequential", 1},
		{"chromium-cli/parallel", cfg.CLIParallel},
	} {
		before := cpu.Load()
		r, err := load.Drive(ctx, run.name, "image", load.Load{Clients: run.clients, Duration: cfg.Duration}, env.Progress, op)
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
