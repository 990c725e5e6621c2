package egress

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"iter"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// The users the peer tests run helper processes as: Chromium's (made by
// deploy/chromium-user.sh) and another one.
const (
	allowedUser = "pictor"
	otherUser   = "nobody"
)

// systemUser looks a user up; the suite runs as root (make test), which
// starts processes as these users.
func systemUser(t *testing.T, name string) (uid, gid uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the test suite runs as root (make test): starting processes as other users needs it")
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("user %s: %v (deploy/chromium-user.sh creates pictor)", name, err)
	}
	id, err1 := strconv.ParseUint(u.Uid, 10, 32)
	g, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return uint32(id), uint32(g)
}

// curlAs is curl, run as user name (or as this process's user when name is
// ""), asking proxy for target; it waits for a line on its standard input
// before it starts, so that its pid is known before it connects: the shell
// execs curl, which keeps the pid.
type curlAs struct {
	cmd   *exec.Cmd
	out   bytes.Buffer
	start io.WriteCloser
}

func newCurl(t *testing.T, name, proxy, target string) *curlAs {
	t.Helper()
	c := &curlAs{}
	c.cmd = exec.Command("/bin/sh", "-c", `read go && exec curl -sS --max-time 10 --noproxy "" -x "$1" "$2"`, "sh", "http://"+proxy, target)
	c.cmd.Env = []string{"PATH=/usr/bin:/bin"}
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if name != "" {
		uid, gid := systemUser(t, name)
		c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	}
	var err error
	if c.start, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start curl as %q: %v", name, err)
	}
	t.Cleanup(func() { _ = c.cmd.Process.Kill() })
	return c
}

// run lets curl go and returns its output and whether it succeeded.
func (c *curlAs) run(t *testing.T) (string, bool) {
	t.Helper()
	if _, err := io.WriteString(c.start, "go\n"); err != nil {
		t.Fatal(err)
	}
	c.start.Close()
	err := c.cmd.Wait()
	return c.out.String(), err == nil
}

// refusedPeers reads pictor_egress_refused_peers_total{reason}.
func refusedPeers(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "pictor_egress_refused_peers_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// peerGateway is a gateway with its registry and its log at Debug.
func peerGateway(t *testing.T) (*Gateway, *prometheus.Registry, *apitest.Buffer) {
	t.Helper()
	reg := prometheus.NewRegistry()
	g, logs := newLoggedGateway(t, nil, func(c *Config) { c.Registerer = reg })
	return g, reg, logs
}

func openPeerSession(t *testing.T, g *Gateway, p Policy) *Session {
	t.Helper()
	s, err := g.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// getVia asks s for target from this process, on a new connection, and
// returns the body, or the error when the session served nothing.
func getVia(t *testing.T, s *Session, target string, dial func(context.Context, string, string) (net.Conn, error)) (string, error) {
	t.Helper()
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: s.Addr()}), DialContext: dial, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: testTimeout}
	resp, err := client.Get(target)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// warnLines are the log's Warn lines about refused connections.
func warnLines(logs *apitest.Buffer) []string {
	var out []string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "egress connection refused") {
			out = append(out, line)
		}
	}
	return out
}

// TestHostilePeerUID: a session for a browser that runs as a user of its
// own serves that user's processes and no other: not this process (root),
// not a process of another user. A refused connection reaches nothing, is
// counted, and is logged at Warn once per user.
func TestHostilePeerUID(t *testing.T) {
	uid, _ := systemUser(t, allowedUser)
	up, hits := newUpstream(t)
	g, reg, logs := peerGateway(t)
	s := openPeerSession(t, g, Policy{AllowPrivate: true, Peer: PeerUID(uid)})

	for i := range 2 {
		if body, err := getVia(t, s, up.URL+"/from-root", nil); err == nil {
			t.Fatalf("request %d from this process (root) was served: %q", i, body)
		}
	}
	if out, ok := newCurl(t, otherUser, s.Addr(), up.URL+"/from-nobody").run(t); ok {
		t.Fatalf("curl as %s was served: %s", otherUser, out)
	}
	if n := hits.get(); n != 0 {
		t.Fatalf("the upstream got %d requests from refused peers", n)
	}
	if got := refusedPeers(t, reg, peerRefusedUser); got != 3 {
		t.Fatalf("refused peers (user) = %v, want 3", got)
	}
	warns := warnLines(logs)
	if len(warns) != 2 || !strings.Contains(warns[0], "peer_uid=0") || !strings.Contains(warns[0], "reason=user") {
		t.Fatalf("want one Warn for root and one for %s, got:\n%s", otherUser, strings.Join(warns, ""))
	}

	out, ok := newCurl(t, allowedUser, s.Addr(), up.URL+"/from-pictor").run(t)
	if !ok || decodeSeen(t, out).RequestURI != "/from-pictor" {
		t.Fatalf("curl as %s, the allowed user: ok %v, %s", allowedUser, ok, out)
	}
	if n := hits.get(); n != 1 {
		t.Fatalf("the upstream got %d requests, want the allowed one", n)
	}
}

