package edge

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSockWritesWhole: a write larger than the socket's buffers leaves
// whole and in order: the raw writev goes out in parts, and the sock
// waits in the poller for the reader between them.
func TestSockWritesWhole(t *testing.T) {
	client, server := tcpPair(t)
	if err := server.(*net.TCPConn).SetWriteBuffer(8 << 10); err != nil {
		t.Fatal(err)
	}
	s := newSock(server)
	a, b := noisy(70<<10), noisy(1<<20)
	want := append(append([]byte{}, a...), b...)
	got := make(chan []byte, 1)
	go func() {
		var buf bytes.Buffer
		p := make([]byte, 4096) // many small reads
		for buf.Len() < len(want) {
			n, err := client.Read(p)
			buf.Write(p[:n])
			if err != nil {
				break
			}
		}
		got <- buf.Bytes()
	}()
	n, err := s.write(a, b)
	if err != nil || n != len(want) {
		t.Fatalf("write: %d, %v; want %d, nil", n, err, len(want))
	}
	if g := <-got; !bytes.Equal(g, want) {
		t.Fatalf("the reader got %d bytes, not the %d written in order", len(g), len(want))
	}
	if n, err := s.write(nil, []byte("tail")); n != 4 || err != nil {
		t.Fatalf("a write of its second part only: %d, %v", n, err)
	}
	tail := make([]byte, 4)
	if _, err := io.ReadFull(client, tail); err != nil || string(tail) != "tail" {
		t.Fatalf("read %q, %v", tail, err)
	}
}

// TestSockReads: a read gets what the peer wrote, waits for it with the
// connection's deadline, and ends with io.EOF when the peer closes; a
// write to a peer that reset the connection fails (no SIGPIPE kills the
// process).
func TestSockReads(t *testing.T) {
	client, server := tcpPair(t)
	s := newSock(server)
	p := make([]byte, 64)
	if n, err := s.read(p[:0]); n != 0 || err != nil {
		t.Fatalf("an empty read: %d, %v", n, err)
	}

	server.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if n, err := s.read(p); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read past its deadline: %d, %v; want os.ErrDeadlineExceeded", n, err)
	}
	var ne net.Error
	if _, err := s.read(p); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a read past its deadline is not a net.Error timeout: %v", err)
	}
	server.SetReadDeadline(time.Time{})

	go client.Write([]byte("GET / HTTP/1.1\r\n"))
	if n, err := s.read(p); err != nil || string(p[:n]) != "GET / HTTP/1.1\r\n" {
		t.Fatalf("read %q, %v", p[:n], err)
	}

	client.Close()
	if n, err := s.read(p); n != 0 || err != io.EOF {
		t.Fatalf("a read after the peer closed: %d, %v; want io.EOF", n, err)
	}

	client, server = tcpPair(t)
	s = newSock(server)
	client.(*net.TCPConn).SetLinger(0) // closing resets the connection
	client.Close()
	var err error
	for range 3 { // the first write after a reset may still be taken
		if _, err = s.write(noisy(64<<10), nil); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("writes to a reset connection: %v; want EPIPE or ECONNRESET", err)
	}
}
