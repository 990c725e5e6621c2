package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pictorhq/pictor/bench/proc"
)

// The parts of a cluster, as CPU names them.
const (
	PartEdges    = "edges"
	PartOrigins  = "origins"
	PartPostgres = "PostgreSQL"
	PartS3       = "S3"
)

// Parts lists the parts in the order reports name them.
var Parts = []string{PartEdges, PartOrigins, PartPostgres, PartS3}

// StatsDelay is how long PostgreSQL may take to count a transaction in
// pg_stat_database: a backend that went idle less than a second after its
// last report reports again PGSTAT_IDLE_INTERVAL (10 s) later.
const StatsDelay = 11 * time.Second

// downTimeout bounds `down`, which gives each process 45 s to stop.
const downTimeout = 2 * time.Minute

// Info is the JSON object `up` prints as its last line.
type Info struct {
	Edges   []string `json:"edges"`
	Origins []string `json:"origins"`
	// Store is the PostgreSQL URL the origins share.
	Store  string `json:"store"`
	APIID  string `json:"api_id"`
	APIKey string `json:"api_key"`
}

// Process is one process of the cluster, as `status` lists it.
type Process struct {
	Name string
	PID  int
	URL  string
}

// Cluster is a running cluster. Stop it with Down.
type Cluster struct {
	Info
	// Dir holds every file of the cluster, its logs included.
	Dir       string
	Processes []Process
	script    string
	log       io.Writer
	logDir    string
}

// Up runs `script up` in a new temporary directory with PICTOR_BIN set to
// binary, and returns the cluster once it answered; up's and down's output
// go to log, and Down copies each part's log into logDir ("" copies none).
// The cluster's processes are in a process group of their own, so a Ctrl-C
// reaches the caller only, which then calls Down. On failure, what up
// started is brought down before Up returns.
func Up(ctx context.Context, script, binary, logDir string, log io.Writer) (*Cluster, error) {
	bin, err := filepath.Abs(binary)
	if err != nil {
		return nil, err
	}
	if err := checkBinary(script, bin); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pictor-bench-cluster-*")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, script: script, log: log, logDir: logDir}
	cmd := exec.CommandContext(ctx, script, "up", "--dir", dir)
	cmd.Env = append(os.Environ(), "PICTOR_BIN="+bin)
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The processes up leaves running write to their own logs; should one
	// hold up's output open, Wait still returns.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err == nil {
		c.Info, err = parseUp(out)
	}
	if err == nil {
		c.Processes, err = c.status(ctx)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%w: %v (its output is in the report directory)", ErrUp, err), c.Down())
	}
	return c, nil
}

// checkBinary makes sure script runs bin: it does when it knows
// PICTOR_BIN; before that, it ran its checkout's bin/pictor.
func checkBinary(script, bin string) error {
	text, err := os.ReadFile(script)
	if err != nil {
		return fmt.Errorf("--cluster-script: %w", err)
	}
	if bytes.Contains(text, []byte("PICTOR_BIN")) {
		return nil
	}
	abs, err := filepath.Abs(script)
	if err != nil {
		return err
	}
	own := filepath.Join(filepath.Dir(filepath.Dir(abs)), "bin", "pictor")
	a, errA := os.Stat(bin)
	b, errB := os.Stat(own)
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		return fmt.Errorf("%w: %s has no PICTOR_BIN and runs %s, not %s", ErrOtherBinary, script, own, bin)
	}
	return nil
}

// parseUp reads the JSON object on the last line of up's output.
func parseUp(out []byte) (Info, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var info Info
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &info); err != nil {
		return Info{}, fmt.Errorf("up's last line %.200q: %w", lines[len(lines)-1], err)
	}
	switch {
	case len(info.Edges) == 0 || len(info.Origins) == 0:
		return Info{}, fmt.Errorf("up's last line %.200q: no edges or no origins", lines[len(lines)-1])
	case info.APIID == "" || info.APIKey == "":
		return Info{}, fmt.Errorf("up's last line %.200q: no credentials", lines[len(lines)-1])
	}
	return info, nil
}

