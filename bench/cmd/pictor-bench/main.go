package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pictorhq/pictor/bench"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "pictor-bench:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := bench.DefaultConfig()
	fs := flag.NewFlagSet("pictor-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var scenarios string
	var list bool
	fs.StringVar(&cfg.Pictor, "pictor", cfg.Pictor, "pictor binary to benchmark (not built by the harness)")
	fs.StringVar(&cfg.Chromium, "chromium", cfg.Chromium, "Chromium binary of the chromium-cli baseline")
	fs.StringVar(&cfg.OutDir, "out", cfg.OutDir, "directory of report.md, report.json, latency.svg and the servers' logs")
	fs.StringVar(&scenarios, "scenarios", "", "comma-separated scenarios to run (default all; see --list)")
	fs.BoolVar(&list, "list", false, "list the scenarios and exit")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "length of each measured run")
	fs.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured renders before the render runs")
	fs.IntVar(&cfg.PoolSize, "pool-size", cfg.PoolSize, "Pictor's render pool size (serve --render-tabs); the pool-full run uses twice as many clients")
	fs.IntVar(&cfg.CLIParallel, "cli-parallel", cfg.CLIParallel, "concurrent Chromium processes in the parallel CLI run")
	fs.IntVar(&cfg.EdgeClients, "edge-clients", cfg.EdgeClients, "keep-alive connections of the hot-image and zipf runs (Pictor and nginx alike)")
	fs.IntVar(&cfg.SoakRenders, "soak-renders", cfg.SoakRenders, "renders of the soak scenario, which watches the server's memory")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "interleaved rounds a comparison with a baseline is split into (--duration in total per side); the comparisons with nginx run more, so that none lasts over 2s (up to 100 rounds)")
	fs.StringVar(&cfg.ToolsDir, "tools-dir", cfg.ToolsDir, "cache of what the harness installs (render-vs-page's pinned puppeteer-core, with npm ci)")
	fs.StringVar(&cfg.ClusterScript, "cluster-script", cfg.ClusterScript, "the script that brings the cluster scenario's cluster up and down, run with PICTOR_BIN set to --pictor")
	fs.DurationVar(&cfg.StartTimeout, "start-timeout", cfg.StartTimeout, "how long pictor serve may take to start")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if list {
		for _, s := range bench.Scenarios() {
			fmt.Fprintf(stdout, "%-14s %s\n", s.Name, s.About)
		}
		return nil
	}
	for _, s := range strings.Split(scenarios, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Scenarios = append(cfg.Scenarios, s)
		}
	}

	var progress *load.Progress
	if f, ok := stderr.(*os.File); ok {
		progress = load.NewProgress(f, load.IsTerminal(f))
	} else {
		progress = load.NewProgress(stderr, false)
	}
	rep, runErr := bench.Run(ctx, cfg, progress)
	if rep == nil {
		return runErr
	}
	md := rep.Markdown()
	fmt.Fprint(stdout, "\n"+md)
	if err := rep.Write(cfg.OutDir); err != nil {
		return errors.Join(runErr, err)
	}
	progress.Notef("report: %s, chart: %s", filepath.Join(cfg.OutDir, report.MarkdownFile), filepath.Join(cfg.OutDir, report.ChartFile))
	if runErr != nil {
		return runErr
	}
	if len(rep.Failures) > 0 {
		return fmt.Errorf("%d scenario failure(s); see the report", len(rep.Failures))
	}
	return nil
}
