package apitest

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// TestClosedAddr: the address refuses connections, and no server can
// take its port while the test runs.
func TestClosedAddr(t *testing.T) {
	addr := ClosedAddr(t)
	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want a refused connection", addr, err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("a server could listen on %s", addr)
	}
}
