package render

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Processes finds the live processes of the browsers whose profile is dir
// or under it: those whose command line names it, as the browser's main
// process does with --user-data-dir, and their descendants (the headless
// shell's children do not repeat the flag): Processes(profile) finds one
// browser, Processes(parent) all the browsers whose profiles are under
// parent.
func Processes(dir string) []int {
	if dir == "" {
		return nil
	}
	dir = filepath.Clean(dir)
	all := scanProcs(true)
	var pids []int
	for _, i := range family(all, func(p *proc) bool { return namesPath(p.cmdline, dir) }) {
		if !all[i].zombie {
			pids = append(pids, all[i].pid)
		}
	}
	return pids
}

// renderers returns the live renderer processes (one per tab's pages) of
// the browsers whose main processes are mains, read from scratch.
func renderers(mains []int) []int {
	return new(rendererWatch).renderers(mains)
}

// rereadEvery is how often the memory guard's rendererWatch reads every
// process again.
const rereadEvery = time.Second

// rendererWatch finds renderers for a caller that asks again and again, as
// the memory guard does every memoryCheckEvery, at a fraction of the cost:
// it lists /proc each time but reads the stat of a process only once, and
// the command line of a browser's process until it says it is a renderer
// (a process the zygote just forked still shows the zygote's). Reading every
// process's stat ten times a second took a few percent of a core on a
// machine with a hundred processes. It reads everything again once every
// is past, the zero value at every look, so a process given to another
// parent, or a pid used again (after an idle engine's pause too), is seen
// as it is within every. Not safe for concurrent use.
type rendererWatch struct {
	every  time.Duration
	procs  map[int]*watched
	readAt time.Time // when it last read every process
	looks  int
}

// watched is a process a rendererWatch has read.
type watched struct {
	proc
	look     int  // the last look that listed it
	renderer bool // its command line says --type=renderer
}

func (w *rendererWatch) renderers(mains []int) []int {
	if len(mains) == 0 {
		return nil
	}
	if now := time.Now(); w.procs == nil || now.Sub(w.readAt) >= w.every {
		w.procs, w.readAt = make(map[int]*watched), now
	}
	w.looks++
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	self := os.Getpid()
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		if p := w.procs[pid]; p != nil {
			p.look = w.looks
		} else if p, ok := readStat(name); ok {
			w.procs[pid] = &watched{proc: p, look: w.looks}
		}
	}
	all := make([]proc, 0, len(w.procs))
	for pid, p := range w.procs {
		if p.look != w.looks {
			delete(w.procs, pid)
			continue
		}
		all = append(all, p.proc)
	}
	var pids []int
	for _, i := range family(all, func(p *proc) bool { return slices.Contains(mains, p.pid) }) {
		p := w.procs[all[i].pid]
		if p.zombie {
			continue
		}
		if !p.renderer {
			cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.pid), "cmdline"))
			p.renderer = err == nil && bytes.Contains(cmdline, []byte("--type=renderer"))
		}
		if p.renderer {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// scanProcs reads every process but this one, with its command line when
// cmdlines is set.
func scanProcs(cmdlines bool) []proc {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	all := make([]proc, 0, len(entries))
	read := readStat
	if cmdlines {
		read = readProc
	}
	for _, e := range entries {
		if p, ok := read(e.Name()); ok && p.pid != self {
			all = append(all, p)
		}
	}
	return all
}

// family returns the indexes in all of the processes root accepts and of
// their descendants.
func family(all []proc, root func(*proc) bool) []int {
	children := make(map[int][]int, len(all)) // ppid → indexes in all
	for i := range all {
		children[all[i].ppid] = append(children[all[i].ppid], i)
	}
	var members []int
	seen := make([]bool, len(all))
	for i := range all {
		if root(&all[i]) {
			seen[i] = true
			members = append(members, i)
		}
	}
	for next := 0; next < len(members); next++ {
		for _, c := range children[all[members[next]].pid] {
			if !seen[c] {
				seen[c] = true
				members = append(members, c)
			}
		}
	}
	return members
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

// proc is one process as /proc/<pid>/stat and cmdline show it. A pid may
// be reused once its process is reaped: the pid with its start time is one
// process.
type proc struct {
	pid, ppid, pgid int
	start           uint64 // clock ticks after boot
	zombie          bool   // exited, waiting for its parent to reap it
	cmdline         []byte // empty for a zombie
}

// procID is one process: a pid with its start time.
type procID struct {
	pid   int
	start uint64
}

// readProc reads a process, named as in /proc, with its command line;
// false when it is gone or the name is not a pid.
func readProc(pid string) (proc, bool) {
	p, ok := readStat(pid)
	if ok {
		p.cmdline, _ = os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
	}
	return p, ok
}

// readStat is readProc without the command line.
func readStat(pid string) (proc, bool) {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return proc{}, false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return proc{}, false
	}
	// The command name, in parentheses, may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 20 {
		return proc{}, false
	}
	p := proc{pid: n, zombie: zombie(stat)}
	p.ppid, _ = strconv.Atoi(string(f[1]))
	p.pgid, _ = strconv.Atoi(string(f[2]))
	p.start, _ = strconv.ParseUint(string(f[19]), 10, 64)
	return p, true
}

