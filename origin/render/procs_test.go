package render

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// browserProcs returns every process of b: its process group, zombies
// included, and whatever names its profile (the crashpad handlers).
func browserProcs(t *testing.T, b *browser) []proc {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []proc
	for _, e := range entries {
		if p, ok := readProc(e.Name()); ok && (p.pgid == b.pid || namesPath(p.cmdline, b.profile)) {
			out = append(out, p)
		}
	}
	return out
}

// stillThere returns those of procs that are in the process table, alive
// or dead and not yet reaped.
func stillThere(procs []proc) []proc {
	var left []proc
	for _, p := range procs {
		if now, ok := readProc(strconv.Itoa(p.pid)); ok && now.start == p.start {
			left = append(left, now)
		}
	}
	return left
}

func TestProcessesMatchesPaths(t *testing.T) {
	tests := []struct {
		name    string
		cmdline []string
		dir     string
		want    bool
	}{
		{name: "the profile itself", cmdline: []string{"chromium", "--user-data-dir=/d/p"}, dir: "/d/p", want: true},
		{name: "a profile under the directory", cmdline: []string{"chromium", "--user-data-dir=/d/p"}, dir: "/d", want: true},
		{name: "a path argument under the directory", cmdline: []string{"tool", "/d/p/file"}, dir: "/d", want: true},
		{name: "a sibling with the same prefix", cmdline: []string{"chromium", "--user-data-dir=/d/p2"}, dir: "/d/p", want: false},
		{name: "the same name elsewhere", cmdline: []string{"chromium", "--user-data-dir=/x/d/p"}, dir: "/d/p", want: false},
		{name: "a parent of the directory", cmdline: []string{"chromium", "--user-data-dir=/d"}, dir: "/d/p", want: false},
		{name: "a rewritten process title", cmdline: []string{"chromium --type=renderer --user-data-dir=/d/p --lang=en-US"}, dir: "/d/p", want: true},
		{name: "a rewritten title naming a sibling", cmdline: []string{"chromium --type=renderer --user-data-dir=/d/p2 --lang=en-US"}, dir: "/d/p", want: false},
		{name: "unrelated", cmdline: []string{"sleep", "100"}, dir: "/d", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b []byte
			for _, a := range tc.cmdline {
				b = append(append(b, a...), 0)
			}
			if got := namesPath(b, tc.dir); got != tc.want {
				t.Fatalf("namesPath(%q, %q) = %v, want %v", tc.cmdline, tc.dir, got, tc.want)
			}
		})
	}
}

// TestCloseReapsEveryProcess closes a browser that rendered, by Stop, by
// recycling and after its main process died, and checks that once it is
// closed none of its processes is in the process table: not its group, and
// not the crashpad handlers, which leave it; not even as a zombie, since
// the engine's process is their subreaper and reaps them.
func TestCloseReapsEveryProcess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		close func(t *testing.T, e *Engine, b *browser) // returns once b is closed
	}{
		{"stop", func(t *testing.T, e *Engine, b *browser) {
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			if err := e.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		}},
		{"recycle", func(t *testing.T, e *Engine, b *browser) {
			mustRender(t, e, quick("o")) // on a new browser: b served RecycleAfter
			closed(t, e, b)
		}},
		{"death", func(t *testing.T, e *Engine, b *browser) {
			syscall.Kill(b.pid, syscall.SIGKILL)
			closed(t, e, b)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEngine(t, func(c *Config) { c.Tabs, c.RecycleAfter = 1, 1 })
			mustRender(t, e, quick("o"))
			b := current(e)
			before := browserProcs(t, b)
			renderers, outside := 0, 0
			for _, p := range before {
				if strings.Contains(string(p.cmdline), "--type=renderer") {
					renderers++
				}
				if p.pgid != b.pid {
					outside++
				}
			}
			if renderers == 0 || len(before) < 4 {
				t.Fatalf("processes of the browser after a render: %d, %d renderers", len(before), renderers)
			}
			tc.close(t, e, b)
			if left := stillThere(before); len(left) > 0 {
				t.Fatalf("%d of the %d processes of the closed browser (%d outside its group) still there: %v",
					len(left), len(before), outside, left)
			}
		})
	}
}

// closed waits until the engine forgot b, which its watcher does once b
// closed.
func closed(t *testing.T, e *Engine, b *browser) {
	t.Helper()
	select {
	case <-b.ctx.Done():
	case <-time.After(patience):
		t.Fatal("the browser did not end")
	}
	eventually(t, "the browser is closed", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		_, open := e.browsers[b]
		return !open
	})
}

// startGroup starts cmd as the leader of a process group of its own, which
// the test's cleanup kills whole.
func startGroup(tb testing.TB, cmd *exec.Cmd) {
	tb.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
}

// cmdlineHas reports whether process pid's command line holds s.
func cmdlineHas(pid int, s string) bool {
	cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return strings.Contains(string(cmdline), s)
}

