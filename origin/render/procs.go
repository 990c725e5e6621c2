package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Processes finds the processes whose command line mentions a path under
// dir, as every Chromium process of a profile under dir does in
// --user-data-dir.
func Processes(dir string) []int {
	if dir == "" {
		return nil
	}
	needle := []byte(filepath.Clean(dir) + string(filepath.Separator))
	entries, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, needle) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && zombie(stat) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
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
