package api

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/framing"
)

// Listener is the origin port's listener. It makes every answer of the port
// use the standard error body, including those net/http writes itself
// before any handler runs (a header block too large: 431; a request it
// cannot parse: 400; an Expect it does not know: 417; an unknown transfer
// coding would be its 501, but the framing check below refuses it first) and
// the one it does not write at all (headers that stop arriving: 408). It
// also keeps every connection it accepted, hijacked ones included, so that
// a forced stop can close them all.
//
// It checks every connection's request framing on the raw bytes, before
// net/http reads them (framing.Checker: net/http takes Content-Length with
// chunked, obs-fold and bare LF, and leaves no trace of them for a handler
// to see). net/http gets the bytes before the first refused one, then a
// read error instead of the rest, which is dropped: refused in a request's
// head, net/http answers 400 itself (rewritten to name the problem); in a
// body, the handler reading it gets a 400 *apierr.Error, and net/http
// closes the connection after the answer, since the body did not end.
// Either way nothing after the refused byte is ever read as a request.
//
// Serve it with the hooks of ServerHooks. What net/http writes on a
// connection while no handler has run since the connection was last idle
// can only be one of its own answers; that is what Listener rewrites.
type Listener struct {
	net.Listener
	headerLimit int

	mu    sync.Mutex
	conns map[*conn]struct{}
}

// NewListener wraps ln. headerLimit is the server's MaxHeaderBytes, named
// in the 431 answer.
func NewListener(ln net.Listener, headerLimit int) *Listener {
	return &Listener{Listener: ln, headerLimit: headerLimit, conns: map[*conn]struct{}{}}
}

// Accept returns the next connection, wrapped.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	wc := &conn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[wc] = struct{}{}
	l.mu.Unlock()
	return wc, nil
}

// ServerHooks sets srv's ConnState and ConnContext so the listener knows
// when a handler answers (Router marks it) and when a connection is idle.
func (l *Listener) ServerHooks(srv *http.Server) {
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		wc, ok := c.(*conn)
		switch {
		case !ok:
		case s == http.StateNew || s == http.StateIdle:
			wc.between()
		case s == http.StateHijacked:
			// What the handler reads now is its own protocol. (Nothing on
			// the origin port hijacks; bytes net/http read ahead before
			// the hijack were checked as requests.)
			wc.hijacked.Store(true)
		}
	}
	base := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if base != nil {
			ctx = base(ctx, c)
		}
		if wc, ok := c.(*conn); ok {
			ctx = context.WithValue(ctx, connKey{}, wc)
		}
		return ctx
	}
}

// CloseAll closes every connection still open, hijacked ones included, and
// returns how many it closed.
func (l *Listener) CloseAll() int {
	l.mu.Lock()
	conns := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	return len(conns)
}

// Open returns how many accepted connections are not closed yet.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

type connKey struct{}

// markAnswering records that a handler runs on the request's connection:
// what is written until the connection is idle again is its answer.
func markAnswering(ctx context.Context) {
	if c, ok := ctx.Value(connKey{}).(*conn); ok {
		c.answering.Store(true)
	}
}

// conn is one accepted connection.
type conn struct {
	net.Conn
	l *Listener
	// answering: a handler has run since the connection was last idle.
	answering atomic.Bool
	// headerBytes read since the connection was last idle while no
	// handler ran: a request's line and headers under way.
	headerBytes atomic.Int64
	// headerTimedOut: a read timed out with a header under way; net/http
	// closes such a connection without an answer, Close gives it a 408.
	headerTimedOut atomic.Bool
	// answered: net/http's own answer went out (rewritten).
	answered  atomic.Bool
	closeOnce sync.Once
	// begun counts the requests net/http began reading: the one it
	// serves is begun-1, counting from 0.
	begun    atomic.Int64
	hijacked atomic.Bool
	// frame checks the bytes read; only Read uses it, and net/http never
	// reads a connection from two goroutines at once.
	frame framing.Checker
	// refused is set once frame refused a byte.
	refused atomic.Pointer[refusal]
}

// refusal is a framing problem found on a connection.
type refusal struct {
	reason  error         // a framing sentinel
	request int64         // the request it lies in, counting from 0
	err     *apierr.Error // what a read gets instead of the refused bytes
	// pad placeholder bytes come first, so that net/http reads peekAhead
	// bytes of the refused request: it peeks that many of a keep-alive
	// connection's next request before it reads it, and closes without an
	// answer when it cannot. Only readers use it, one at a time.
	pad int
}

// peekAhead is what net/http peeks of a keep-alive connection's next request.
const peekAhead = 4

// placeholder stands for a refused request's first bytes: net/http cannot
// read a request of them, and reads the refusal next.
const placeholder = 'X'

// between resets the state of a connection between two requests.
func (c *conn) between() {
	c.answering.Store(false)
	c.headerBytes.Store(0)
	c.headerTimedOut.Store(false)
	c.answered.Store(false)
	c.begun.Add(1)
}

func (c *conn) Read(p []byte) (int, error) {
	if c.hijacked.Load() {
		return c.Conn.Read(p)
	}
	if r := c.refused.Load(); r != nil {
		return c.readRefused(r, p)
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		if k, reason := c.frame.Check(p[:n]); reason != nil {
			r := &refusal{reason: reason, request: c.frame.Requests(), pad: max(0, peekAhead-int(c.frame.Offset())),
				err: apierr.BadRequest("Malformed HTTP request: %v", reason).WithHeader("Connection", "close")}
			r.err.Cause = reason
			c.refused.Store(r)
			if k == 0 {
				return c.readRefused(r, p)
			}
			n, err = k, nil // the refusal comes with the next read
		}
	}
	if !c.answering.Load() {
		if c.headerBytes.Add(int64(n)) > 0 {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				c.headerTimedOut.Store(true)
			}
		}
	}
	return n, err
}

