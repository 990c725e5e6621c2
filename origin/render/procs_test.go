package render

import (
	"context"
	"os"
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