// TestRendererWatch follows a stand-in browser, a shell that forks on
// each line it reads a process named as a renderer or as another kind of
// child, or a "zygote" whose own child is a renderer: the watch, which
// reads only what changed, finds what renderers finds from scratch, and a
// renderer that leaves the family (a zombie its zygote does not reap) is
// dropped at the watch's next full read, once every is past.
func TestRendererWatch(t *testing.T) {
	// The script is a file: a command line holding it would name a renderer.
	script := filepath.Join(t.TempDir(), "browser.sh")
	err := os.WriteFile(script, []byte(`while read kind; do
		case $kind in
		renderer) (exec -a "stand-in --type=renderer" sleep 300) & ;;
		other) (exec -a "stand-in --type=gpu-process" sleep 300) & ;;
		late) (read go < "$1"; exec -a "stand-in --type=renderer" sleep 300) & ;;
		zygote) (exec -a "stand-in --type=zygote" bash -c '(exec -a "stand-in --type=$0" sleep 300) & echo $!; exec -a "stand-in --type=zygote" sleep 300' renderer) & ;;
		esac
		[ $kind = zygote ] || echo $!
	done`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, fifo)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startGroup(t, cmd)
	lines := bufio.NewScanner(out)
	spawn := func(kind string) int {
		t.Helper()
		if _, err := fmt.Fprintln(in, kind); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("spawn %s: %v", kind, lines.Err())
		}
		pid, err := strconv.Atoi(lines.Text())
		if err != nil {
			t.Fatal(err)
		}
		// Until it runs sleep, the child shows its shell's command line.
		if kind != "late" {
			eventually(t, "the "+kind+" child runs sleep", func() bool {
				return cmdlineHas(pid, "stand-in --type=") && !cmdlineHas(pid, "zygote")
			})
		}
		return pid
	}
	mains := []int{cmd.Process.Pid}
	// It keeps what it read until the last step.
	w := rendererWatch{every: time.Hour}
	look := func(want ...int) {
		t.Helper()
		got := sorted(w.renderers(mains))
		if !slices.Equal(got, sorted(want)) {
			t.Fatalf("look %d: renderers %v, want %v", w.looks, got, want)
		}
		if scratch := sorted(renderers(mains)); !slices.Equal(scratch, want) {
			t.Fatalf("look %d: renderers from scratch %v, want %v", w.looks, scratch, want)
		}
	}
	spawn("other")
	look()
	first := spawn("renderer")
	look(first)
	spawn("other")
	grandchild := spawn("zygote")
	look(first, grandchild)

	// A child seen before it runs its program, as a renderer the zygote
	// just forked, is looked at again.
	late := spawn("late")
	look(first, grandchild)
	if err := os.WriteFile(fifo, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the late child runs sleep", func() bool { return cmdlineHas(late, "--type=renderer") })
	look(first, grandchild, late)

	// A renderer that exits goes once it is reaped.
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(first, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the killed renderer is reaped", func() bool {
		_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(first)))
		return os.IsNotExist(err)
	})
	look(grandchild, late)

	// A renderer whose zygote does not reap it (the stand-in's runs
	// sleep) stays a zombie: the watch, which read it alive, still has it
	// until its next full read, once every is past.
	if err := syscall.Kill(grandchild, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitExit(grandchild, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if p, ok := readStat(strconv.Itoa(grandchild)); !ok || !p.zombie {
		t.Fatalf("renderer %d: %+v, want a zombie", grandchild, p)
	}
	if got := w.renderers(mains); !slices.Equal(sorted(got), sorted([]int{grandchild, late})) {
		t.Fatalf("before its full read, the watch finds %v, want what it read: %d and %d", got, grandchild, late)
	}
	w.every = 0
	if got := w.renderers(mains); !slices.Equal(got, []int{late}) {
		t.Fatalf("at its full read, renderers %v, want only %d: %d is a zombie", got, late, grandchild)
	}
	if got := renderers(mains); !slices.Equal(got, []int{late}) {
		t.Fatalf("from scratch, renderers %v, want only %d", got, late)
	}
}

func sorted(pids []int) []int { slices.Sort(pids); return pids }

// BenchmarkRenderers compares a memory guard's look from scratch with the
// watch's, for a browser of two processes among this machine's.
func BenchmarkRenderers(b *testing.B) {
	cmd := exec.Command("bash", "-c", `(exec -a "stand-in --type=$0" sleep 300) & wait`, "renderer")
	startGroup(b, cmd)
	mains := []int{cmd.Process.Pid}
	b.Run("scratch", func(b *testing.B) {
		for b.Loop() {
			renderers(mains)
		}
	})
	b.Run("watch", func(b *testing.B) {
		w := rendererWatch{every: rereadEvery}
		for b.Loop() {
			w.renderers(mains)
		}
	})
}
