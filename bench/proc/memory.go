package proc

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Memory is what a process tree holds in RAM at one moment.
type Memory struct {
	// PSS is the proportional set size summed over the tree: pages shared
	// between processes (Chromium's zygote children share most of theirs)
	// are divided among them, so the sum is what the tree costs the
	// machine.
	PSS int64
	// RSS is the resident set size summed over the tree; shared pages are
	// counted once per process, so it overstates.
	RSS int64
	// Processes counts the processes of the tree.
	Processes int
}

// parseRollup reads the Pss and Rss lines, in kB, of a
// /proc/<pid>/smaps_rollup file, and returns them in bytes.
func parseRollup(text string) (pss, rss int64, ok bool) {
	sc := bufio.NewScanner(strings.NewReader(text))
	var havePSS, haveRSS bool
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Pss:":
			pss, havePSS = v<<10, true
		case "Rss:":
			rss, haveRSS = v<<10, true
		}
	}
	return pss, rss, havePSS && haveRSS
}

// treePIDs returns root and its descendants among stats.
func treePIDs(stats []procStat, root int) []int {
	children := map[int][]int{}
	for _, s := range stats {
		children[s.ppid] = append(children[s.ppid], s.pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// TreeMemory returns the memory of pid and its descendants, from /proc;
// zero where /proc is missing. Processes that exit while it reads are
// left out.
func TreeMemory(pid int) Memory {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	stats := make([]procStat, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if s, ok := parseProcStat(string(b)); ok {
			stats = append(stats, s)
		}
	}
	var m Memory
	for _, p := range treePIDs(stats, pid) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "smaps_rollup"))
		if err != nil {
			continue
		}
		if pss, rss, ok := parseRollup(string(b)); ok {
			m.PSS += pss
			m.RSS += rss
			m.Processes++
		}
	}
	return m
}
