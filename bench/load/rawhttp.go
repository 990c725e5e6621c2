package load

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// KeepAlive is the load generator's fast path for small GETs at tens of
// thousands per second: one HTTP/1.1 keep-alive connection per client, a
// request written from a reused buffer and an answer parsed in place, no
// pipelining. net/http's client spends more CPU per request than the edge
// spends answering one, so on a 2-core machine it would measure itself.
// A KeepAlive is used by one goroutine at a time (one per client).
type KeepAlive struct {
	addr    string // host:port
	c       net.Conn
	br      *bufio.Reader
	req     []byte
	body    []byte
	timeout time.Duration
	// deadline is the connection's; refreshed when half of it is left,
	// not per request (resetting a timer per request costs as much as
	// parsing the answer).
	deadline time.Time
	// dials counts connections opened, shared by the clients of a run.
	dials *atomic.Int64
	// userAgent is the User-Agent every request sends.
	userAgent string
}

// Answer is a parsed response. Body and ContentType are valid until the
// next Get on the same KeepAlive.
type Answer struct {
	Status      int
	ContentType []byte
	Body        []byte
}

// Errors of the fast path.
var (
	errChunked   = errors.New("chunked answer: the fast path wants Content-Length")
	errNoLength  = errors.New("answer without Content-Length")
	errBadStatus = errors.New("malformed status line")
	errTooLarge  = errors.New("answer body over 64 MiB")
)

// maxAnswerBody bounds the body KeepAlive reads.
const maxAnswerBody = 64 << 20

// NewKeepAlive returns a client of addr (host:port) that dials on first
// use; dials, if not nil, counts the connections it opens.
func NewKeepAlive(addr string, dials *atomic.Int64) *KeepAlive {
	if dials == nil {
		dials = new(atomic.Int64)
	}
	return &KeepAlive{addr: addr, timeout: 30 * time.Second, dials: dials, userAgent: DefaultUserAgent}
}

// DefaultUserAgent is the User-Agent of a KeepAlive's requests unless
// SetUserAgent changes it.
const DefaultUserAgent = "pictor-bench"

// SetUserAgent makes the following requests send User-Agent ua (a
// crawler's, say, where the server answers by platform).
func (k *KeepAlive) SetUserAgent(ua string) { k.userAgent = ua }

// LocalAddr returns the local address of the connection, nil before the
// first Get dials it or after it closed.
func (k *KeepAlive) LocalAddr() net.Addr {
	if k.c == nil {
		return nil
	}
	return k.c.LocalAddr()
}

// Close closes the connection, if open.
func (k *KeepAlive) Close() {
	if k.c != nil {
		k.c.Close()
		k.c = nil
	}
}

// Get sends GET target (a path and query) and reads the whole answer. On
// an error the connection is closed; the next Get dials again. An answer
// with "Connection: close" closes it too, after reading.
func (k *KeepAlive) Get(target string) (Answer, error) {
	if k.c == nil {
		c, err := net.DialTimeout("tcp", k.addr, 5*time.Second)
		if err != nil {
			return Answer{}, err
		}
		k.dials.Add(1)
		k.c, k.deadline = c, time.Time{}
		if k.br == nil {
			k.br = bufio.NewReaderSize(c, 32<<10)
		} else {
			k.br.Reset(c)
		}
	}
	a, keep, err := k.roundTrip(target)
	if err != nil || !keep {
		k.Close()
	}
	return a, err
}

func (k *KeepAlive) roundTrip(target string) (Answer, bool, error) {
	k.req = append(k.req[:0], "GET "...)
	k.req = append(k.req, target...)
	k.req = append(k.req, " HTTP/1.1\r\nHost: "...)
	k.req = append(k.req, k.addr...)
	k.req = append(k.req, "\r\nUser-Agent: "...)
	k.req = append(k.req, k.userAgent...)
	k.req = append(k.req, "\r\n\r\n"...)
	if now := time.Now(); k.deadline.Sub(now) < k.timeout/2 {
		k.deadline = now.Add(k.timeout)
		if err := k.c.SetDeadline(k.deadline); err != nil {
			return Answer{}, false, err
		}
	}
	if _, err := k.c.Write(k.req); err != nil {
		return Answer{}, false, err
	}
	return readAnswer(k.br, &k.body)
}

// readAnswer parses one HTTP/1.1 answer with a Content-Length from br;
// the body goes to *buf (grown as needed). keep reports whether the
// connection may carry the next request.
func readAnswer(br *bufio.Reader, buf *[]byte) (a Answer, keep bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return a, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return a, false, fmt.Errorf("%w: %q", errBadStatus, line)
	}
	a.Status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return a, false, fmt.Errorf("%w: %q", errBadStatus, line)
	}
	keep = line[7] == '1' // HTTP/1.0 closes by default
	length := -1
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return a, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "content-length"):
			n, err := strconv.Atoi(string(value))
			if err != nil || n < 0 {
				return a, false, fmt.Errorf("bad Content-Length %q", value)
			}
			length = n
		case asciiEqualFold(name, "content-type"):
			// ReadSlice's buffer is overwritten by the next read: copy.
			a.ContentType = append(a.ContentType[:0], value...)
		case asciiEqualFold(name, "transfer-encoding"):
			return a, false, errChunked
		case asciiEqualFold(name, "connection"):
			if asciiEqualFold(value, "close") {
				keep = false
			} else if asciiEqualFold(value, "keep-alive") {
				keep = true
			}
		}
	}
	if a.Status == 304 || a.Status == 204 || a.Status/100 == 1 {
		length = 0
	}
	if length < 0 {
		return a, false, errNoLength
	}
	if length > maxAnswerBody {
		return a, false, errTooLarge
	}
	if cap(*buf) < length {
		*buf = make([]byte, length)
	}
	a.Body = (*buf)[:length]
	if _, err := io.ReadFull(br, a.Body); err != nil {
		return a, false, fmt.Errorf("body: %w", err)
	}
	return a, keep, nil
}

// asciiEqualFold compares b with lower-case ASCII s, ignoring b's case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
