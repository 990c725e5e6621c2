package bench

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/bench/load"
)

// fileSet is what a static-file run may ask for: target i is answered
// with a body of lengths[i] bytes whose CRC-32 is sums[i], of type
// contentType.
type fileSet struct {
	targets     []string
	lengths     []int
	sums        []uint32
	contentType []byte
}

// add appends a target and the body it must answer with.
func (s *fileSet) add(target string, body []byte) {
	s.targets = append(s.targets, target)
	s.lengths = append(s.lengths, len(body))
	s.sums = append(s.sums, crc32.ChecksumIEEE(body))
}

// checkEvery is how often a client checks a whole body's checksum; the
// status, Content-Type and length of every answer are checked.
const checkEvery = 64

// getClient is one client of a getRun, on its own cache line.
type getClient struct {
	conn *load.KeepAlive
	n    int
	_    [48]byte
}

// getRun drives GETs of a fileSet over one keep-alive connection per
// client (KeepAlive, the fast path).
type getRun struct {
	set     *fileSet
	clients []*getClient
	dials   atomic.Int64
	// pick chooses the target of client c's next request.
	pick func(c int) int
}

func newGetRun(addr string, clients int, set *fileSet, pick func(c int) int) *getRun {
	g := &getRun{set: set, pick: pick}
	for range clients {
		g.clients = append(g.clients, &getClient{conn: load.NewKeepAlive(addr, &g.dials)})
	}
	return g
}

// op is the run's Op: the latency of one GET, from writing the request
// to reading the last byte of the answer. A wrong answer is an error.
func (g *getRun) op(_ context.Context, c int) (time.Duration, error) {
	cl := g.clients[c]
	k := g.pick(c)
	target := g.set.targets[k]
	start := time.Now()
	a, err := cl.conn.Get(target)
	lat := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", target, err)
	}
	if a.Status != 200 {
		return 0, fmt.Errorf("GET %s: status %d: %.200s", target, a.Status, a.Body)
	}
	if !bytes.Equal(a.ContentType, g.set.contentType) {
		return 0, fmt.Errorf("GET %s: Content-Type %q, want %q", target, a.ContentType, g.set.contentType)
	}
	if len(a.Body) != g.set.lengths[k] {
		return 0, fmt.Errorf("GET %s: %d bytes, want %d", target, len(a.Body), g.set.lengths[k])
	}
	cl.n++
	if cl.n%checkEvery == 1 && crc32.ChecksumIEEE(a.Body) != g.set.sums[k] {
		return 0, fmt.Errorf("GET %s: body differs from the file's (CRC-32)", target)
	}
	return lat, nil
}

// setUserAgent makes every client send User-Agent ua.
func (g *getRun) setUserAgent(ua string) {
	for _, c := range g.clients {
		c.conn.SetUserAgent(ua)
	}
}

// close closes the run's connections.
func (g *getRun) close() {
	for _, c := range g.clients {
		c.conn.Close()
	}
}

// checkAll GETs every target of the set once over one connection and
// verifies the whole body of each: a baseline serves the same bytes.
func checkAll(addr string, set *fileSet) error {
	k := load.NewKeepAlive(addr, nil)
	defer k.Close()
	for i, t := range set.targets {
		a, err := k.Get(t)
		if err != nil {
			return fmt.Errorf("GET %s: %w", t, err)
		}
		switch {
		case a.Status != 200:
			return fmt.Errorf("GET %s: status %d", t, a.Status)
		case !bytes.Equal(a.ContentType, set.contentType):
			return fmt.Errorf("GET %s: Content-Type %q, want %q", t, a.ContentType, set.contentType)
		case len(a.Body) != set.lengths[i] || crc32.ChecksumIEEE(a.Body) != set.sums[i]:
			return fmt.Errorf("GET %s: body differs from the expected one", t)
		}
	}
	return nil
}

// hostPort returns the host:port of an http:// base URL.
func hostPort(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return "", fmt.Errorf("base URL %q: want http://host:port", base)
	}
	return u.Host, nil
}
