package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Role is the login that owns the databases Database makes; it is not a
// superuser, like the role an origin would be given.
const Role = "pictor"

// superuser is the cluster's bootstrap superuser, used to make databases.
const superuser = "postgres"

// readyLine is what the postmaster logs once it accepts connections
// (lc_messages is C).
const readyLine = "database system is ready to accept connections"

// startTimeout bounds one start of the server, recovery included, on a
// busy machine.
const startTimeout = 2 * time.Minute

// Cluster is a private PostgreSQL server on 127.0.0.1, with its data in a
// temporary directory.
type Cluster struct {
	root, data, bin string
	cred            *syscall.Credential // the postgres user's, when running as root
	port            int
	password        string // Role's
	superPassword   string

	mu     sync.Mutex
	proc   *exec.Cmd
	exited chan struct{}
	log    *logWatcher
	admin  *pgx.Conn
	dbs    atomic.Int64
}

var shared struct {
	once sync.Once
	c    *Cluster
	err  error
}

// Shared returns the test binary's cluster, starting it on first use. Call
// StopShared from TestMain after m.Run.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.once.Do(func() { shared.c, shared.err = start() })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.c
}

// StopShared stops the shared cluster, if one was started, and removes its
// directory.
func StopShared() {
	if shared.c != nil {
		if err := shared.c.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
}

// New starts a cluster of the test's own, for tests that stop or restart
// the server; it is removed when the test ends.
func New(t testing.TB) *Cluster {
	t.Helper()
	c, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c
}

// Database creates an empty database owned by Role, dropped when the test
// ends, and returns its URL (with Role's password).
func (c *Cluster) Database(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("pgtest_%d", c.dbs.Add(1))
	if err := c.adminExec(fmt.Sprintf("CREATE DATABASE %s OWNER %s", name, Role)); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		// A test may leave the server stopped; the cluster goes anyway.
		c.adminExec(fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name))
	})
	return c.URL(name)
}

// URL returns the URL of database db for Role.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://%s:%s@%s/%s?sslmode=disable", Role, c.password, c.Addr(), db)
}

// Addr returns the server's host:port.
func (c *Cluster) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)) }

// Password returns Role's password, for tests that check it never leaks.
func (c *Cluster) Password() string { return c.password }

// Stop shuts the server down with SIGINT, PostgreSQL's fast shutdown (what
// pg_ctl stop -m fast sends): sessions are ended, a checkpoint written.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopLocked()
}

func (c *Cluster) stopLocked() error {
	if c.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c.admin.Close(ctx)
		cancel()
		c.admin = nil
	}
	if c.proc == nil {
		return nil
	}
	proc, exited := c.proc, c.exited
	c.proc = nil
	if err := proc.Process.Signal(syscall.SIGINT); err != nil {
		return fmt.Errorf("pgtest: stop server: %w", err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(startTimeout):
		proc.Process.Kill()
		<-exited
		return fmt.Errorf("pgtest: server did not shut down in %v; killed it; log:\n%s", startTimeout, c.log.tail())
	}
}

// Start starts the stopped server again, on the same port.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		return nil
	}
	return c.spawn()
}

// Restart stops the server and starts it again.
func (c *Cluster) Restart() error {
	if err := c.Stop(); err != nil {
		return err
	}
	return c.Start()
}

// Close stops the server and removes its directory.
func (c *Cluster) Close() error {
	err := c.Stop()
	if rerr := os.RemoveAll(c.root); err == nil && rerr != nil {
		err = fmt.Errorf("pgtest: remove cluster: %w", rerr)
	}
	return err
}

