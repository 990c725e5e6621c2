package pictor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/pictorhq/pictor/bench/proc"
)

// Server is a `pictor serve` subprocess on a fresh data directory, with
// the credentials of its default organization.
type Server struct {
	// URL is the public (edge) address clients talk to.
	URL string
	// OriginURL is the origin's own address, where its /metrics are;
	// "" when serve did not announce it.
	OriginURL string
	// APIID and APIKey are the default organization's Basic credentials.
	APIID, APIKey string
	// Client is an HTTP client tuned for loopback load.
	Client *http.Client

	cmd     *exec.Cmd
	dataDir string
	exited  chan struct{}
	waitErr error
}

// serveInfo is what `pictor serve` announces on standard output.
type serveInfo struct {
	URL, OriginURL, APIID, APIKey string
}

// readAnnouncement reads serve's standard output up to its "Base URL:"
// line and returns the edge address, the origin's (if announced) and the
// credentials printed on first start. Lines read are copied to log.
func readAnnouncement(sc *bufio.Scanner, log io.Writer) (serveInfo, error) {
	var info serveInfo
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "api_id:":
			info.APIID = f[1]
		case len(f) == 2 && f[0] == "api_key:":
			info.APIKey = f[1]
		case strings.HasPrefix(line, "Pictor is listening on ") && len(f) >= 5:
			// "Pictor is listening on http://E (origin API on http://O)"
			info.URL = f[4]
			if len(f) >= 9 && f[5] == "(origin" && strings.HasSuffix(f[8], ")") {
				info.OriginURL = strings.TrimSuffix(f[8], ")")
			}
		case strings.HasPrefix(line, "Base URL: "):
			if info.URL == "" || info.APIID == "" || info.APIKey == "" {
				return info, errors.New("announcement lacks the address or the default credentials (is the data directory fresh?)")
			}
			return info, nil
		}
	}
	if err := sc.Err(); err != nil {
		return info, err
	}
	return info, io.ErrUnexpectedEOF
}

// Start starts `binary serve` on a new temporary data directory and
// loopback ports, with extra flags, and returns once it announced itself.
// Its logs go to log. Stop it with Stop.
func Start(ctx context.Context, binary string, extra []string, log io.Writer, timeout time.Duration) (*Server, error) {
	dataDir, err := os.MkdirTemp("", "pictor-bench-data-*")
	if err != nil {
		return nil, fmt.Errorf("start pictor: %w", err)
	}
	args := append([]string{"serve", "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--origin-addr", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Stderr = log
	cmd.Env = serveEnv(os.Environ())
	// Own process group: a Ctrl-C reaches the harness only, which then
	// stops the server with SIGTERM like an operator would. Pdeathsig
	// stops it should the harness die without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dataDir)
		return nil, fmt.Errorf("start pictor: %w", err)
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dataDir)
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	p := &Server{cmd: cmd, dataDir: dataDir, exited: make(chan struct{})}

	type announced struct {
		info serveInfo
		err  error
	}
	ch := make(chan announced, 1)
	sc := bufio.NewScanner(stdout)
	go func() {
		info, err := readAnnouncement(sc, log)
		ch <- announced{info, err}
		// Keep draining, so the server never blocks on a full pipe.
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
		}
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var a announced
	select {
	case a = <-ch:
	case <-timer.C:
		a.err = fmt.Errorf("no announcement within %v", timeout)
	case <-ctx.Done():
		a.err = ctx.Err()
	}
	if a.err != nil {
		p.Stop(context.Background())
		return nil, fmt.Errorf("%w: %v (its log is in the report directory)", ErrStart, a.err)
	}
	p.URL, p.OriginURL, p.APIID, p.APIKey = a.info.URL, a.info.OriginURL, a.info.APIID, a.info.APIKey
	p.Client = NewLoopbackClient()
	return p, nil
}

// serveEnv drops PICTOR_* variables from environ: the server under test
// runs on its defaults, whatever the caller's shell has set.
func serveEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "PICTOR_") {
			out = append(out, kv)
		}
	}
	return out
}

// NewLoopbackClient returns a client with enough idle connections for a
// load run, no compression and no proxy.
func NewLoopbackClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// CPU returns the CPU time the server and its Chromium used so far.
func (p *Server) CPU() time.Duration { return proc.TreeCPU(p.cmd.Process.Pid) }

// PID returns the server's process id, the root of its process tree.
func (p *Server) PID() int { return p.cmd.Process.Pid }

// stopGrace is how long Stop waits after SIGTERM before killing; Pictor
// itself allows in-flight requests 30 s.
const stopGrace = 40 * time.Second

// Stop sends SIGTERM, waits for a graceful exit (killing the process
// group after stopGrace or when ctx ends) and removes the data directory.
// It reports an exit other than a clean one.
func (p *Server) Stop(ctx context.Context) error {
	if p.Client != nil {
		p.Client.CloseIdleConnections()
	}
	var err error
	select {
	case <-p.exited:
		err = fmt.Errorf("pictor serve exited early: %v", p.waitErr)
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(stopGrace)
		defer timer.Stop()
		select {
		case <-p.exited:
			if p.waitErr != nil {
				err = fmt.Errorf("pictor serve stopped: %w", p.waitErr)
			}
		case <-timer.C:
			err = p.kill("no exit within " + stopGrace.String())
		case <-ctx.Done():
			err = p.kill(ctx.Err().Error())
		}
	}
	if rerr := os.RemoveAll(p.dataDir); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return err
}

// kill ends the server's process group and waits for it.
func (p *Server) kill(why string) error {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	return fmt.Errorf("pictor serve killed after SIGTERM: %s", why)
}
