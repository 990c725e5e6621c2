package benchtest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/bench/load"
)

// Result builds a Result whose samples are spread evenly over [lo, hi].
func Result(name string, clients, ok, errs int, elapsed, lo, hi time.Duration) *load.Result {
	r := &load.Result{Name: name, Clients: clients, Unit: "render", Requests: ok + errs, Errors: errs, Elapsed: elapsed}
	for i := range ok {
		v := lo
		if ok > 1 {
			v = lo + (hi-lo)*time.Duration(i)/time.Duration(ok-1)
		}
		r.Latency.Record(v)
	}
	if errs > 0 {
		r.FirstError = "POST /v1/image: 503 Service Unavailable"
	}
	return r
}

// PNGHead returns the first 24 bytes of a PNG of size w×h.
func PNGHead(w, h uint32) []byte {
	b := []byte("\x89PNG\r\n\x1a\n")
	b = append(b, 0, 0, 0, 13)
	b = append(b, "IHDR"...)
	b = binary.BigEndian.AppendUint32(b, w)
	return binary.BigEndian.AppendUint32(b, h)
}

// RequireLoopbackAliases fails the test where the loopback addresses
// beyond 127.0.0.1 cannot be bound: the embed card's sites need them
// (Linux gives every machine all of 127.0.0.0/8).
func RequireLoopbackAliases(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("cannot listen on 127.0.0.2, which the embed card's sites need: %v", err)
	}
	ln.Close()
}

// CannedServer answers every request on loopback with a fixed answer:
// a 200 of body, or after closeAfter answers on a connection a last one
// with "Connection: close" (0: never). It counts connections accepted.
type CannedServer struct {
	// Accepted counts the connections accepted.
	Accepted atomic.Int64

	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn // closed at cleanup, clients' idle ones included
}

// Addr returns the server's host:port.
func (s *CannedServer) Addr() string { return s.ln.Addr().String() }

// StartCanned starts a CannedServer answering body as image/jpeg; it
// stops at the end of the test.
func StartCanned(t testing.TB, body []byte, closeAfter int) *CannedServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &CannedServer{ln: ln}
	answer := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nServer: canned\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	last := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.Accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 1; ; n++ {
					// Requests have no body: read up to the blank line.
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
					}
					if closeAfter > 0 && n == closeAfter {
						c.Write(last)
						return
					}
					if _, err := c.Write(answer); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}
