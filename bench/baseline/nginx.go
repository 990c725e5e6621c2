package baseline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/proc"
)

// nginxConfig is the static file server the edge scenarios compare
// Pictor with: Debian's nginx as an operator would set it up for hot
// static files (sendfile, keep-alive, no access log, open-file cache, a
// worker per CPU this process may run on and a listening socket per
// worker), confined to a directory of its own. The workers are counted as
// Go counts CPUs (the affinity), whatever nginx's auto would count.
//
// The listening socket per worker (listen ... reuseport) has the kernel
// spread connections over the workers. With one shared socket, the
// worker woken first accepted most of a run's 32 connections, and in a
// quarter of the runs all of them: nginx then served from one worker
// (25 % fewer requests per second, and the even latency of one event
// loop), so that the same bench compared Pictor with two different
// nginxes from run to run (docs/performance-history.md, "nginx's two
// modes").
type nginxConfig struct {
	// Dir holds the configuration, pid file, error log and temp files.
	Dir string
	// Root is the document root.
	Root string
	// Addr is the loopback host:port to listen on.
	Addr string
	// Files is the worker's limit of open files (worker_rlimit_nofile);
	// 0 leaves the inherited one. The open-file cache keeps below it.
	Files int
}

// Limits of nginx's open files: the open-file cache holds at most
// nginxCacheMax descriptors, and leaves nginxConnections (a worker's
// connections) and some more for the logs and listeners under the limit.
const (
	nginxConnections = 4096
	nginxCacheMax    = 20000
	nginxFilesMax    = 1 << 20
)

// openFileCache returns the size of the open-file cache under a limit of
// files open files: every cached file holds a descriptor, and a worker
// that runs out answers 500 (with 100,000 files to serve and a limit of
// 20,000, it did). A limit of 0 is unknown: the cache keeps its size.
func openFileCache(files int) int {
	if files <= 0 {
		return nginxCacheMax
	}
	return max(min(nginxCacheMax, files-nginxConnections-64), 100)
}

// fileLimit returns the hard limit of open files, which nginx's workers
// may raise theirs to (Go raised this process's, but not what its
// children inherit), or 0 if unknown.
func fileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return int(min(rl.Max, nginxFilesMax))
}

// text returns the nginx.conf of c. Master options such as "daemon off"
// come from the command line (-g), not from here.
func (c nginxConfig) text() string {
	rlimit := ""
	if c.Files > 0 {
		rlimit = fmt.Sprintf("\nworker_rlimit_nofile %d;", c.Files)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `# Written by pictor-bench for one run; removed afterwards.
worker_processes %[9]d;%[6]s
pid %[1]s;
error_log %[2]s warn;

events {
    worker_connections %[7]d;
}

http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 75s;
    keepalive_requests 1000000;
    open_file_cache max=%[8]d inactive=60s;
    open_file_cache_valid 60s;
    client_body_temp_path %[3]s;
    types {
        image/jpeg jpg;
        image/png png;
        image/webp webp;
    }
    default_type application/octet-stream;

    server {
        listen %[4]s reuseport;
        root %[5]s;
        location / {
        }
    }
}
`, filepath.Join(c.Dir, "nginx.pid"), filepath.Join(c.Dir, "error.log"), filepath.Join(c.Dir, "client_body"),
		c.Addr, c.Root, rlimit, nginxConnections, openFileCache(c.Files), runtime.NumCPU())
	return b.String()
}

// Nginx is a running nginx master (daemon off) and its workers.
type Nginx struct {
	// Addr is where it listens, host:port.
	Addr    string
	cmd     *exec.Cmd
	cfg     nginxConfig
	exited  chan struct{}
	waitErr error
}

// StartNginx serves the files of root with nginx (the binary bin) on a
// free loopback port, its configuration, logs and temporary files in
// workDir/nginx, and returns once it accepts connections. Root and its
// parents up to the temporary directory are opened to every user first:
// nginx's workers run as an unprivileged user. Stop it with Stop.
func StartNginx(ctx context.Context, progress *load.Progress, bin, root, workDir string) (*Nginx, error) {
	if err := makeReadable(root); err != nil {
		return nil, err
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(workDir, "nginx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	progress.Notef("starting %s on %s", bin, addr)
	return startNginx(ctx, bin, nginxConfig{Dir: dir, Root: root, Addr: addr, Files: fileLimit()}, 30*time.Second)
}

// startNginx writes cfg's configuration into cfg.Dir, starts bin on it
// in the foreground and returns once it accepts connections, or an error
// with the end of its error log.
func startNginx(ctx context.Context, bin string, cfg nginxConfig, timeout time.Duration) (*Nginx, error) {
	conf := filepath.Join(cfg.Dir, "nginx.conf")
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "client_body"), 0o755); err != nil {
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	if err := os.WriteFile(conf, []byte(cfg.text()), 0o644); err != nil {
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	cmd := exec.Command(bin, "-p", cfg.Dir, "-c", conf, "-e", filepath.Join(cfg.Dir, "error.log"), "-g", "daemon off;")
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group, so its workers can be ended with it; it
	// stops should the harness die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	n := &Nginx{Addr: cfg.Addr, cmd: cmd, cfg: cfg, exited: make(chan struct{})}
	go func() {
		n.waitErr = cmd.Wait()
		close(n.exited)
	}()
	err := waitListening(ctx, cfg.Addr, timeout, n.exited)
	if err != nil {
		n.Stop()
		return nil, fmt.Errorf("nginx did not start: %w: %s %s", err, out.lastLine(), n.errorLogTail())
	}
	return n, nil
}

// waitListening polls addr until it accepts a connection, exited closes,
// ctx ends or timeout passes.
func waitListening(ctx context.Context, addr string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited")
		case <-deadline.C:
			return fmt.Errorf("%s not accepting connections within %v", addr, timeout)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// CPU returns the CPU time nginx and its workers used so far.
func (n *Nginx) CPU() time.Duration { return proc.TreeCPU(n.cmd.Process.Pid) }

// Stop ends nginx (SIGTERM, a fast shutdown; SIGKILL to the group after
// 10 s) and waits for it.
func (n *Nginx) Stop() error {
	select {
	case <-n.exited:
		return fmt.Errorf("nginx exited early: %v %s", n.waitErr, n.errorLogTail())
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case <-n.exited:
		return nil
	case <-timer.C:
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.exited
		return errors.New("nginx killed: no exit within 10s of SIGTERM")
	}
}

func (n *Nginx) errorLogTail() string {
	b, _ := os.ReadFile(filepath.Join(n.cfg.Dir, "error.log"))
	var t tailBuffer
	t.Write(b)
	return t.lastLine()
}

// freeLoopbackAddr returns a loopback address with a port free a moment ago.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// makeReadable opens dir and its parents up to the temporary directory to
// every user: nginx's workers run as an unprivileged user, and the
// harness's temporary directories are private.
func makeReadable(dir string) error {
	tmp := filepath.Clean(os.TempDir())
	for d := filepath.Clean(dir); d != tmp && d != "/" && d != "."; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}
