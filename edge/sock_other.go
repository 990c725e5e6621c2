//go:build !linux

package edge

import (
	"net"
	"syscall"
)

// sock is Linux's raw socket I/O (sock_linux.go); elsewhere a connection
// reads and writes through net.Conn, and sends no body with sendfile.
type sock struct{ rc syscall.RawConn }

func newSock(net.Conn) *sock { return nil }

func (*sock) read([]byte) (int, error)       { panic("no raw socket I/O on this system") }
func (*sock) write(a, b []byte) (int, error) { panic("no raw socket I/O on this system") }
func (*sock) writeMore([]byte) error         { panic("no raw socket I/O on this system") }