// TestHostilePeerProcess: a session for a browser that shares its user
// serves only the sockets of the processes it names: another process of
// the same user is refused, whether that user is another (pictor) or this
// process's own (root). The iteration of the processes stops at the one
// that holds the socket.
func TestHostilePeerProcess(t *testing.T) {
	uid, _ := systemUser(t, allowedUser)
	up, hits := newUpstream(t)
	g, reg, logs := peerGateway(t)

	t.Run("another process of the browser's user", func(t *testing.T) {
		// The session reads the processes while it accepts: under mu,
		// since the connections come from other processes.
		var (
			mu      sync.Mutex
			pids    []int
			stopped []int // where each iteration stopped
		)
		procs := func(yield func(int) bool) {
			mu.Lock()
			named := slices.Clone(pids)
			mu.Unlock()
			for _, pid := range named {
				if !yield(pid) {
					mu.Lock()
					stopped = append(stopped, pid)
					mu.Unlock()
					return
				}
			}
		}
		stops := func() []int {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(stopped)
		}
		s := openPeerSession(t, g, Policy{AllowPrivate: true, Peer: PeerProcess(uid, procs)})
		allowed := newCurl(t, allowedUser, s.Addr(), up.URL+"/from-the-browser")
		other := newCurl(t, allowedUser, s.Addr(), up.URL+"/from-another")
		mu.Lock()
		pids = []int{os.Getpid(), allowed.cmd.Process.Pid}
		mu.Unlock()

		before := hits.get()
		if out, ok := other.run(t); ok {
			t.Fatalf("another process of %s was served: %s", allowedUser, out)
		}
		if got := refusedPeers(t, reg, peerRefusedProcess); got != 1 {
			t.Fatalf("refused peers (process) = %v, want 1", got)
		}
		if got := stops(); len(got) != 0 {
			t.Fatalf("the iteration stopped at %v for a socket no named process holds", got)
		}
		out, ok := allowed.run(t)
		if !ok || decodeSeen(t, out).RequestURI != "/from-the-browser" {
			t.Fatalf("the named process: ok %v, %s", ok, out)
		}
		if n := hits.get() - before; n != 1 {
			t.Fatalf("the upstream got %d requests, want the named process's one", n)
		}
		if got := stops(); len(got) != 1 || got[0] != allowed.cmd.Process.Pid {
			t.Fatalf("the iteration stopped at %v, want at %d, which holds the socket", got, allowed.cmd.Process.Pid)
		}
	})

	t.Run("another process of this process's user", func(t *testing.T) {
		self := func(yield func(int) bool) { yield(os.Getpid()) }
		s := openPeerSession(t, g, Policy{AllowPrivate: true, Peer: PeerProcess(uint32(os.Geteuid()), self)})
		before := hits.get()
		if out, ok := newCurl(t, "", s.Addr(), up.URL+"/from-a-root-process").run(t); ok {
			t.Fatalf("another root process was served: %s", out)
		}
		if got := refusedPeers(t, reg, peerRefusedProcess); got != 2 {
			t.Fatalf("refused peers (process) = %v, want 2", got)
		}
		body, err := getVia(t, s, up.URL+"/from-this-process", nil)
		if err != nil || decodeSeen(t, body).RequestURI != "/from-this-process" {
			t.Fatalf("this process, which the rule names: %q, %v", body, err)
		}
		if n := hits.get() - before; n != 1 {
			t.Fatalf("the upstream got %d requests, want this process's one", n)
		}
	})

	if warns := warnLines(logs); len(warns) != 2 {
		t.Fatalf("want one Warn per user refused as another process (pictor, root), got:\n%s", strings.Join(warns, ""))
	}
}

