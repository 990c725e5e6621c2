package egress

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// socketOwner is what the kernel says of a local TCP socket: the user that
// created it and its inode, which names it in /proc/<pid>/fd as
// "socket:[inode]".
type socketOwner struct {
	uid   uint32
	inode uint32
}

// The sizes of the inet_diag structures (linux/inet_diag.h).
const (
	nlmsgHdrLen   = 16                     // struct nlmsghdr
	diagSockIDLen = 48                     // struct inet_diag_sockid
	diagReqLen    = 8 + diagSockIDLen      // struct inet_diag_req_v2
	diagMsgLen    = 4 + diagSockIDLen + 20 // struct inet_diag_msg
	// diagNoCookie (INET_DIAG_NOCOOKIE) asks for a socket by its addresses
	// alone.
	diagNoCookie = ^uint32(0)
)

// lookupSocket asks the kernel (NETLINK_SOCK_DIAG, inet_diag) who holds the
// TCP socket of this network namespace whose own address is local and
// whose peer is remote: for a connection accepted on loopback, local is the
// accepted connection's remote address. It costs one netlink round trip
// and needs no privilege. A socket that is gone (or never was) answers
// ENOENT.
func lookupSocket(local, remote netip.AddrPort) (socketOwner, error) {
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	if local.Addr().Is4() != remote.Addr().Is4() {
		return socketOwner{}, fmt.Errorf("sock_diag: %s and %s are not of one family", local, remote)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return socketOwner{}, fmt.Errorf("sock_diag socket: %w", os.NewSyscallError("socket", err))
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, diagRequest(local, remote), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return socketOwner{}, fmt.Errorf("sock_diag request: %w", os.NewSyscallError("sendto", err))
	}
	// The kernel answers a sock_diag request while it handles the send, so
	// the answer is queued by now: never wait for one.
	var buf [512]byte
	n, _, err := unix.Recvfrom(fd, buf[:], unix.MSG_DONTWAIT)
	if err != nil {
		return socketOwner{}, fmt.Errorf("sock_diag answer: %w", os.NewSyscallError("recvfrom", err))
	}
	return parseDiagAnswer(buf[:n], local, remote)
}

// diagRequest is the SOCK_DIAG_BY_FAMILY request for the one TCP socket
// whose own address is local and whose peer is remote.
func diagRequest(local, remote netip.AddrPort) []byte {
	b := make([]byte, nlmsgHdrLen+diagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(b[8:], 1) // sequence
	r := b[nlmsgHdrLen:]
	r[0] = family(local.Addr())
	r[1] = unix.IPPROTO_TCP
	ne.PutUint32(r[4:], ^uint32(0)) // every state
	putSockID(r[8:8+diagSockIDLen], local, remote)
	return b
}

// putSockID writes an inet_diag_sockid: the ports and addresses in network
// order, no interface, no cookie.
func putSockID(id []byte, local, remote netip.AddrPort) {
	binary.BigEndian.PutUint16(id[0:], local.Port())
	binary.BigEndian.PutUint16(id[2:], remote.Port())
	la, ra := local.Addr().AsSlice(), remote.Addr().AsSlice()
	copy(id[4:20], la)
	copy(id[20:36], ra)
	binary.NativeEndian.PutUint32(id[40:], diagNoCookie)
	binary.NativeEndian.PutUint32(id[44:], diagNoCookie)
}

func family(a netip.Addr) byte {
	if a.Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// parseDiagAnswer reads the kernel's answer to diagRequest(local, remote):
// the socket's owner, or the errno the kernel answered (ENOENT when there
// is no such socket). An answer about any other socket is refused.
func parseDiagAnswer(b []byte, local, remote netip.AddrPort) (socketOwner, error) {
	ne := binary.NativeEndian
	if len(b) < nlmsgHdrLen {
		return socketOwner{}, fmt.Errorf("%w: %d bytes", errNoAnswer, len(b))
	}
	n := ne.Uint32(b[0:])
	if n < nlmsgHdrLen || uint64(n) > uint64(len(b)) {
		return socketOwner{}, fmt.Errorf("%w: length %d of %d bytes", errNoAnswer, n, len(b))
	}
	body := b[nlmsgHdrLen:n]
	switch typ := ne.Uint16(b[4:]); typ {
	case unix.NLMSG_ERROR:
		if len(body) < 4 {
			return socketOwner{}, fmt.Errorf("%w: short error", errNoAnswer)
		}
		code := int32(ne.Uint32(body))
		if code >= 0 {
			return socketOwner{}, fmt.Errorf("%w: acknowledged without an answer", errNoAnswer)
		}
		return socketOwner{}, fmt.Errorf("sock_diag: %w", syscall.Errno(-int64(code)))
	case unix.SOCK_DIAG_BY_FAMILY:
		if len(body) < diagMsgLen {
			return socketOwner{}, fmt.Errorf("%w: %d-byte message", errNoAnswer, len(body))
		}
		want := make([]byte, diagSockIDLen)
		putSockID(want, local, remote)
		id := body[4 : 4+diagSockIDLen]
		// The interface and the cookie are the socket's own; the addresses
		// and ports must be those asked for.
		if body[0] != family(local.Addr()) || string(id[:36]) != string(want[:36]) {
			return socketOwner{}, fmt.Errorf("%w: about another socket", errNoAnswer)
		}
		m := body[4+diagSockIDLen:]
		return socketOwner{uid: ne.Uint32(m[12:]), inode: ne.Uint32(m[16:])}, nil
	default:
		return socketOwner{}, fmt.Errorf("%w: message type %d", errNoAnswer, typ)
	}
}

// socketLink is how /proc/<pid>/fd/<n> reads for the socket inode.
func socketLink(inode uint32) string {
	return "socket:[" + strconv.FormatUint(uint64(inode), 10) + "]"
}

// holdsSocket reports whether process pid has the socket inode open. It
// reads /proc/<pid>/fd, which needs the right to inspect the process
// (root, or its own user while it is dumpable: Chromium's network service
// is).
func holdsSocket(pid int, inode uint32) bool {
	dir, err := os.Open("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return false
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return false
	}
	want := socketLink(inode)
	buf := make([]byte, 64)
	dfd := int(dir.Fd())
	for _, name := range names {
		n, err := unix.Readlinkat(dfd, name, buf)
		if err == nil && string(buf[:n]) == want {
			return true
		}
	}
	return false
}

// socketInode is the inode of the socket fd.
func socketInode(fd uintptr) (uint32, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(fd), &st); err != nil {
		return 0, os.NewSyscallError("fstat", err)
	}
	return uint32(st.Ino), nil
}
