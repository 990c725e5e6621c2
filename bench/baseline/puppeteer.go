package baseline

import (
	"bufio"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/proc"
)

// PuppeteerVersion is the puppeteer-core the render-vs-page baseline
// runs, pinned exactly in puppeteer/package.json and its lockfile.
const PuppeteerVersion = "24.43.1"

// puppeteerFiles are the Node side of the baseline: the package, its
// lockfile and the script. InstallPuppeteer writes them out.
//
//go:embed puppeteer/package.json puppeteer/package-lock.json puppeteer/render.mjs
var puppeteerFiles embed.FS

// puppeteerScript is the script's name in the installed directory.
const puppeteerScript = "render.mjs"

// puppeteerStartTimeout bounds the launch of the browser and its pages.
const puppeteerStartTimeout = time.Minute

// InstallPuppeteer makes the pinned puppeteer-core ready under toolsDir
// and returns its directory, which holds the script: npm ci with the
// committed lockfile into a directory named by the lockfile's hash, once;
// later runs find it there and need no network. Node and npm are
// installed with apt-get when missing.
func InstallPuppeteer(ctx context.Context, progress *load.Progress, toolsDir string) (string, error) {
	lock, err := puppeteerFiles.ReadFile("puppeteer/package-lock.json")
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(lock)
	dir, err := filepath.Abs(filepath.Join(toolsDir, fmt.Sprintf("puppeteer-core-%s-%s", PuppeteerVersion, hex.EncodeToString(sum[:6]))))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		if err := npmCI(ctx, progress, dir); err != nil {
			return "", err
		}
	}
	// The script is rewritten every run: it may change without the lockfile.
	script, err := puppeteerFiles.ReadFile("puppeteer/" + puppeteerScript)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, puppeteerScript), script, 0o644); err != nil {
		return "", fmt.Errorf("install puppeteer-core: %w", err)
	}
	return dir, nil
}

// npmCI installs the package into dir: npm ci in a fresh directory beside
// it, renamed to dir once complete, so that an interrupted install leaves
// no directory that looks installed.
func npmCI(ctx context.Context, progress *load.Progress, dir string) error {
	if _, err := EnsureTool(ctx, progress, "node", "nodejs"); err != nil {
		return err
	}
	npm, err := EnsureTool(ctx, progress, "npm", "npm")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("install puppeteer-core: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("install puppeteer-core: %w", err)
	}
	defer os.RemoveAll(tmp) // after a successful rename, nothing is there
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("install puppeteer-core: %w", err)
	}
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := puppeteerFiles.ReadFile("puppeteer/" + name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return fmt.Errorf("install puppeteer-core: %w", err)
		}
	}
	progress.Notef("installing puppeteer-core %s into %s: npm ci", PuppeteerVersion, dir)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	// puppeteer-core downloads no browser; this keeps any other package
	// from trying.
	cmd.Env = append(os.Environ(), "PUPPETEER_SKIP_DOWNLOAD=1")
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("install puppeteer-core: npm ci: %w: %s", err, out.lastLine())
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); serr == nil {
			return nil // another run installed it meanwhile
		}
		return fmt.Errorf("install puppeteer-core: %w", err)
	}
	return nil
}

// IsBrowserCommand reports whether a command line is a Chromium browser
// process driven over DevTools (chromedp's or Puppeteer's), not one of its
// helpers (renderers, GPU, utilities and zygotes carry --type=) nor a
// crash handler.
func IsBrowserCommand(args []string) bool {
	if len(args) < 2 {
		return false
	}
	debugged := false
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "--type=") {
			return false
		}
		if a == "--remote-debugging-pipe" || strings.HasPrefix(a, "--remote-debugging-port=") {
			debugged = true
		}
	}
	return debugged
}

// PageFlags returns the flags Puppeteer launches Chromium with, from the
// command line of Pictor's browser process (IsBrowserCommand): all of
// them, the ones Debian's chromium wrapper adds included, less what
// belongs to one launch (its profile, its DevTools pipe or port, the page
// it opens), with --no-sandbox added when asRoot, as Chromium refuses
// root with its sandbox on (Pictor runs it as another user instead).
func PageFlags(browser []string, asRoot bool) []string {
	var out []string
	for _, a := range browser[1:] {
		switch {
		case !strings.HasPrefix(a, "-"), // about:blank
			strings.HasPrefix(a, "--user-data-dir="),
			strings.HasPrefix(a, "--remote-debugging-"):
			continue
		}
		out = append(out, a)
	}
	if asRoot && !slices.Contains(out, "--no-sandbox") {
		out = append(out, "--no-sandbox")
	}
	return out
}