// browserExitWait bounds how long endProcesses waits for a browser's
// processes to be gone, well inside the shutdown bound (cmd/pictor's
// stopBound).
const browserExitWait = 2 * time.Second

// endProcesses kills the processes of the profiles under dir, of the
// process group group (a browser's, led by its main process; 0 for none)
// and those of also, and waits, at most browserExitWait, until they are
// gone: not only dead but reaped, so that none is left in the process table
// when the caller returns. It returns those still there then.
//
// Every process is killed at once with SIGKILL: nothing of a profile is
// kept, so nothing is shut down gently. Children can fork while their
// parent dies, so it looks again until nothing is left. A process belongs
// when it is in the group, names dir on its command line (the crashpad
// handlers leave the group: they fork twice and start a session of their
// own), is in also (a crashpad handler that already exited has no command
// line left), or was seen belonging before.
//
// The killed processes' orphans come to this process, the subreaper
// (adoptOrphans), which reaps them here. The group's leader, the browser's
// main process, is left to chromedp, which waits for it. A zombie whose
// parent is neither this process nor one of the browser's (a run before
// adoptOrphans, or a browser of an earlier run) is another's to reap and is
// not waited for.
func endProcesses(dir string, group int, also []procID) []int {
	dir = filepath.Clean(dir)
	self := os.Getpid()
	if group == self || group == syscall.Getpgrp() {
		group = 0 // never this process's own group
	}
	seen := map[int]uint64{} // pid → start time of every process that belonged
	for _, p := range also {
		seen[p.pid] = p.start
	}
	deadline := time.Now().Add(browserExitWait)
	for {
		var members []proc
		for _, p := range scanProcs(true) {
			start, known := seen[p.pid]
			if (group > 0 && p.pgid == group) || namesPath(p.cmdline, dir) || (known && start == p.start) {
				seen[p.pid] = p.start
				members = append(members, p)
			}
		}
		if group > 0 {
			// Also whatever the group forked since the look.
			syscall.Kill(-group, syscall.SIGKILL)
		}
		isMember := make(map[int]bool, len(members))
		for _, p := range members {
			isMember[p.pid] = true
		}
		var left []int
		for _, p := range members {
			switch {
			case !p.zombie:
				syscall.Kill(p.pid, syscall.SIGKILL)
			case p.ppid == self && p.pid != group:
				// An orphan this process adopted: reap it. The one child of
				// a browser that Pictor starts itself is its main process,
				// the group's leader.
				var ws syscall.WaitStatus
				if pid, _ := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil); pid == p.pid {
					continue
				}
			case p.pid != group && !isMember[p.ppid]:
				continue // another's to reap
			}
			left = append(left, p.pid)
		}
		// The group is gone once no process is in it, zombies included;
		// without the subreaper a zombie of it may wait for init.
		if len(left) == 0 && (group == 0 || !adopting.Load() || syscall.Kill(-group, 0) == syscall.ESRCH) {
			return nil
		}
		if time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// outsideGroup returns the processes that name dir on their command line
// but are not in the process group group: a browser's crashpad handlers.
func outsideGroup(dir string, group int) []procID {
	dir = filepath.Clean(dir)
	var out []procID
	for _, p := range scanProcs(true) {
		if p.pgid != group && !p.zombie && namesPath(p.cmdline, dir) {
			out = append(out, procID{p.pid, p.start})
		}
	}
	return out
}

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// adopting is set once this process is the subreaper of its descendants.
var adopting atomic.Bool

// adoptOrphans makes this process the reaper of its orphaned descendants,
// once. Without it, the processes of a killed browser (its zygotes, GPU and
// utility processes, and the crashpad handlers, which fork twice to leave
// it at once) become init's, which reaps them when it gets to it: on the
// service's own machines a second and a half later, after Pictor exited.
// As their subreaper, Pictor reaps them itself (endProcesses) before Stop
// returns. It affects the whole process: an orphan of any descendant comes
// to it; Pictor starts no other process that leaves orphans.
var adoptOrphans = sync.OnceFunc(func() {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		slog.Warn("cannot reap the browser's orphans: they are left to init", "error", errno)
		return
	}
	adopting.Store(true)
})
