package render

import (
	"strconv"

	"github.com/pictorhq/pictor/origin/egress"
)

// peer is who may connect to the egress sessions of b's tabs. Chromium
// connects to a tab's session from its network service, a child of the
// browser's main process running as Chromium's user, in the headless shell
// and the full browser, with the sandbox and without (the network service
// is never sandboxed on Linux). When that user is Chromium's alone (pictor,
// or another --chromium-user), its sockets are the browser's: the user is
// the rule. When it is shared — Pictor's own user (Pictor not root, or root
// with --chromium-no-sandbox), or nobody — the socket must also be held by
// one of b's own processes.
func (e *Engine) peer(b *browser) egress.Peer {
	if e.account.other && e.account.name != FallbackUser {
		return egress.PeerUID(e.account.uid)
	}
	return egress.PeerProcess(e.account.uid, b.connectors)
}

// connectors yields the processes of b whose sockets may connect to its
// tabs' sessions. Chromium connects from one process, its network service:
// once a process of b was found holding such a socket, connectors yields
// that process and the main process only (a stat and two reads of
// /proc/<pid>/fd per connection, refused ones included); until then, or
// once that process is gone (a network service that crashed is started
// again), the main process and every other process of the browser's group.
// A consumer stops after the process that holds its socket (yield returns
// false), which is then the one found.
func (b *browser) connectors(yield func(int) bool) {
	if last := b.connector.Load(); last != nil && b.member(*last) {
		if yield(last.pid) && last.pid != b.pid && !yield(b.pid) {
			b.remember(b.pid)
		}
		return
	}
	if !yield(b.pid) {
		b.remember(b.pid)
		return
	}
	for _, p := range scanProcs(false) {
		if p.pgid != b.pid || p.zombie || p.pid == b.pid {
			continue
		}
		if !yield(p.pid) {
			b.connector.Store(&procID{p.pid, p.start})
			return
		}
	}
}

// remember makes pid the first process connectors yields.
func (b *browser) remember(pid int) {
	if p, ok := readStat(strconv.Itoa(pid)); ok {
		b.connector.Store(&procID{p.pid, p.start})
	}
}

// member reports whether id is still a live process of b's group: the same
// process (its pid with the same start time), not one that took its pid.
func (b *browser) member(id procID) bool {
	p, ok := readStat(strconv.Itoa(id.pid))
	return ok && p.start == id.start && p.pgid == b.pid && !p.zombie
}
