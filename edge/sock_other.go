//go:build !linux

package edge

import "net"

// sock is Linux's raw socket I/O (sock_linux.go); elsewhere a connection
// reads and writes through net.Conn.
type sock struct{}

func newSock(net.Conn) *sock { return nil }

func (*sock) read([]byte) (int, error)       { panic("no raw socket I/O on this system") }
func (*sock) write(a, b []byte) (int, error) { panic("no raw socket I/O on this system") }
