package proc

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

func TestParseRollup(t *testing.T) {
	const text = `55e4b7a4c000-7ffd1a5f7000 ---p 00000000 00:00 0                          [rollup]
Rss:              123456 kB
Pss:               65432 kB
Pss_Anon:          40000 kB
Shared_Clean:      10000 kB
`
	pss, rss, ok := parseRollup(text)
	if !ok || pss != 65432<<10 || rss != 123456<<10 {
		t.Fatalf("parseRollup = %d, %d, %v; want %d, %d, true", pss, rss, ok, 65432<<10, 123456<<10)
	}
	if _, _, ok := parseRollup("Rss: 12 kB\n"); ok {
		t.Error("a rollup without Pss was accepted")
	}
}

func TestTreePIDs(t *testing.T) {
	stats := []procStat{
		{pid: 1, ppid: 0}, {pid: 10, ppid: 1}, {pid: 11, ppid: 10}, {pid: 12, ppid: 10},
		{pid: 13, ppid: 12}, {pid: 20, ppid: 1}, {pid: 21, ppid: 20},
	}
	got := treePIDs(stats, 10)
	slices.Sort(got)
	if want := []int{10, 11, 12, 13}; !slices.Equal(got, want) {
		t.Errorf("treePIDs(10) = %v, want %v", got, want)
	}
}

// TestProcessTreeMemory measures this test process with a child: the tree
// holds both, and its memory is at least the test binary's own.
func TestProcessTreeMemory(t *testing.T) {
	alone := TreeMemory(os.Getpid())
	if alone.Processes != 1 || alone.PSS <= 0 || alone.RSS < alone.PSS {
		t.Fatalf("memory of this process = %+v: want one process with 0 < PSS ≤ RSS", alone)
	}
	cmd := exec.Command("cat") // blocks on its stdin until it closes
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	with := TreeMemory(os.Getpid())
	if with.Processes != 2 {
		t.Errorf("the tree with a running child has %d processes, want 2", with.Processes)
	}
	if child := TreeMemory(cmd.Process.Pid); child.Processes != 1 || child.PSS <= 0 {
		t.Errorf("memory of the child = %+v", child)
	}
}
