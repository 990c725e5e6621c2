package edge

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/edge/cache"
	"github.com/pictorhq/pictor/edge/linger"
	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// Accept back-off after an error, as net/http does: 5 ms doubling to 1 s.
const (
	acceptDelayMin = 5 * time.Millisecond
	acceptDelayMax = time.Second
	// refuseRetryAfter is the Retry-After of a refused connection.
	refuseRetryAfter = 5
	// refuseWriteTimeout bounds writing a refusal to a new connection
	// (whose socket buffer is empty: it never waits in practice).
	refuseWriteTimeout = time.Second
)

// Why a connection was refused, as the metric's label says it.
const (
	refusedLimit       = "limit"
	refusedPerIP       = "per_ip"
	refusedDescriptors = "descriptors"
)

// listener is the edge's listener. It never stops accepting: an error
// (out of file descriptors, above all) is retried after a bounded back-off
// instead of ending fasthttp's Serve. It admits at most maxConns connections
// at a time and maxPerIP from one address, and answers one more at once
// with the standard error body instead of letting it wait. When the process
// is out of descriptors it frees a spare one it keeps for the purpose,
// accepts the waiting connection, answers it 503 and takes the spare back,
// so that clients are answered instead of hanging in the backlog.
//
// It tracks the connections it admitted until fasthttp closes them, so
// that Stop can close those a drain leaves behind and wait for their
// handlers to return.
type listener struct {
	net.Listener
	maxConns, maxPerIP int
	refused            *prometheus.CounterVec
	replies            map[string][]byte // refusal answers, by reason

	mu      sync.Mutex
	conns   map[*conn]struct{}
	perIP   map[netip.Addr]int
	emptied chan struct{} // closed when conns becomes empty, if made

	spareMu   sync.Mutex
	spare     int // the spare descriptor, -1 when not held
	exhausted atomic.Bool

	closed    chan struct{}
	closeOnce sync.Once
	// accepting is closed when Accept is first called: the server serves.
	accepting     chan struct{}
	acceptingOnce sync.Once

	// Used by Accept alone (fasthttp calls it from one goroutine).
	lastLog map[string]time.Time
}

func newListener(inner net.Listener, maxConns, maxPerIP int, refused *prometheus.CounterVec) *listener {
	l := &listener{
		Listener: inner, maxConns: maxConns, maxPerIP: maxPerIP, refused: refused,
		conns: map[*conn]struct{}{}, perIP: map[netip.Addr]int{},
		spare: -1, closed: make(chan struct{}), accepting: make(chan struct{}), lastLog: map[string]time.Time{},
		replies: map[string][]byte{
			refusedLimit:       refusal(apierr.New(http.StatusServiceUnavailable, "The server is at its connection limit; retry later")),
			refusedDescriptors: refusal(apierr.New(http.StatusServiceUnavailable, "The server is out of connections; retry later")),
			refusedPerIP:       refusal(apierr.New(http.StatusTooManyRequests, "Too many connections from your address; close some and retry")),
		},
	}
	l.spare, _ = openSpare()
	return l
}

// refusal renders the whole HTTP answer to a refused connection.
func refusal(e *apierr.Error) []byte {
	status, _, body := apierr.Encode(e)
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"Retry-After: %d\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), refuseRetryAfter, body)
}

// Accept returns the next admitted connection; it returns an error only
// once the listener is closed.
func (l *listener) Accept() (net.Conn, error) {
	l.acceptingOnce.Do(func() { close(l.accepting) })
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if l.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				if l.exhausted.CompareAndSwap(false, true) {
					slog.Warn("edge out of file descriptors: answering new connections 503 until some close",
						"error", err, "connections", l.open())
				}
				if c, answered := l.shed(); c != nil {
					// Descriptors came back meanwhile: serve it.
					if l.recovered() {
						slog.Info("edge has file descriptors again", "connections", l.open())
					}
					if tc := l.admitOrRefuse(c); tc != nil {
						return tc, nil
					}
					continue
				} else if answered {
					continue // one waiting client answered; look for the next
				}
			}
			delay = min(max(2*delay, acceptDelayMin), acceptDelayMax)
			l.logEvery("accept", time.Minute, "edge accept failed; retrying", "error", err, "retry_in", delay.String())
			select {
			case <-time.After(delay):
			case <-l.closed:
				return nil, net.ErrClosed
			}
			continue
		}
		delay = 0
		if l.exhausted.Load() && l.recovered() {
			slog.Info("edge has file descriptors again", "connections", l.open())
		}
		if tc := l.admitOrRefuse(c); tc != nil {
			return tc, nil
		}
	}
}