// readRefused is a read once the bytes left are refused ones. If they lie
// in the request net/http serves, it gets the refusal. If they lie in a
// later one, net/http is reading ahead (its background read while a
// handler runs, which a read error would take for the client leaving, and
// cancel the request): the read then waits as it would have, until its
// deadline or the connection's end, dropping what arrives, and the
// refusal waits for net/http to begin that request.
func (c *conn) readRefused(r *refusal, p []byte) (int, error) {
	if r.request <= c.begun.Load()-1 || len(p) == 0 {
		if n := min(r.pad, len(p)); n > 0 {
			r.pad -= n
			for i := range n {
				p[i] = placeholder
			}
			return n, nil
		}
		return 0, r.err
	}
	drop := make([]byte, 4<<10) // the background read's buffer is one byte
	for {
		if _, err := c.Conn.Read(drop); err != nil {
			return 0, err
		}
	}
}

// refusedNow returns the reason of a framing refusal in the request net/http
// serves, if there is one.
func (c *conn) refusedNow() error {
	if r := c.refused.Load(); r != nil && r.request == c.begun.Load()-1 {
		return r.reason
	}
	return nil
}

func (c *conn) Write(p []byte) (int, error) {
	if !c.answering.Load() {
		if out, ok := c.l.rewrite(p, c.headerTimedOut.Load(), c.refusedNow()); ok {
			c.answered.Store(true)
			if _, err := c.Conn.Write(out); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}

// ReadFrom lets net/http send a handler's body with the connection's own
// ReadFrom (a TCP connection's: sendfile for an *os.File, as
// http.ServeContent gives the files store's). What no handler writes
// goes through Write, which may rewrite it.
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok && (c.answering.Load() || c.hijacked.Load()) {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c}, r)
}

// writerOnly hides a writer's ReadFrom from io.Copy.
type writerOnly struct{ io.Writer }

// CloseWrite keeps net/http's half-close before it hangs up on a 431.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		if c.headerTimedOut.Load() && !c.answering.Load() && !c.answered.Load() {
			c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
			c.Conn.Write(standardAnswer("HTTP/1.1", headerTimeout()))
		}
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// rewrite recognizes an error answer net/http wrote on its own, whole in
// p (status line and header block, and its plain-text body if any), and
// returns the standard answer for it. refused is the framing problem of
// the request answered, if any: net/http's 400 is then its answer to the
// read error it got instead of the refused bytes.
func (l *Listener) rewrite(p []byte, timedOut bool, refused error) ([]byte, bool) {
	proto, code, detail, ok := ParseOwnAnswer(p)
	if !ok {
		return nil, false
	}
	var e *apierr.Error
	switch {
	case timedOut && code == http.StatusBadRequest:
		// A header cut off by its deadline reads as malformed to net/http.
		e = headerTimeout()
	case refused != nil && code == http.StatusBadRequest:
		e = apierr.BadRequest("Malformed HTTP request: %v", refused)
	case code == http.StatusRequestHeaderFieldsTooLarge:
		e = apierr.New(code, "The request line and headers must fit in %d KiB", l.headerLimit>>10)
	case code == http.StatusBadRequest:
		e = apierr.BadRequest("Malformed HTTP request")
		if detail != "" {
			e.Message += ": " + detail
		}
	case code == http.StatusExpectationFailed:
		e = apierr.New(code, "Unsupported Expect header: only 100-continue is understood")
	default:
		e = apierr.New(code, "%s", http.StatusText(code))
	}
	return standardAnswer(proto, e), true
}

func headerTimeout() *apierr.Error {
	return apierr.New(http.StatusRequestTimeout, "The request line and headers were not received in time")
}

// standardAnswer is a whole HTTP answer carrying e's standard body, after
// which the connection closes.
func standardAnswer(proto string, e *apierr.Error) []byte {
	_, _, body := apierr.Encode(e)
	var b bytes.Buffer
	b.WriteString(proto + " " + strconv.Itoa(e.Status) + " " + http.StatusText(e.Status) + "\r\n")
	b.WriteString("Content-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}

// ParseOwnAnswer recognizes an error answer of net/http written before any
// handler ran: an HTTP/1.x status line of 400 or above and a whole header
// block within p. detail is what net/http appended to the reason phrase
// ("Bad Request: missing required Host header" → "missing required Host
// header"), restricted to printable ASCII.
func ParseOwnAnswer(p []byte) (proto string, code int, detail string, ok bool) {
	end := bytes.Index(p, []byte("\r\n\r\n"))
	if end < 0 {
		return "", 0, "", false
	}
	line, _, _ := bytes.Cut(p[:end], []byte("\r\n"))
	s := string(line)
	if len(s) < len("HTTP/1.1 400") || (s[:9] != "HTTP/1.1 " && s[:9] != "HTTP/1.0 ") {
		return "", 0, "", false
	}
	code, err := strconv.Atoi(s[9:12])
	if err != nil || code < 400 || code > 599 || (len(s) > 12 && s[12] != ' ') {
		return "", 0, "", false
	}
	reason := ""
	if len(s) > 13 {
		reason = s[13:]
	}
	if _, d, found := strings.Cut(reason, ": "); found {
		detail = printable(d, 200)
	}
	return s[:8], code, detail, true
}

// printable keeps the printable ASCII of s, at most n bytes of it.
func printable(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < n; i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
		}
	}
	return b.String()
}