// status lists the cluster's processes with `script status`.
func (c *Cluster) status(ctx context.Context) ([]Process, error) {
	out, err := exec.CommandContext(ctx, c.script, "status", "--dir", c.Dir).Output()
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	return parseStatus(out)
}

// parseStatus reads status's {"processes": {"<name>": {"pid","url","healthy"}}},
// sorted by name; every process must be healthy.
func parseStatus(out []byte) ([]Process, error) {
	var st struct {
		Processes map[string]struct {
			PID     int    `json:"pid"`
			URL     string `json:"url"`
			Healthy bool   `json:"healthy"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return nil, fmt.Errorf("status %.200q: %w", out, err)
	}
	var ps []Process
	for name, p := range st.Processes {
		if !p.Healthy {
			return nil, fmt.Errorf("status: %s (pid %d) is not healthy", name, p.PID)
		}
		ps = append(ps, Process{Name: name, PID: p.PID, URL: p.URL})
	}
	if len(ps) == 0 {
		return nil, errors.New("status lists no process")
	}
	slices.SortFunc(ps, func(a, b Process) int { return strings.Compare(a.Name, b.Name) })
	return ps, nil
}

// partOf names the part a process belongs to: edge-1 is one of the edges.
func partOf(name string) string {
	switch {
	case strings.HasPrefix(name, "edge"):
		return PartEdges
	case strings.HasPrefix(name, "origin"):
		return PartOrigins
	case name == "postgres":
		return PartPostgres
	case name == "s3":
		return PartS3
	}
	return name
}

// CPU returns the CPU time each part used so far, its descendants
// included (an origin's Chromium, PostgreSQL's backends), by part name.
func (c *Cluster) CPU() map[string]time.Duration {
	pids := make([]int, len(c.Processes))
	for i, p := range c.Processes {
		pids[i] = p.PID
	}
	out := map[string]time.Duration{}
	for i, d := range proc.TreesCPU(pids...) {
		out[partOf(c.Processes[i].Name)] += d
	}
	return out
}

// Transactions returns the transactions PostgreSQL counted so far in the
// cluster's database, committed or rolled back: a statement outside an
// explicit transaction is one, and one round trip. A backend counts its
// transactions up to StatsDelay after it ran them. Each call is one
// connection, closed before it returns, whose transactions count too.
func (c *Cluster) Transactions(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.Store)
	if err != nil {
		return 0, fmt.Errorf("read pg_stat_database: %w", err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(ctx, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()").Scan(&n); err != nil {
		return 0, fmt.Errorf("read pg_stat_database: %w", err)
	}
	return n, nil
}

// Down runs `script down`, whatever the state of the cluster or of the
// caller's context, then copies each part's log into Up's logDir as
// cluster-<name>.log and removes the cluster's directory. A directory
// whose down failed is kept, named in the error.
func (c *Cluster) Down() error {
	ctx, cancel := context.WithTimeout(context.Background(), downTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.script, "down", "--dir", c.Dir)
	cmd.Stdout, cmd.Stderr = c.log, c.log
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s down --dir %s: %w (its files are kept)", c.script, c.Dir, err)
	}
	var err error
	if c.logDir != "" {
		err = c.saveLogs(c.logDir)
	}
	return errors.Join(err, os.RemoveAll(c.Dir))
}

// saveLogs copies the logs deploy/cluster.sh leaves in the directory.
func (c *Cluster) saveLogs(logDir string) error {
	logs, _ := filepath.Glob(filepath.Join(c.Dir, "*", "log"))
	logs = append(logs, filepath.Join(c.Dir, "pg", "server.log"))
	var errs []error
	for _, src := range logs {
		b, err := os.ReadFile(src)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		name := filepath.Base(filepath.Dir(src))
		if name == "pg" {
			name = "postgres"
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(logDir, "cluster-"+name+".log"), b, 0o644)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