// PuppeteerConfig configures a Puppeteer process.
type PuppeteerConfig struct {
	// Node is the node binary.
	Node string
	// Dir is what InstallPuppeteer returned.
	Dir string
	// Chromium is the browser binary; Flags its flags (PageFlags).
	Chromium string
	Flags    []string
	// Profile is the browser's profile directory, created if missing.
	Profile string
	// Pages is how many warm pages it keeps open, each in a browser
	// context of its own.
	Pages int
	// Width and Height are the pages' viewport, Scale its device scale.
	Width, Height, Scale int
	// Log receives the Node process's standard error.
	Log io.Writer
}

// Shot is one render of a page.
type Shot struct {
	// Elapsed runs, inside Node, from the call of page.setContent to the
	// screenshot's buffer received: what Puppeteer's user waits.
	Elapsed time.Duration
	// Wall is the harness's own time around the request, the line
	// protocol with Node included.
	Wall time.Duration
	// Bytes is the PNG's length; Width and Height its pixels, from its
	// header.
	Bytes, Width, Height int
}

// reply is an answer of the script to request id: a shot, or the
// failure it reported.
type reply struct {
	id      int64
	shot    Shot
	failure string
}

// parseReady reads the script's first line, "ready <pid> <version>":
// the browser's process id and its version.
func parseReady(line string) (pid int, version string, err error) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "ready" {
		return 0, "", fmt.Errorf("%w: want ready <pid> <version>, got %q", ErrPuppeteer, line)
	}
	pid, err = strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		return 0, "", fmt.Errorf("%w: browser pid %q", ErrPuppeteer, f[1])
	}
	return pid, f[2], nil
}

// parseReply reads an answer line: "ok <id> <ms> <bytes> <width>
// <height>" or "error <id> <message>".
func parseReply(line string) (reply, error) {
	verb, rest, _ := strings.Cut(line, " ")
	idText, rest, _ := strings.Cut(rest, " ")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return reply{}, fmt.Errorf("%w: answer id %q in %q", ErrPuppeteer, idText, line)
	}
	switch verb {
	case "error":
		if rest = strings.TrimSpace(rest); rest == "" {
			rest = "failed without a message"
		}
		return reply{id: id, failure: rest}, nil
	case "ok":
		f := strings.Fields(rest)
		if len(f) != 4 {
			return reply{}, fmt.Errorf("%w: want ok <id> <ms> <bytes> <width> <height>, got %q", ErrPuppeteer, line)
		}
		ms, err := strconv.ParseFloat(f[0], 64)
		if err != nil || ms < 0 {
			return reply{}, fmt.Errorf("%w: milliseconds %q in %q", ErrPuppeteer, f[0], line)
		}
		var n [3]int
		for i := range n {
			if n[i], err = strconv.Atoi(f[i+1]); err != nil || n[i] < 0 {
				return reply{}, fmt.Errorf("%w: %q in %q", ErrPuppeteer, f[i+1], line)
			}
		}
		return reply{id: id, shot: Shot{Elapsed: time.Duration(ms * float64(time.Millisecond)), Bytes: n[0], Width: n[1], Height: n[2]}}, nil
	}
	return reply{}, fmt.Errorf("%w: unknown answer %q", ErrPuppeteer, line)
}

// Puppeteer is a Node process driving Chromium through puppeteer-core,
// with warm pages that render the HTML they are sent.
type Puppeteer struct {
	// Version is the browser's, as Puppeteer reports it.
	Version string

	cmd        *exec.Cmd
	browserPID int // the browser's process, a descendant of cmd's; 0 if unknown
	stdin      io.WriteCloser
	stderr     tailBuffer // read once exited is closed

	mu       sync.Mutex // guards stdin's writes, next, pending and protoErr
	next     int64
	pending  map[int64]chan reply
	protoErr error // an answer the harness could not read: the process is ended

	exited  chan struct{} // closed once the process exited
	waitErr error
}

