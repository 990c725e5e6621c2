package edge

import (
	"io"
	"net"
	"syscall"
	"unsafe"
)

// sock reads and writes a connection's socket with raw system calls on its
// non-blocking descriptor, waiting in Go's poller (with the connection's
// deadlines) only when the socket is not ready. A socket read or write
// that does not block takes microseconds, but Go's syscall.Syscall marks
// the goroutine's P as in a system call for it, and on a loopback or a
// busy host such a call often outlasts the 20 µs after which sysmon hands
// the P to another thread: a wake-up, a thread switch and sysmon polling
// at its fastest, for a write that never blocked (docs/decisions.md, "A
// fourth pass"). The functions are bound once per connection so that a
// request allocates nothing.
type sock struct {
	rc             syscall.RawConn
	readFn, sendFn func(fd uintptr) bool
	p              []byte    // the read's buffer
	out            [2][]byte // what a write has still to send
	flags          uintptr   // a one-buffer write's send flags
	iov            [2]syscall.Iovec
	n              int
	err            error
}

// newSock returns c's raw socket, or nil for anything but a TCP connection.
func newSock(c net.Conn) *sock {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &sock{rc: rc}
	s.readFn, s.sendFn = s.readOnce, s.sendOnce
	return s
}

func (s *sock) read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.p, s.n, s.err = p, 0, nil
	err := s.rc.Read(s.readFn)
	n := s.n
	if err == nil {
		err = s.err
	}
	s.p, s.err = nil, nil
	if n == 0 && err == nil {
		err = io.EOF
	}
	return n, err
}

func (s *sock) readOnce(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&s.p[0])), uintptr(len(s.p)))
		switch e {
		case 0:
			s.n = int(n)
			if n > 0 {
				raceAcquireRead(fd)
			}
			return true
		case syscall.EAGAIN:
			return false
		case syscall.EINTR:
			continue
		default:
			s.err = &net.OpError{Op: "read", Net: "tcp", Err: e}
			return true
		}
	}
}

// write sends a then b (either may be empty) and returns how many bytes
// of them went out.
func (s *sock) write(a, b []byte) (int, error) { return s.send(a, b, 0) }

// writeMore sends p with MSG_MORE (an answer's headers ahead of its
// sendfile), so that the kernel fills segments with what follows.
func (s *sock) writeMore(p []byte) error {
	_, err := s.send(p, nil, syscall.MSG_MORE)
	return err
}

func (s *sock) send(a, b []byte, flags uintptr) (int, error) {
	s.out, s.flags = [2][]byte{a, b}, flags
	s.n, s.err = 0, nil
	err := s.rc.Write(s.sendFn)
	n := s.n
	if err == nil {
		err = s.err
	}
	s.out, s.err = [2][]byte{}, nil
	s.iov = [2]syscall.Iovec{}
	return n, err
}

func (s *sock) sendOnce(fd uintptr) bool {
	raceReleaseWrite(fd)
	for len(s.out[0])+len(s.out[1]) > 0 {
		if len(s.out[0]) == 0 {
			s.out = [2][]byte{s.out[1], nil}
		}
		var n uintptr
		var e syscall.Errno
		if len(s.out[1]) == 0 {
			n, _, e = syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&s.out[0][0])), uintptr(len(s.out[0])),
				s.flags|syscall.MSG_NOSIGNAL, 0, 0)
		} else {
			for i, p := range s.out {
				s.iov[i].Base = &p[0]
				s.iov[i].SetLen(len(p))
			}
			n, _, e = syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&s.iov[0])), 2)
		}
		switch e {
		case 0:
		case syscall.EAGAIN:
			return false
		case syscall.EINTR:
			continue
		default:
			s.err = &net.OpError{Op: "write", Net: "tcp", Err: e}
			return true
		}
		s.n += int(n)
		for i := 0; i < 2 && n > 0; i++ {
			k := min(int(n), len(s.out[i]))
			s.out[i] = s.out[i][k:]
			n -= uintptr(k)
		}
	}
	return true
}
