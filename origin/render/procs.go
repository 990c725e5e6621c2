package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Processes finds the live processes whose command line names dir or a
// path under it, as --user-data-dir does in every Chromium process of a
// profile: Processes(profile) finds one browser, Processes(parent) all the
// browsers whose profiles are under parent.
func Processes(dir string) []int { return processes(dir, false) }

// processes is Processes, limited to renderer processes (one per tab's
// pages) when renderers is set.
func processes(dir string, renderers bool) []int {
	if dir == "" {
		return nil
	}
	dir = filepath.Clean(dir)
	entries, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !namesPath(cmdline, dir) || (renderers && !bytes.Contains(cmdline, []byte("--type=renderer"))) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && zombie(stat) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// namesPath reports whether a command line names dir or a path under it:
// dir appears after a separator (start, NUL, space or the '=' of a flag) and
// before the end, a separator or a '/'. Chromium's child processes rewrite
// their command line into one space-separated string, so arguments are not
// always NUL-separated.
func namesPath(cmdline []byte, dir string) bool {
	d := []byte(dir)
	for i := 0; i < len(cmdline); {
		j := bytes.Index(cmdline[i:], d)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(d)
		before := start == 0 || bytes.IndexByte([]byte{0, ' ', '='}, cmdline[start-1]) >= 0
		after := end == len(cmdline) || bytes.IndexByte([]byte{0, ' ', filepath.Separator}, cmdline[end]) >= 0
		if before && after {
			return true
		}
		i = start + 1
	}
	return false
}

// zombie reports whether a /proc/<pid>/stat line is of a zombie.
func zombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// killProcesses kills the processes of profiles under dir until none is
// left (children can fork while their parent dies), for at most 2 seconds.
func killProcesses(dir string) {
	deadline := time.Now().Add(2 * time.Second)
	for quiet := 0; quiet < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		pids := Processes(dir)
		if len(pids) == 0 {
			quiet++
			continue
		}
		quiet = 0
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// residentBytes returns a process's resident memory, 0 when it is gone.
func residentBytes(pid int) int64 {
	statm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "statm"))
	if err != nil {
		return 0
	}
	f := bytes.Fields(statm)
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return pages * int64(os.Getpagesize())
}