// admitOrRefuse admits c, or answers it with why it may not be served.
func (l *listener) admitOrRefuse(c net.Conn) *conn {
	tc, reason := l.admit(c)
	if tc != nil {
		return tc
	}
	l.refuse(c, reason)
	switch reason {
	case refusedLimit:
		l.logEvery(reason, time.Minute, "edge at its connection limit: refusing new connections", "max_conns", l.maxConns)
	case refusedPerIP:
		l.logEvery(reason, time.Minute, "edge refusing connections beyond the per-address limit",
			"max_conns_per_ip", l.maxPerIP, "addr", remoteAddr(c).String())
	}
	return nil
}

// admit counts c in, or says why it may not be served.
func (l *listener) admit(c net.Conn) (*conn, string) {
	ip := remoteAddr(c)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.maxConns {
		return nil, refusedLimit
	}
	if l.maxPerIP > 0 && l.perIP[ip] >= l.maxPerIP {
		return nil, refusedPerIP
	}
	tc := &conn{Conn: c, l: l, ip: ip, sock: newSock(c)}
	l.conns[tc] = struct{}{}
	l.perIP[ip]++
	return tc, ""
}

// release counts c out; fasthttp is done with it.
func (l *listener) release(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, c)
	if n := l.perIP[c.ip] - 1; n > 0 {
		l.perIP[c.ip] = n
	} else {
		delete(l.perIP, c.ip)
	}
	if len(l.conns) == 0 && l.emptied != nil {
		close(l.emptied)
		l.emptied = nil
	}
}

// refuse answers c with the refusal for reason and closes it.
func (l *listener) refuse(c net.Conn, reason string) {
	c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	c.Write(l.replies[reason])
	c.Close()
	l.refused.WithLabelValues(reason).Inc()
}

// shed frees the spare descriptor to accept the next connection while the
// process is out of descriptors (accept fails then whether a client waits
// or not: this waits for one). It answers the connection 503 and takes
// the spare back; if descriptors came back meanwhile, it returns the
// connection to be served instead. answered reports a connection answered.
func (l *listener) shed() (c net.Conn, answered bool) {
	l.spareMu.Lock()
	if l.spare < 0 {
		if l.spare, _ = openSpare(); l.spare < 0 {
			l.spareMu.Unlock()
			return nil, false
		}
	}
	closeSpare(l.spare)
	l.spare = -1
	l.spareMu.Unlock()

	c, err := l.Listener.Accept()
	if err != nil {
		l.takeSpare()
		return nil, false
	}
	if l.takeSpare() {
		return c, false // room for the spare besides c
	}
	l.refuse(c, refusedDescriptors)
	l.takeSpare() // may fail: another descriptor took its place; retried on the next call
	return nil, true
}

// takeSpare takes the spare descriptor back if it is not held, and reports
// whether it is held.
func (l *listener) takeSpare() bool {
	l.spareMu.Lock()
	defer l.spareMu.Unlock()
	if l.spare < 0 && !l.isClosed() { // Close released it for good
		l.spare, _ = openSpare()
	}
	return l.spare >= 0
}

// recovered reports whether descriptors are available again (the spare
// is held and one more can be opened), and clears the exhausted state if so.
func (l *listener) recovered() bool {
	if !l.takeSpare() {
		return false
	}
	probe, err := openSpare()
	if err != nil {
		return false
	}
	closeSpare(probe)
	l.exhausted.Store(false)
	return true
}