// TestHostilePeerDefault: a session whose policy names no Peer serves the
// connections of its own Dial and nothing else, even from this process.
func TestHostilePeerDefault(t *testing.T) {
	up, hits := newUpstream(t)
	g, reg, _ := peerGateway(t)
	s := openPeerSession(t, g, Policy{AllowPrivate: true})

	if body, err := getVia(t, s, up.URL+"/plain-dial", nil); err == nil {
		t.Fatalf("a connection not made by Session.Dial was served: %q", body)
	}
	if out, ok := newCurl(t, allowedUser, s.Addr(), up.URL+"/from-pictor").run(t); ok {
		t.Fatalf("curl as %s was served: %s", allowedUser, out)
	}
	if hits.get() != 0 {
		t.Fatal("the upstream got a request from a refused peer")
	}
	if p, u := refusedPeers(t, reg, peerRefusedProcess), refusedPeers(t, reg, peerRefusedUser); p != 1 || u != 1 {
		t.Fatalf("refused peers: process %v, user %v; want 1 (this process) and 1 (pictor)", p, u)
	}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) { return s.Dial(ctx) }
	for i := range 3 {
		body, err := getVia(t, s, up.URL+"/dialed", dial)
		if err != nil || decodeSeen(t, body).RequestURI != "/dialed" {
			t.Fatalf("request %d through Session.Dial: %q, %v", i, body, err)
		}
	}
	s.mu.Lock()
	pending := len(s.dialed)
	s.mu.Unlock()
	if pending != 0 {
		t.Fatalf("%d sockets of Dial still expected after they were accepted", pending)
	}
}

// TestLookupSocket: the kernel names the socket at the other end of a
// loopback connection, with its user and inode, and answers ENOENT for a
// socket that is not there.
func TestLookupSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var inode uint32
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { inode, _ = socketInode(fd) })
	}}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	local, _ := addrPort(sc.LocalAddr())
	remote, _ := addrPort(sc.RemoteAddr())
	owner, err := lookupSocket(remote, local)
	if err != nil {
		t.Fatal(err)
	}
	if owner.inode == 0 || owner.inode != inode || owner.uid != uint32(os.Geteuid()) {
		t.Fatalf("lookup = %+v, want inode %d of uid %d", owner, inode, os.Geteuid())
	}
	if !holdsSocket(os.Getpid(), owner.inode) {
		t.Fatalf("this process does not hold socket %d", owner.inode)
	}
	gone := netip.AddrPortFrom(remote.Addr(), remote.Port()+1)
	if remote.Port() == 65535 {
		gone = netip.AddrPortFrom(remote.Addr(), 1)
	}
	if _, err := lookupSocket(gone, local); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("lookup of a socket that is not there: %v, want ENOENT", err)
	}
}

// diagAnswerSeeds are answers as the kernel writes them, for the fuzz
// target: a socket of uid 999, and ENOENT.
func diagAnswerSeeds(local, remote netip.AddrPort) [][]byte {
	msg := make([]byte, nlmsgHdrLen+diagMsgLen)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], 20) // SOCK_DIAG_BY_FAMILY
	body := msg[nlmsgHdrLen:]
	body[0] = family(local.Addr())
	body[1] = 1 // established
	putSockID(body[4:4+diagSockIDLen], local, remote)
	ne.PutUint32(body[4+diagSockIDLen+12:], 999)
	ne.PutUint32(body[4+diagSockIDLen+16:], 40829)

	errMsg := make([]byte, nlmsgHdrLen+4+nlmsgHdrLen+diagReqLen)
	ne.PutUint32(errMsg[0:], uint32(len(errMsg)))
	ne.PutUint16(errMsg[4:], 2) // NLMSG_ERROR
	enoent := -int32(syscall.ENOENT)
	ne.PutUint32(errMsg[nlmsgHdrLen:], uint32(enoent))
	return [][]byte{msg, errMsg, msg[:nlmsgHdrLen+10], {}}
}

