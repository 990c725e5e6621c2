package edge

import (
	"errors"
	"os"
	"sync"
	"time"
)

// readDeadline puts off moving a connection's read deadline later. fasthttp
// sets it twice per request (the idle timeout before the next request, the
// header timeout from its first byte), each time a timer change in Go's
// poller under its lock: about 2 % of an OG hit's CPU. A deadline later
// than the one the poller holds is only noted: the poller's, being sooner,
// still bounds every wait, and when it passes before the one asked for (a
// read is refused or woken with os.ErrDeadlineExceeded too soon), the read
// moves it to the one asked for and tries again. A deadline sooner than
// the poller's, or one where it holds none, is set at once, so that no
// read ever waits past what was asked.
type readDeadline struct {
	mu    sync.Mutex // SetReadDeadline may come from another goroutine (an upload's finish)
	want  time.Time  // the deadline asked for; zero: none
	armed time.Time  // the poller's; zero: none
	arms  int        // how often the poller's was set (tests)
}

// SetReadDeadline sets the deadline of c's reads, moving the poller's only
// when it must (readDeadline).
func (c *conn) SetReadDeadline(t time.Time) error {
	d := &c.deadline
	d.mu.Lock()
	defer d.mu.Unlock()
	d.want = t
	if !d.armed.IsZero() && (t.IsZero() || !t.Before(d.armed)) {
		return nil
	}
	return c.arm()
}

// SetDeadline sets both deadlines; the read one through SetReadDeadline.
func (c *conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

// arm gives the poller the deadline asked for; d.mu is held.
func (c *conn) arm() error {
	d := &c.deadline
	if err := c.Conn.SetReadDeadline(d.want); err != nil {
		return err
	}
	d.armed = d.want
	d.arms++
	return nil
}

// early reports whether err is the poller's deadline passing before the
// one asked for, having moved it to that one: the read is to be tried
// again.
func (c *conn) early(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	d := &c.deadline
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.armed.Equal(d.want) || !d.want.IsZero() && !time.Now().Before(d.want) {
		return false
	}
	return c.arm() == nil
}