// overloaded reports whether new connections would be refused now: the
// process is out of descriptors, or the connection limit is reached.
func (l *listener) overloaded() bool {
	if l.exhausted.Load() && !l.recovered() {
		return true
	}
	return l.open() >= l.maxConns
}

// open is the number of admitted connections not yet closed.
func (l *listener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// closeAll closes every admitted connection under fasthttp's feet (their
// handlers see errors and return) and reports how many there were. They
// stay counted until fasthttp closes them in turn.
func (l *listener) closeAll() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.Conn.Close()
	}
	return len(l.conns)
}

// waitEmpty returns a channel closed once no admitted connection is left.
func (l *listener) waitEmpty() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.emptied == nil {
		l.emptied = make(chan struct{})
	}
	if len(l.conns) == 0 {
		close(l.emptied)
		ch := l.emptied
		l.emptied = nil
		return ch
	}
	return l.emptied
}

// Close stops accepting and releases the spare descriptor.
func (l *listener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() {
		close(l.closed)
		l.spareMu.Lock()
		if l.spare >= 0 {
			closeSpare(l.spare)
			l.spare = -1
		}
		l.spareMu.Unlock()
	})
	return err
}

func (l *listener) isClosed() bool {
	select {
	case <-l.closed:
		return true
	default:
		return false
	}
}

// logEvery logs msg at warn at most once per every for key.
func (l *listener) logEvery(key string, every time.Duration, msg string, args ...any) {
	if now := time.Now(); now.Sub(l.lastLog[key]) >= every {
		l.lastLog[key] = now
		slog.Warn(msg, args...)
	}
}

// remoteAddr is c's client address (IPv4 in IPv6 unmapped).
func remoteAddr(c net.Conn) netip.Addr {
	switch a := c.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.AddrPort().Addr().Unmap()
	default:
		ap, _ := netip.ParseAddrPort(a.String())
		return ap.Addr().Unmap()
	}
}

// conn is an admitted connection; its Close counts it out once.
type conn struct {
	net.Conn
	l     *listener
	ip    netip.Addr
	once  sync.Once
	frame frameCheck // its Read checks the requests' framing (framing.go)
	sock  *sock      // raw reads and writes of a TCP socket (sock_linux.go)
	// MoreFollows: hold the next Write back; held is what it held, sent
	// with the write or sendfile after it.
	// held aliases fasthttp's write buffer, so it must go out before
	// anything is written to that buffer again: cache.Body.WriteTo sends
	// it from the same call that flushed it.
	hold bool
	held []byte
	// linger: the request's body was not read whole; Close lingers (see
	// package linger). Set by the handler, read by the Close on the same
	// goroutine.
	linger bool
}

// Linger makes Close linger, so that the client reads the answer of a
// request whose body is still arriving.
func (c *conn) Linger() { c.linger = true }

func (c *conn) Close() error {
	if c.linger {
		c.linger = false
		return linger.Close(c.Conn, c.release)
	}
	err := c.Conn.Close()
	c.release()
	return err
}

func (c *conn) release() { c.once.Do(func() { c.l.release(c) }) }

// ReadFrom is where fasthttp's writer hands a body stream over once its
// buffer is empty: a body in memory is written (after the held headers, in
// one writev), an L2 body goes to the raw socket with sendfile (after
// them, sent with MSG_MORE), anything else to the connection's own
// ReadFrom.
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	if body, ok := cache.AsBody(r); ok {
		if p, ok := body.Memory(); ok {
			n, err := c.Write(p)
			return int64(n), err
		}
		if c.sock != nil {
			if err := c.sendHeld(); err != nil {
				return 0, err
			}
			if n, err := body.SendTo(c.sock.rc); !errors.Is(err, errors.ErrUnsupported) {
				return n, err
			}
		}
	}
	if err := c.sendHeld(); err != nil {
		return 0, err
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// String names the connection in logs.
func (c *conn) String() string { return c.RemoteAddr().String() }

var _ net.Listener = (*listener)(nil)

// retryAfterValue is refuseRetryAfter as a header value.
var retryAfterValue = strconv.Itoa(refuseRetryAfter)
