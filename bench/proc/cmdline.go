package proc

import (
	"os"
	"slices"
	"strconv"
	"strings"
)

// Descendants returns the process ids of pid's descendants, children
// first, from /proc; none where /proc is missing.
func Descendants(pid int) []int {
	return descendants(readStats(), pid)
}

// descendants walks stats from root down, breadth first, ids ascending
// within a generation.
func descendants(stats []procStat, root int) []int {
	children := map[int][]int{}
	for _, s := range stats {
		if s.pid != root {
			children[s.ppid] = append(children[s.ppid], s.pid)
		}
	}
	var out []int
	for gen := []int{root}; len(gen) > 0; {
		var next []int
		for _, p := range gen {
			next = append(next, children[p]...)
		}
		slices.Sort(next)
		out = append(out, next...)
		gen = next
	}
	return out
}

// Cmdline returns the arguments pid was started with, its program first,
// from /proc/<pid>/cmdline.
func Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	return parseCmdline(b), nil
}

// parseCmdline splits a /proc/<pid>/cmdline: arguments ended by NULs.
func parseCmdline(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}
