package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/pictor"
	"github.com/pictorhq/pictor/bench/report"
)

// PictorLogFile receives the server's output, inside the output directory.
const PictorLogFile = "pictor.log"

// Run runs the selected scenarios one after the other and returns their
// report. `pictor serve` is started before the first scenario that needs
// it and stopped (SIGTERM) as soon as no later one does, so baselines run
// on a quiet machine. A scenario that fails is recorded in the report and
// the others still run. When ctx ends, Run stops and returns the report
// so far with ctx's error.
func Run(ctx context.Context, cfg Config, progress *load.Progress) (*report.Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	scenarios, err := Select(Scenarios(), cfg.Scenarios)
	if err != nil {
		return nil, err
	}
	needs := slices.ContainsFunc(scenarios, func(s Scenario) bool { return s.NeedsPictor })
	if needs {
		if _, err := os.Stat(cfg.Pictor); err != nil {
			return nil, fmt.Errorf("--pictor %s: %w (build it first: make build)", cfg.Pictor, err)
		}
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("--out %s: %w", cfg.OutDir, err)
	}
	about := make([]report.Scenario, len(scenarios))
	for i, s := range scenarios {
		about[i] = report.Scenario{Name: s.Name, About: s.About}
	}
	rep := &report.Report{Meta: report.Meta{
		Started:   time.Now(),
		Host:      hostDescription(),
		CPUs:      runtime.NumCPU(),
		LoadAvg:   loadAverage(),
		Chromium:  firstLine(ctx, cfg.Chromium, "--version"),
		Duration:  cfg.Duration,
		PoolSize:  cfg.PoolSize,
		Scenarios: about,
	}, Comparisons: Comparisons()}
	if needs {
		rep.Meta.Pictor = firstLine(ctx, cfg.Pictor, "version")
	}

	srv := &server{cfg: &cfg, progress: progress, rep: rep}
	if needs {
		if srv.log, err = os.Create(filepath.Join(cfg.OutDir, PictorLogFile)); err != nil {
			return nil, fmt.Errorf("--out %s: %w", cfg.OutDir, err)
		}
		defer srv.log.Close()
	}
	defer srv.stop() // before the log closes
	for i, s := range scenarios {
		if ctx.Err() != nil {
			break
		}
		if !slices.ContainsFunc(scenarios[i:], func(s Scenario) bool { return s.NeedsPictor }) {
			srv.stop()
		}
		env := &Env{Config: &cfg, Progress: progress}
		if s.NeedsPictor {
			if env.Pictor, err = srv.ensure(ctx, s.ServeFlags, s.OwnServer); err != nil {
				rep.Failures = append(rep.Failures, fmt.Sprintf("%s: not run: %v", s.Name, err))
				continue
			}
		}
		if env.WorkDir, err = os.MkdirTemp("", "pictor-bench-"+s.Name+"-*"); err != nil {
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s: not run: %v", s.Name, err))
			continue
		}
		progress.Notef("scenario %s", s.Name)
		results, err := s.Run(ctx, env)
		os.RemoveAll(env.WorkDir)
		rep.Results = append(rep.Results, results...)
		if err != nil {
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s: %v", s.Name, err))
		}
	}
	srv.stop()
	if err := ctx.Err(); err != nil {
		rep.Failures = append(rep.Failures, fmt.Sprintf("run interrupted (%v): the last run is partial, later ones missing", err))
	}
	rep.Checks = Evaluate(Checks(), rep.Results)
	return rep, ctx.Err()
}

// server starts `pictor serve` when a scenario first needs it and stops
// it when asked, or when a scenario needs other serve flags or a server of
// its own; a failed start is not retried with the same flags.
type server struct {
	cfg      *Config
	progress *load.Progress
	rep      *report.Report
	log      *os.File
	running  *pictor.Server
	flags    []string // the scenario flags running (or failing) has
	own      bool     // running is a scenario's own (Scenario.OwnServer)
	startErr error
}

// shares reports whether a scenario with flags, wanting a server of its
// own or not, runs on the server already started (or failed).
func (s *server) shares(flags []string, own bool) bool {
	return (s.running != nil || s.startErr != nil) && !own && !s.own && slices.Equal(s.flags, flags)
}

func (s *server) ensure(ctx context.Context, flags []string, own bool) (*pictor.Server, error) {
	if s.shares(flags, own) {
		return s.running, s.startErr
	}
	s.stop()
	s.flags, s.own, s.startErr = flags, own, nil
	// From the whole usage text: ServeHasFlag misses boolean flags such
	// as --allow-private-urls.
	var has map[string]bool
	for _, f := range flags {
		name, ok := strings.CutPrefix(f, "--")
		if !ok {
			continue
		}
		if has == nil {
			has = pictor.ServeFlags(ctx, s.cfg.Pictor)
		}
		if !has[name] {
			s.startErr = fmt.Errorf("%s serve has no %s", s.cfg.Pictor, f)
			return nil, s.startErr
		}
	}
	extra := slices.Clone(flags)
	if pictor.ServeHasFlag(ctx, s.cfg.Pictor, "render-tabs") {
		extra = append(extra, "--render-tabs", strconv.Itoa(s.cfg.PoolSize))
	} else if s.cfg.PoolSize != runtime.NumCPU() {
		s.rep.Failures = append(s.rep.Failures, fmt.Sprintf(
			"%s serve has no --render-tabs: its pool is the CPU count, not --pool-size %d", s.cfg.Pictor, s.cfg.PoolSize))
	}
	// The load generator is one client address with up to --edge-clients
	// connections, as nginx sees it too: no per-address limit.
	if pictor.ServeHasFlag(ctx, s.cfg.Pictor, "max-conns-per-ip") {
		extra = append(extra, "--max-conns-per-ip", "0", "--max-conns", strconv.Itoa(max(4096, 2*s.cfg.EdgeClients)))
	}
	s.progress.Notef("starting %s serve %s on a fresh data directory", s.cfg.Pictor, strings.Join(extra, " "))
	s.running, s.startErr = pictor.Start(ctx, s.cfg.Pictor, extra, s.log, s.cfg.StartTimeout)
	return s.running, s.startErr
}

func (s *server) stop() {
	if s.running == nil {
		return
	}
	s.progress.Notef("stopping pictor serve (SIGTERM)")
	if err := s.running.Stop(context.Background()); err != nil {
		s.rep.Failures = append(s.rep.Failures, err.Error())
	}
	s.running = nil
}

// hostDescription names the machine: OS, architecture, CPU model and count.
func hostDescription() string {
	d := fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return d
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return d + " (" + strings.TrimSpace(v) + ")"
		}
	}
	return d
}

// loadAverage returns the one-minute load average, or -1 if unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// firstLine runs a command briefly and returns the first line of its
// standard output, or "" if it fails.
func firstLine(ctx context.Context, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(line)
}
