package egress

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"syscall"
)

// Peer says which local processes a session serves. Its port is on
// 127.0.0.1, where every process of the machine can connect; a connection
// from anyone else than the session's client would use its policy, its
// upstream proxy and that proxy's credentials.
//
// A session always serves the connections its own Dial makes (Pictor's own
// code, in this process). The zero Peer serves no other: a policy that
// names no rule is closed to every other process. PeerUID and PeerProcess
// open it to a browser; AnyPeer opens it to everyone, for tests.
//
// The rules judge the peer's socket, as the kernel reports it
// (NETLINK_SOCK_DIAG) for the connection's addresses: the user that created
// it and its inode. They run once per accepted connection, not per request.
type Peer struct {
	kind  peerKind
	uid   uint32
	procs iter.Seq[int]
}

type peerKind uint8

const (
	peerDialed  peerKind = iota // the zero Peer: Session.Dial only
	peerAny                     // everyone
	peerUID                     // sockets of one user
	peerProcess                 // sockets of one user held by given processes
)

// AnyPeer serves every local connection, as sessions did before peers were
// checked. Only tests use it.
func AnyPeer() Peer { return Peer{kind: peerAny} }

// PeerUID serves the sockets created by user uid: a browser that runs as a
// user of its own.
func PeerUID(uid uint32) Peer { return Peer{kind: peerUID, uid: uid} }

// PeerProcess serves the sockets created by user uid that one of the
// processes procs yields holds open (read from /proc/<pid>/fd): a browser
// that shares its user with others, Pictor's own or nobody. procs is
// iterated once per connection, until a process holds the socket: the
// iteration stops right after that process (yield returns false), which
// lets procs try it first next time.
func PeerProcess(uid uint32, procs iter.Seq[int]) Peer {
	return Peer{kind: peerProcess, uid: uid, procs: procs}
}

// String names the rule for logs.
func (p Peer) String() string {
	switch p.kind {
	case peerAny:
		return "any"
	case peerUID:
		return fmt.Sprintf("uid %d", p.uid)
	case peerProcess:
		return fmt.Sprintf("uid %d, its processes", p.uid)
	}
	return "this process's dials"
}

// Reasons of the refused-peers metric.
const (
	peerRefusedUser    = "user"    // a socket of another user
	peerRefusedProcess = "process" // a socket of the user, but of another process
	peerRefusedLookup  = "lookup"  // the kernel could not say whose socket it is
)

// peerRefusal is why a connection was not served.
type peerRefusal struct {
	reason string
	owner  socketOwner
	known  bool // owner was looked up
	err    error
}

// admit judges the peer of c by the session's Peer rule; nil serves it.
func (s *Session) admit(c net.Conn) *peerRefusal {
	rule := s.policy.Peer
	if rule.kind == peerAny {
		return nil
	}
	local, lok := addrPort(c.LocalAddr())
	remote, rok := addrPort(c.RemoteAddr())
	if !lok || !rok {
		return &peerRefusal{reason: peerRefusedLookup, err: fmt.Errorf("not a TCP connection: %s", c.RemoteAddr())}
	}
	// The peer's socket has the connection's addresses the other way round.
	owner, err := lookupSocket(remote, local)
	if err != nil {
		return &peerRefusal{reason: peerRefusedLookup, err: err}
	}
	if s.takeDialed(owner.inode) {
		return nil
	}
	refused := &peerRefusal{reason: peerRefusedProcess, owner: owner, known: true}
	switch rule.kind {
	case peerDialed:
		if owner.uid != uint32(os.Geteuid()) {
			refused.reason = peerRefusedUser
		}
	case peerUID:
		if owner.uid != rule.uid {
			refused.reason = peerRefusedUser
			return refused
		}
		return nil
	case peerProcess:
		if owner.uid != rule.uid {
			refused.reason = peerRefusedUser
			return refused
		}
		for pid := range rule.procs {
			if holdsSocket(pid, owner.inode) {
				return nil
			}
		}
	}
	return refused
}

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	return ta.AddrPort(), true
}