// StartPuppeteer starts the script and returns once its browser and pages
// are ready. Close it with Close.
func StartPuppeteer(ctx context.Context, cfg PuppeteerConfig) (*Puppeteer, error) {
	if err := os.MkdirAll(cfg.Profile, 0o700); err != nil {
		return nil, fmt.Errorf("puppeteer profile: %w", err)
	}
	args := append(slices.Clone(cfg.Flags), "--user-data-dir="+cfg.Profile, "about:blank")
	conf, err := json.Marshal(map[string]any{
		"chromium": cfg.Chromium, "args": args, "pages": cfg.Pages,
		"width": cfg.Width, "height": cfg.Height, "scale": cfg.Scale,
	})
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(cfg.Node, filepath.Join(cfg.Dir, puppeteerScript), string(conf))
	cmd.Dir = cfg.Dir
	// Its own process group; Pdeathsig ends it, and Puppeteer the browser
	// with it, should the harness die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	p := &Puppeteer{cmd: cmd, pending: map[int64]chan reply{}, exited: make(chan struct{})}
	var stderr io.Writer = &p.stderr
	if cfg.Log != nil {
		stderr = io.MultiWriter(&p.stderr, cfg.Log)
	}
	cmd.Stderr = stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Node, err)
	}
	ready := make(chan error, 1)
	go p.read(bufio.NewScanner(stdout), ready)
	timer := time.NewTimer(puppeteerStartTimeout)
	defer timer.Stop()
	select {
	case err = <-ready:
	case <-timer.C:
		err = fmt.Errorf("%w: not ready within %v", ErrPuppeteer, puppeteerStartTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// read reads the script's standard output: the ready line, then answers,
// each passed to the request waiting for it. When the output ends, it
// waits for the process and fails the requests still waiting.
func (p *Puppeteer) read(sc *bufio.Scanner, ready chan<- error) {
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	readyDone := false
	for sc.Scan() {
		line := sc.Text()
		if !readyDone {
			readyDone = true
			pid, version, err := parseReady(line)
			if !slices.Contains(proc.Descendants(p.cmd.Process.Pid), pid) {
				pid = 0 // not its browser: Close must never signal it
			}
			p.mu.Lock()
			p.browserPID, p.Version = pid, version
			p.mu.Unlock()
			ready <- err
			continue
		}
		r, err := parseReply(line)
		if err != nil {
			p.mu.Lock()
			if p.protoErr == nil {
				p.protoErr = err
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
			}
			p.mu.Unlock()
			continue
		}
		p.mu.Lock()
		ch := p.pending[r.id]
		delete(p.pending, r.id)
		p.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
	p.waitErr = p.cmd.Wait()
	if !readyDone {
		ready <- fmt.Errorf("%w: exited before ready (%v): %s", ErrPuppeteer, p.waitErr, p.stderr.lastLine())
	}
	close(p.exited)
}

// Render loads the document html into page number page (0 to Pages-1),
// which no other render may be using, and takes its screenshot as a PNG,
// optimized for speed if fast, written to out unless out is "".
func (p *Puppeteer) Render(ctx context.Context, page int, html string, fast bool, out string) (Shot, error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	ch := make(chan reply, 1)
	p.mu.Lock()
	p.next++
	id := p.next
	req, err := json.Marshal(map[string]any{"id": id, "page": page, "html": html, "fast": fast, "out": out})
	if err != nil {
		p.mu.Unlock()
		return Shot{}, err
	}
	p.pending[id] = ch
	start := time.Now()
	_, err = p.stdin.Write(append(req, '\n'))
	p.mu.Unlock()
	if err != nil {
		p.forget(id)
		return Shot{}, fmt.Errorf("%w: send a render: %v", ErrPuppeteer, err)
	}
	select {
	case r := <-ch:
		if r.failure != "" {
			return Shot{}, fmt.Errorf("puppeteer: %s", r.failure)
		}
		r.shot.Wall = time.Since(start)
		return r.shot, nil
	case <-p.exited:
		p.forget(id)
		return Shot{}, p.exitError()
	case <-ctx.Done():
		p.forget(id)
		return Shot{}, fmt.Errorf("puppeteer render: %w", ctx.Err())
	}
}

// forget drops a request no one waits for any more.
func (p *Puppeteer) forget(id int64) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

// CPU returns the CPU time Node and its Chromium used so far.
func (p *Puppeteer) CPU() time.Duration { return proc.TreeCPU(p.cmd.Process.Pid) }

// puppeteerCloseGrace is how long Close waits for the script to close its
// browser before it signals.
const puppeteerCloseGrace = 30 * time.Second

// Close ends standard input, on which the script waits for the renders
// in flight, closes the browser and exits; after puppeteerCloseGrace it
// sends SIGTERM (Puppeteer then kills its browser), and five seconds
// later kills both process groups. It reports an unclean exit.
func (p *Puppeteer) Close() error {
	p.stdin.Close()
	wait := func(d time.Duration) bool {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-p.exited:
			return true
		case <-timer.C:
			return false
		}
	}
	if wait(puppeteerCloseGrace) {
		if p.waitErr != nil || p.protoErr != nil {
			return p.exitError()
		}
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if !wait(5 * time.Second) {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	p.mu.Lock()
	browser := p.browserPID
	p.mu.Unlock()
	if browser > 0 {
		// Puppeteer starts the browser in a process group of its own.
		_ = syscall.Kill(-browser, syscall.SIGKILL)
	}
	return fmt.Errorf("%w: did not close within %v", ErrPuppeteer, puppeteerCloseGrace)
}

// exitError describes why the process ended; call it once exited is
// closed.
func (p *Puppeteer) exitError() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.protoErr != nil {
		return p.protoErr
	}
	return fmt.Errorf("%w: exited (%v): %s", ErrPuppeteer, p.waitErr, p.stderr.lastLine())
}
