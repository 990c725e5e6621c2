package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/render"
)

// proc is one process as /proc shows it. A pid alone may be reused; the
// pid with its start time is one process.
type proc struct {
	pid, ppid int
	start     uint64 // clock ticks after boot
	state     byte
	cmdline   string
}

func (p proc) String() string {
	cmd := p.cmdline
	if len(cmd) > 120 {
		cmd = cmd[:120] + "..."
	}
	return fmt.Sprintf("%d (%c) %s", p.pid, p.state, cmd)
}

// readProc reads one process; false when it is gone.
func readProc(pid int) (proc, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return proc{}, false
	}
	// The command name, in parentheses, may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return proc{}, false
	}
	p := proc{pid: pid, state: f[0][0]}
	p.ppid, _ = strconv.Atoi(f[1])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	p.cmdline = strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	return p, true
}

// allProcs reads every process.
func allProcs() map[int]proc {
	entries, _ := os.ReadDir("/proc")
	procs := map[int]proc{}
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := readProc(pid); ok {
				procs[pid] = p
			}
		}
	}
	return procs
}

// chromiumOf returns the processes of a pictor instance: its descendants
// and whatever names its profile directory (the crashpad handlers leave the
// process tree: they fork twice and start a session of their own).
func chromiumOf(root int, profiles string) []proc {
	procs := allProcs()
	of := map[int]bool{root: true}
	for grew := true; grew; {
		grew = false
		for pid, p := range procs {
			if !of[pid] && of[p.ppid] {
				of[pid], grew = true, true
			}
		}
	}
	for _, pid := range render.Processes(profiles) {
		of[pid] = true
	}
	delete(of, root)
	var out []proc
	for pid := range of {
		if p, ok := procs[pid]; ok {
			out = append(out, p)
		}
	}
	return out
}

// TestShutdownWaitsForChromium stops a pictor that rendered with SIGTERM to
// its pid alone (not its group, as a supervisor that signals the main
// process does) and checks that, the moment the process has exited, not one
// of its Chromium processes is left in the process table, not even dead and
// waiting to be reaped (kill(pid, 0) still finds such a zombie, and init may
// take seconds to reap it): not the browser, not its zygotes, renderers, GPU
// and utility processes, not the crashpad handlers, and nothing with its
// profile on the command line.
func TestShutdownWaitsForChromium(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"serve", []string{"serve", "--addr", "127.0.0.1:0", "--origin-addr", "127.0.0.1:0", "--allow-private-urls"}},
		{"origin", []string{"origin", "--addr", "127.0.0.1:0", "--allow-private-urls"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			creds := orgCreate(t, dir, "acme", "scale")
			profiles := render.ProfileRoot(filepath.Join(dir, "chromium"))
			t.Cleanup(func() {
				// Whatever a failure left behind.
				for _, pid := range render.Processes(profiles) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})

			p, url := startProcess(t, append(tc.args, "--data-dir", dir)...)
			_, path := createImage(t, url, creds, map[string]any{"html": box800})
			r := apitest.Do(t, url, apitest.Request{Method: "GET", Path: path})
			apitest.WantStatus(t, r, 200)
			if !bytes.HasPrefix(r.Body, []byte("\x89PNG")) {
				t.Fatalf("the render is no PNG: %q", r.Body[:min(len(r.Body), 16)])
			}

			before := chromiumOf(p.cmd.Process.Pid, profiles)
			renderers := 0
			for _, c := range before {
				if strings.Contains(c.cmdline, "--type=renderer") {
					renderers++
				}
			}
			if renderers == 0 {
				t.Fatalf("no renderer among the processes of pictor after a render: %v", before)
			}

			if err := p.terminate(t); err != nil {
				t.Fatalf("exit after SIGTERM: %v\n%s", err, p.stderr.String())
			}
			// The moment the process is gone: nothing of it may be left.
			var left []proc
			for _, c := range before {
				if now, ok := readProc(c.pid); ok && now.start == c.start {
					left = append(left, now)
				}
			}
			for _, pid := range render.Processes(profiles) {
				if now, ok := readProc(pid); ok && !slices.ContainsFunc(left, func(l proc) bool { return l.pid == pid }) {
					left = append(left, now)
				}
			}
			if len(left) > 0 {
				t.Fatalf("pictor %s exited with %d of its %d Chromium processes still there (Z: dead, not reaped):\n%s\nlogs:\n%s",
					tc.name, len(left), len(before), joinProcs(left), p.stderr.String())
			}
			t.Logf("%d Chromium processes (%d renderers) gone when pictor %s exited", len(before), renderers, tc.name)
		})
	}
}

func joinProcs(ps []proc) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "  %v\n", p)
	}
	return b.String()
}