// Dial connects to the session from this process: how Pictor's own code
// (an OG page read) uses a session. The session serves the connections
// Dial makes whatever its Peer rule, and no one else's unless the rule
// says so: Dial tells it the new socket before connecting.
func (s *Session) Dial(ctx context.Context) (net.Conn, error) {
	var inode uint32
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			if inode, err = socketInode(fd); err == nil {
				s.expectDialed(inode)
			}
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	c, err := d.DialContext(ctx, "tcp", s.Addr())
	if err != nil {
		if inode != 0 {
			s.takeDialed(inode)
		}
		return nil, fmt.Errorf("egress session dial: %w", err)
	}
	return c, nil
}

// expectDialed notes a socket of Dial, about to connect.
func (s *Session) expectDialed(inode uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dialed[inode] = struct{}{}
}

// takeDialed reports whether inode is a socket of Dial that was not
// accepted yet, and forgets it.
func (s *Session) takeDialed(inode uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.dialed[inode]
	delete(s.dialed, inode)
	return ok
}

// peerListener serves only the connections the session's Peer rule admits;
// the others are closed at once, unread and unanswered.
type peerListener struct {
	net.Listener
	s *Session
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		refused := l.s.admit(c)
		if refused == nil {
			return c, nil
		}
		l.s.refusePeer(c, refused)
	}
}

// refusePeer closes a connection from a peer the rule refuses, counts it,
// and logs it at Warn the first time its user and reason are seen by the
// gateway.
func (s *Session) refusePeer(c net.Conn, r *peerRefusal) {
	defer c.Close() // counted and logged before the peer sees the end
	s.g.metrics.refusedPeers.WithLabelValues(r.reason).Inc()
	level := slog.LevelDebug
	if s.g.firstRefusal(r) {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("session", s.Addr()), slog.String("peer", c.RemoteAddr().String()),
		slog.String("reason", r.reason), slog.String("rule", s.policy.Peer.String()),
	}
	if r.known {
		attrs = append(attrs, slog.Uint64("peer_uid", uint64(r.owner.uid)), slog.Uint64("peer_inode", uint64(r.owner.inode)))
	}
	if r.err != nil {
		attrs = append(attrs, slog.Any("error", r.err))
	}
	s.log.LogAttrs(context.Background(), level, "egress connection refused: not the session's client", attrs...)
}

// maxRefusalsLogged bounds the users and reasons a gateway remembers having
// logged; past it refusals are logged at Debug only.
const maxRefusalsLogged = 1024

type refusalKey struct {
	reason string
	uid    uint32
	known  bool
}

// firstRefusal reports whether r's user and reason are refused for the
// first time on g.
func (g *Gateway) firstRefusal(r *peerRefusal) bool {
	k := refusalKey{reason: r.reason, uid: r.owner.uid, known: r.known}
	g.refusedMu.Lock()
	defer g.refusedMu.Unlock()
	if _, ok := g.refused[k]; ok || len(g.refused) >= maxRefusalsLogged {
		return false
	}
	g.refused[k] = struct{}{}
	return true
}

// checkPeerLookup makes sure, once per gateway, that the kernel answers
// the lookups the Peer rules need: it connects to itself on loopback and
// looks its own socket up. Without inet_diag (a kernel without it, a
// seccomp policy that forbids NETLINK_SOCK_DIAG) every connection would be
// refused: better to say so when the first session opens.
func (g *Gateway) checkPeerLookup() error {
	g.probeOnce.Do(func() { g.probeErr = probePeerLookup() })
	return g.probeErr
}

func probePeerLookup() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("%w: listen: %v", ErrPeerLookup, err)
	}
	defer ln.Close()
	var inode uint32
	var inodeErr error
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { inode, inodeErr = socketInode(fd) })
	}}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		return fmt.Errorf("%w: dial: %v", ErrPeerLookup, err)
	}
	defer c.Close()
	if inodeErr != nil {
		return fmt.Errorf("%w: %v", ErrPeerLookup, inodeErr)
	}
	local, _ := addrPort(c.LocalAddr())
	remote, _ := addrPort(c.RemoteAddr())
	owner, err := lookupSocket(local, remote)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPeerLookup, err)
	}
	if owner.inode != inode || owner.uid != uint32(os.Geteuid()) {
		return fmt.Errorf("%w: the kernel named socket %d of uid %d, want %d of uid %d",
			ErrPeerLookup, owner.inode, owner.uid, inode, os.Geteuid())
	}
	return nil
}