func start() (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, password: randomHex(), superPassword: randomHex()}
	if os.Geteuid() == 0 {
		// The server refuses to run as root: run it as the postgres user.
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("pgtest: running as root needs the postgres system user (package postgresql-15); make test installs it: %w", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if c.root, err = os.MkdirTemp("", "pgtest-"); err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	if err := c.init(); err != nil {
		os.RemoveAll(c.root)
		return nil, err
	}
	return c, nil
}

// init runs initdb, configures the cluster, starts it on a free port and
// creates Role.
func (c *Cluster) init() error {
	c.data = filepath.Join(c.root, "data")
	pwfile := filepath.Join(c.root, "pwfile")
	if err := os.WriteFile(pwfile, []byte(c.superPassword+"\n"), 0o600); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if err := c.chown(c.root, pwfile); err != nil {
		return err
	}
	// -N skips initdb's own fsync of the fresh files; the server itself runs
	// with fsync on.
	initdb := c.command(filepath.Join(c.bin, "initdb"), "-D", c.data, "-U", superuser, "--pwfile="+pwfile,
		"--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "-N")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	os.Remove(pwfile)
	conf := fmt.Sprintf(`
# pgtest
listen_addresses = '127.0.0.1'
unix_socket_directories = '%s'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 200
shared_buffers = 32MB
lc_messages = 'C'
log_line_prefix = '%%m [%%p] '
`, c.root)
	f, err := os.OpenFile(filepath.Join(c.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pgtest: write postgresql.conf: %w", err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	// Another process may take the free port before the server binds it.
	for attempt := 1; ; attempt++ {
		if c.port, err = freePort(); err != nil {
			return err
		}
		err = c.spawn()
		if err == nil || !errors.Is(err, errAddrInUse) || attempt == 5 {
			break
		}
	}
	if err != nil {
		return err
	}
	if err := c.adminExecLocked(fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", Role, c.password)); err != nil {
		c.stopLocked()
		return fmt.Errorf("pgtest: create role: %w", err)
	}
	return nil
}

var errAddrInUse = errors.New("address in use")

// spawn starts the postmaster as a child of this process and waits for it
// to log that it accepts connections.
func (c *Cluster) spawn() error {
	logf, err := os.OpenFile(filepath.Join(c.root, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	w := &logWatcher{f: logf, ready: make(chan struct{})}
	cmd := c.command(filepath.Join(c.bin, "postgres"), "-D", c.data, "-p", strconv.Itoa(c.port))
	cmd.Stdout, cmd.Stderr = w, w
	// If this process dies without stopping it, the server gets the fast
	// shutdown signal instead of outliving it.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		// Pdeathsig fires when the thread that started the child exits, so
		// that thread stays with this goroutine until the server has exited.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		logf.Close()
		close(exited)
	}()
	if err := <-started; err != nil {
		logf.Close()
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case <-w.ready:
	case <-exited:
		tail := w.tail()
		if strings.Contains(tail, "could not bind") || strings.Contains(tail, "already in use") {
			return fmt.Errorf("pgtest: postgres could not listen on %d: %w", c.port, errAddrInUse)
		}
		return fmt.Errorf("pgtest: postgres exited while starting; log:\n%s", tail)
	case <-timer.C:
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("pgtest: postgres not ready after %v; log:\n%s", startTimeout, w.tail())
	}
	c.proc, c.exited, c.log = cmd, exited, w
	return nil
}

// adminExec runs sql as the superuser on the postgres database.
func (c *Cluster) adminExec(sql string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adminExecLocked(sql)
}

func (c *Cluster) adminExecLocked(sql string) error {
	if c.proc == nil {
		return errors.New("pgtest: the server is stopped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if c.admin == nil || c.admin.IsClosed() {
		url := fmt.Sprintf("postgres://%s:%s@%s/postgres?sslmode=disable", superuser, c.superPassword, c.Addr())
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return fmt.Errorf("connect as %s: %w", superuser, err)
		}
		c.admin = conn
	}
	_, err := c.admin.Exec(ctx, sql)
	return err
}

// command runs a PostgreSQL program as the postgres user when this process
// is root.
func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"LC_ALL=C", "LANG=C", "PATH=/usr/bin:/bin", "HOME=" + c.root}
	cmd.Dir = c.root
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd
}

func (c *Cluster) chown(paths ...string) error {
	if c.cred == nil {
		return nil
	}
	for _, p := range paths {
		if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
	}
	return nil
}

// findBin finds Debian's PostgreSQL 15 server programs, or another
// version's.
func findBin() (string, error) {
	dirs := []string{"/usr/lib/postgresql/15/bin"}
	others, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Sort(others)
	slices.Reverse(others)
	dirs = append(dirs, others...)
	if p, err := exec.LookPath("postgres"); err == nil {
		if p, err := filepath.EvalSymlinks(p); err == nil {
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	for _, d := range dirs {
		if isFile(filepath.Join(d, "postgres")) && isFile(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	return "", errors.New("pgtest: PostgreSQL 15 is not installed (Debian package postgresql-15); make test installs it")
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// logWatcher copies the server's log to a file, keeps its last lines for
// error messages and closes ready at readyLine.
type logWatcher struct {
	f     *os.File
	ready chan struct{}

	mu      sync.Mutex
	partial []byte
	lines   []string
	isReady bool
}

func (w *logWatcher) Write(p []byte) (int, error) {
	w.f.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := slices.Index(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if w.lines = append(w.lines, line); len(w.lines) > 40 {
			w.lines = w.lines[1:]
		}
		if !w.isReady && strings.Contains(line, readyLine) {
			w.isReady = true
			close(w.ready)
		}
	}
	return len(p), nil
}

func (w *logWatcher) tail() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}
