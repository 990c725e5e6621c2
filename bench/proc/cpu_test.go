package proc

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name string
		line string
		want procStat
		ok   bool
	}{
		{
			name: "plain",
			line: "4242 (chromium) S 4200 4242 4242 0 -1 4194560 9000 0 0 0 150 30 7 3 20 0 12 0 5000 0 0",
			want: procStat{pid: 4242, ppid: 4200, cpu: 190 * clockTick},
			ok:   true,
		},
		{
			name: "name with spaces and parentheses",
			line: "17 (Web Content (x)) R 1 17 17 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 0 0 0",
			want: procStat{pid: 17, ppid: 1, cpu: 10 * clockTick},
			ok:   true,
		},
		{name: "truncated", line: "17 (x) R 1 17", ok: false},
		{name: "garbage", line: "not a stat line", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseProcStat(tt.line)
			if ok != tt.ok || ok && got != tt.want {
				t.Fatalf("parseProcStat = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestTreeCPU(t *testing.T) {
	ms := time.Millisecond
	stats := []procStat{
		{pid: 1, ppid: 0, cpu: 1000 * ms},
		{pid: 10, ppid: 1, cpu: 100 * ms}, // the server
		{pid: 11, ppid: 10, cpu: 50 * ms}, // its browser
		{pid: 12, ppid: 11, cpu: 20 * ms}, // a renderer
		{pid: 13, ppid: 11, cpu: 5 * ms},
		{pid: 20, ppid: 1, cpu: 700 * ms}, // someone else
	}
	tests := []struct {
		name string
		root int
		want time.Duration
	}{
		{"server tree", 10, 175 * ms},
		{"leaf", 12, 20 * ms},
		{"gone", 99, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sumCPU(stats, tt.root); got != tt.want {
				t.Fatalf("sumCPU(%d) = %v, want %v", tt.root, got, tt.want)
			}
		})
	}
	// This process uses CPU, and /proc says so.
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return
	}
	for start := time.Now(); TreeCPU(os.Getpid()) == 0; {
		if time.Since(start) > 300*time.Millisecond {
			t.Fatal("no CPU time for this process after 300 ms of spinning")
		}
	}
	if got := TreesCPU(os.Getpid(), -1); len(got) != 2 || got[0] == 0 || got[1] != 0 {
		t.Fatalf("TreesCPU(self, none) = %v, want this process's CPU and 0", got)
	}
}

// TestChildren finds a process this test started among its children, and
// not among the children of that process.
func TestChildren(t *testing.T) {
	cmd := exec.Command("cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Error(err)
		}
	}()
	if got := Children(os.Getpid()); !slices.Contains(got, cmd.Process.Pid) {
		t.Errorf("Children(%d) = %v, want %d among them", os.Getpid(), got, cmd.Process.Pid)
	}
	if got := Children(cmd.Process.Pid); len(got) != 0 {
		t.Errorf("Children of cat = %v, want none", got)
	}
}
