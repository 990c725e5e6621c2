package bench

import (
	"errors"
	"fmt"
	"runtime"
	"time"
)

// Config configures a benchmark run.
type Config struct {
	// Pictor is the pictor binary to benchmark; the harness builds nothing.
	Pictor string
	// Chromium is the browser the CLI baseline runs.
	Chromium string
	// OutDir receives report.md, report.json, latency.svg and the servers' logs.
	OutDir string
	// Scenarios names the scenarios to run; empty runs all.
	Scenarios []string
	// Duration is the length of each measured run.
	Duration time.Duration
	// Warmup is how many renders precede the measured render runs.
	Warmup int
	// PoolSize is Pictor's render pool size, passed as serve's
	// --render-tabs (the CPU count by default); the pool-full run uses
	// twice as many clients.
	PoolSize int
	// CLIParallel is how many CLI screenshots run at once in the parallel
	// baseline run.
	CLIParallel int
	// StartTimeout bounds how long `pictor serve` may take to come up.
	StartTimeout time.Duration
	// EdgeClients is how many keep-alive connections the edge scenarios
	// (hot-image, the zipf scenarios) keep busy, on Pictor and nginx alike.
	EdgeClients int
	// Rounds is how many interleaved rounds a comparison with a baseline
	// is split into (Duration in total per side); the comparisons with
	// nginx run more when a round would last over edgeSliceMax.
	Rounds int
	// SoakRenders is how many renders the soak runs while it watches the
	// server's memory.
	SoakRenders int
	// ToolsDir caches what the harness installs itself: the pinned
	// puppeteer-core of the render-vs-page baseline.
	ToolsDir string
	// ClusterScript is deploy/cluster.sh, which the cluster scenario runs
	// (up, status, down) with PICTOR_BIN set to Pictor.
	ClusterScript string
}

// DefaultConfig returns the defaults of `make bench`.
func DefaultConfig() Config {
	return Config{
		Pictor:       "./bin/pictor",
		Chromium:     "chromium",
		OutDir:       "bench/out",
		Duration:     20 * time.Second,
		Warmup:       4,
		PoolSize:     runtime.NumCPU(),
		CLIParallel:  2,
		StartTimeout: time.Minute,
		EdgeClients:  32,
		Rounds:       4,
		SoakRenders:  1000,
		ToolsDir:     ".tools",

		ClusterScript: "deploy/cluster.sh",
	}
}

// Validate reports the first invalid setting, naming its flag.
func (c *Config) Validate() error {
	switch {
	case c.Pictor == "":
		return errors.New("--pictor must not be empty")
	case c.Chromium == "":
		return errors.New("--chromium must not be empty")
	case c.OutDir == "":
		return errors.New("--out must not be empty")
	case c.Duration < 100*time.Millisecond:
		return fmt.Errorf("--duration %v: want at least 100ms", c.Duration)
	case c.Warmup < 0:
		return fmt.Errorf("--warmup %d: must not be negative", c.Warmup)
	case c.PoolSize < 1 || c.PoolSize > 64:
		return fmt.Errorf("--pool-size %d: want 1 to 64", c.PoolSize)
	case c.CLIParallel < 1 || c.CLIParallel > 64:
		return fmt.Errorf("--cli-parallel %d: want 1 to 64", c.CLIParallel)
	case c.EdgeClients < 1 || c.EdgeClients > 4096:
		return fmt.Errorf("--edge-clients %d: want 1 to 4096", c.EdgeClients)
	case c.Rounds < 1 || c.Rounds > 100:
		return fmt.Errorf("--rounds %d: want 1 to 100", c.Rounds)
	case c.SoakRenders < 10 || c.SoakRenders > 1_000_000:
		return fmt.Errorf("--soak-renders %d: want 10 to 1000000", c.SoakRenders)
	case c.ToolsDir == "":
		return errors.New("--tools-dir must not be empty")
	case c.ClusterScript == "":
		return errors.New("--cluster-script must not be empty")
	case c.StartTimeout <= 0:
		return fmt.Errorf("--start-timeout %v: must be positive", c.StartTimeout)
	}
	_, err := Select(Scenarios(), c.Scenarios)
	return err
}
