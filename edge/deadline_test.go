package edge

import (
	"errors"
	"net"
	"os"
	"runtime"
	"testing"
	"time"
)

// deadlineConns runs test on a connection reading through the raw socket
// and on one reading through net.Conn.
func deadlineConns(t *testing.T, test func(t *testing.T, c *conn, client net.Conn)) {
	for _, raw := range []bool{true, false} {
		name := map[bool]string{true: "raw socket", false: "net.Conn"}[raw]
		t.Run(name, func(t *testing.T) {
			client, server := tcpPair(t)
			c := &conn{Conn: server}
			if raw {
				if c.sock = newSock(server); c.sock == nil {
					t.Fatal("no raw socket for a TCP connection")
				}
			}
			test(t, c, client)
		})
	}
}

func arms(c *conn) int {
	c.deadline.mu.Lock()
	defer c.deadline.mu.Unlock()
	return c.deadline.arms
}

// TestReadDeadlineLaterIsNoted: a deadline later than the poller's (or
// none after one) is noted, not set, and a read with data to read gets it.
func TestReadDeadlineLaterIsNoted(t *testing.T) {
	deadlineConns(t, func(t *testing.T, c *conn, client net.Conn) {
		now := time.Now()
		if err := c.SetReadDeadline(now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			if err := c.SetReadDeadline(now.Add(time.Hour + time.Duration(i)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		c.SetReadDeadline(time.Time{})
		if n := arms(c); n != 1 {
			t.Fatalf("the poller's deadline was set %d times, want once", n)
		}
		client.Write([]byte("GET"))
		p := make([]byte, 8)
		if n, err := c.read(p); err != nil || string(p[:n]) != "GET" {
			t.Fatalf("read %q, %v", p[:n], err)
		}
	})
}

// TestReadDeadlineSoonerIsSet: the first deadline, and one sooner than
// the poller's, are set at once: a read waits no longer than they (were
// they only noted, it would wait for ever, or for the hour).
func TestReadDeadlineSoonerIsSet(t *testing.T) {
	deadlineConns(t, func(t *testing.T, c *conn, client net.Conn) {
		p := make([]byte, 8)
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if n, err := c.read(p); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the first deadline: read %d, %v; want os.ErrDeadlineExceeded", n, err)
		}
		// Later than the poller's, which has passed: the read moves it.
		c.SetReadDeadline(time.Now().Add(time.Hour))
		client.Write([]byte("GET"))
		if n, err := c.read(p); err != nil || string(p[:n]) != "GET" {
			t.Fatalf("read %q, %v", p[:n], err)
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if n, err := c.read(p); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a deadline sooner than the poller's: read %d, %v; want os.ErrDeadlineExceeded", n, err)
		}
		if n := arms(c); n != 3 {
			t.Fatalf("the poller's deadline was set %d times, want 3", n)
		}
	})
}

// TestReadDeadlinePassedEarly: when the poller's deadline passes before
// the one asked for, a read refused for it (data waiting) or woken by it
// (none yet) moves it and goes on; the deadline asked for still ends a
// read that waits past it.
func TestReadDeadlinePassedEarly(t *testing.T) {
	deadlineConns(t, func(t *testing.T, c *conn, client net.Conn) {
		p := make([]byte, 8)
		c.SetReadDeadline(time.Now().Add(-time.Second)) // passed: the poller refuses reads at once
		c.SetReadDeadline(time.Now().Add(time.Hour))
		client.Write([]byte("one"))
		if n, err := c.read(p); err != nil || string(p[:n]) != "one" {
			t.Fatalf("a read refused for the poller's deadline: %q, %v", p[:n], err)
		}

		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		c.SetReadDeadline(time.Now().Add(time.Hour))
		before := arms(c)
		got := make(chan string, 1)
		go func() {
			n, err := c.read(p)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- string(p[:n])
		}()
		// The read waits, is woken by the poller's deadline, and moves it.
		for arms(c) == before {
			runtime.Gosched()
		}
		client.Write([]byte("two"))
		if s := <-got; s != "two" {
			t.Fatalf("a read woken by the poller's deadline: %q", s)
		}

		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
		if n, err := c.read(p); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("past the deadline asked for: read %d, %v; want os.ErrDeadlineExceeded", n, err)
		}
	})
}

// BenchmarkReadDeadlines: what fasthttp's two deadlines per request cost,
// set on the poller each time (net.Conn, as before readDeadline) and
// through readDeadline, side by side.
func BenchmarkReadDeadlines(b *testing.B) {
	for _, lazy := range []bool{false, true} {
		b.Run(map[bool]string{false: "poller each time", true: "readDeadline"}[lazy], func(b *testing.B) {
			_, server := tcpPair(b)
			c := &conn{Conn: server, sock: newSock(server)}
			var set func(time.Time) error = server.SetReadDeadline
			if lazy {
				set = c.SetReadDeadline
			}
			for b.Loop() {
				set(time.Now().Add(2 * time.Minute))
				set(time.Now().Add(10 * time.Second))
			}
		})
	}
}