// FuzzDiagAnswer: no answer makes the parser panic or read past it, and
// an answer it accepts is about the socket asked for.
func FuzzDiagAnswer(f *testing.F) {
	local := netip.MustParseAddrPort("127.0.0.1:40672")
	remote := netip.MustParseAddrPort("127.0.0.1:37629")
	seeds := diagAnswerSeeds(local, remote)
	for _, s := range seeds {
		f.Add(s)
	}
	owner, err := parseDiagAnswer(seeds[0], local, remote)
	if err != nil || owner != (socketOwner{uid: 999, inode: 40829}) {
		f.Fatalf("seed answer: %+v, %v", owner, err)
	}
	if _, err := parseDiagAnswer(seeds[1], local, remote); !errors.Is(err, syscall.ENOENT) {
		f.Fatalf("seed error answer: %v, want ENOENT", err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := parseDiagAnswer(b, local, remote)
		if err != nil {
			return
		}
		want := make([]byte, diagSockIDLen)
		putSockID(want, local, remote)
		if len(b) < nlmsgHdrLen+diagMsgLen || !bytes.Equal(b[nlmsgHdrLen+4:nlmsgHdrLen+4+36], want[:36]) {
			t.Fatalf("accepted an answer about another socket: %x", b)
		}
	})
}

// BenchmarkPeerCheck: what the check adds to a connection: a loopback
// dial and accept, alone ("accept") and with each rule's check. The
// process rule reads this process's descriptors, padded to 32: the
// headless shell's network service, which the rule reads first once it
// found it, held 19 to 30.
func BenchmarkPeerCheck(b *testing.B) {
	self := func(yield func(int) bool) { yield(os.Getpid()) }
	rules := []struct {
		name string
		peer *Peer
	}{
		{"accept", nil},
		{"uid", &Peer{kind: peerUID, uid: uint32(os.Geteuid())}},
		{"process", &Peer{kind: peerProcess, uid: uint32(os.Geteuid()), procs: iter.Seq[int](self)}},
	}
	for _, r := range rules {
		b.Run(r.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			var l net.Listener = ln
			if r.peer != nil {
				s := &Session{policy: Policy{Peer: *r.peer}, dialed: map[uint32]struct{}{}, ln: ln}
				l = &peerListener{Listener: ln, s: s}
			}
			fds := 0
			if r.peer != nil && r.peer.kind == peerProcess {
				fds = padDescriptors(b, 32)
			}
			addr := ln.Addr().String()
			b.ReportAllocs()
			for b.Loop() {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				sc, err := l.Accept()
				if err != nil {
					b.Fatal(err)
				}
				sc.Close()
				c.Close()
			}
			if fds > 0 {
				b.ReportMetric(float64(fds), "fds")
			}
		})
	}
}

// padDescriptors opens /dev/null until this process holds n descriptors,
// and returns how many it holds.
func padDescriptors(b *testing.B, n int) int {
	for {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			b.Fatal(err)
		}
		if len(fds) >= n {
			return len(fds)
		}
		f, err := os.Open(os.DevNull)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
	}
}

// BenchmarkPeerAdmit: the check alone, on one accepted connection, per
// rule: the kernel lookup (uid), and the lookup with the read of this
// process's descriptors (process).
func BenchmarkPeerAdmit(b *testing.B) {
	self := func(yield func(int) bool) { yield(os.Getpid()) }
	rules := []struct {
		name string
		peer Peer
	}{
		{"uid", PeerUID(uint32(os.Geteuid()))},
		{"process", PeerProcess(uint32(os.Geteuid()), self)},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	sc, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Close()
	for _, r := range rules {
		b.Run(r.name, func(b *testing.B) {
			fds := 0
			if r.peer.kind == peerProcess {
				fds = padDescriptors(b, 32)
			}
			s := &Session{policy: Policy{Peer: r.peer}, dialed: map[uint32]struct{}{}}
			b.ReportAllocs()
			for b.Loop() {
				if refused := s.admit(sc); refused != nil {
					b.Fatalf("refused: %+v", refused)
				}
			}
			if fds > 0 {
				b.ReportMetric(float64(fds), "fds")
			}
		})
	}
}
