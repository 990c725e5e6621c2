package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of CPU times in /proc/<pid>/stat (USER_HZ, 100
// on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// procStat is what sumCPU needs of one /proc/<pid>/stat line.
type procStat struct {
	pid, ppid int
	cpu       time.Duration // utime + stime + cutime + cstime
}

// parseProcStat reads a /proc/<pid>/stat line. The command name, in
// parentheses, may hold spaces and parentheses itself, so fields are
// counted from the last ')'.
func parseProcStat(line string) (procStat, bool) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 1 || end < open {
		return procStat{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return procStat{}, false
	}
	f := strings.Fields(line[end+1:]) // f[0] is field 3 (state)
	if len(f) < 15 {
		return procStat{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, false
	}
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // fields 14-17
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return procStat{}, false
		}
		ticks += v
	}
	return procStat{pid: pid, ppid: ppid, cpu: time.Duration(ticks) * clockTick}, true
}

// sumCPU sums the CPU time of root and its descendants, reaped children
// included. Processes that exit are counted through their parent's
// cutime once reaped, so differences between two calls are the CPU the
// tree used in between (helpers that left the tree excepted).
func sumCPU(stats []procStat, root int) time.Duration {
	children := map[int][]procStat{}
	var total time.Duration
	for _, s := range stats {
		if s.pid == root {
			total += s.cpu
		} else {
			children[s.ppid] = append(children[s.ppid], s)
		}
	}
	todo := []int{root}
	for len(todo) > 0 {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, c := range children[p] {
			total += c.cpu
			todo = append(todo, c.pid)
		}
	}
	return total
}

// TreeCPU returns the CPU time used so far by pid and its descendants,
// from /proc; 0 where /proc is missing.
func TreeCPU(pid int) time.Duration {
	return sumCPU(readStats(), pid)
}

// TreesCPU is TreeCPU of each pid, from one reading of /proc.
func TreesCPU(pids ...int) []time.Duration {
	stats := readStats()
	out := make([]time.Duration, len(pids))
	for i, pid := range pids {
		out[i] = sumCPU(stats, pid)
	}
	return out
}

// Children returns the pids of pid's children, from /proc; none where
// /proc is missing.
func Children(pid int) []int {
	var out []int
	for _, s := range readStats() {
		if s.ppid == pid {
			out = append(out, s.pid)
		}
	}
	return out
}

// readStats reads the stat line of every process in /proc.
func readStats() []procStat {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	stats := make([]procStat, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		if s, ok := parseProcStat(string(b)); ok {
			stats = append(stats, s)
		}
	}
	return stats
}
