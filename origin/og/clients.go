package og

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the per-client limit on uncached OG requests.
const (
	// DefaultClientRate is the requests a minute one client address may
	// make, per configuration, that read a page or render (a path or
	// variant without an image).
	DefaultClientRate = 30
	// DefaultClientBurst is how many of them it may make at once.
	DefaultClientBurst = 30
	// DefaultClientKeys bounds the addresses remembered (about 200 bytes
	// each): past it the least recently seen is forgotten.
	DefaultClientKeys = 50_000
)

// clients holds a token bucket per configuration and client address
// (contract.ClientKey), in this process: rate a minute, up to burst at
// once. Memory is bounded by an LRU of at most max buckets; a forgotten
// address starts again with a full bucket, which only gives back what
// that address could have had after a minute of silence. The caps on new
// images (ogconfig) bound what any number of addresses can spend.
type clients struct {
	limit rate.Limit // tokens a second
	burst int
	max   int
	now   func() time.Time

	mu      sync.Mutex
	lru     *list.List // of *clientBucket, most recently used first
	buckets map[string]*list.Element
}

type clientBucket struct {
	key string
	l   *rate.Limiter
}

func newClients(perMinute, burst, max int, now func() time.Time) *clients {
	return &clients{limit: rate.Limit(float64(perMinute) / 60), burst: burst, max: max, now: now,
		lru: list.New(), buckets: make(map[string]*list.Element)}
}

// take spends one request of key's bucket; when none is left it returns
// how long until one is.
func (c *clients) take(key string) (ok bool, retryAfter time.Duration) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	var b *clientBucket
	if el, found := c.buckets[key]; found {
		c.lru.MoveToFront(el)
		b = el.Value.(*clientBucket)
	} else {
		for c.lru.Len() >= c.max {
			old := c.lru.Back()
			c.lru.Remove(old)
			delete(c.buckets, old.Value.(*clientBucket).key)
		}
		b = &clientBucket{key: key, l: rate.NewLimiter(c.limit, c.burst)}
		c.buckets[key] = c.lru.PushFront(b)
	}
	if b.l.AllowN(now, 1) {
		return true, 0
	}
	// A refused take reserves nothing: the wait is the time the missing
	// part of a token takes to come (as budget.take).
	return false, time.Duration((1 - b.l.TokensAt(now)) / float64(c.limit) * float64(time.Second))
}

// len is the number of buckets held.
func (c *clients) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Keys of the work shared by the requests that ask for it at once: the
// read of a page, the render of a variant.
func readKey(configID, path string) string { return "r\x00" + configID + "\x00" + path }
func variantKey(configID, path, v string) string {
	return "v\x00" + configID + "\x00" + path + "\x00" + v
}

// flying is the shared work under way. A request that would join it
// starts nothing new, so it takes nothing of its client's allowance.
type flying struct {
	mu   sync.Mutex
	keys map[string]int
}

// hold marks key under way until the returned function is called.
func (f *flying) hold(key string) (done func()) {
	f.mu.Lock()
	f.mark(key)
	f.mu.Unlock()
	return f.release(key)
}

// enter admits a request that needs the work of key: it joins the work
// under way, taking nothing, or, when none is, passes admit (its client's
// allowance) and marks key under way, until done is called. The check and
// the mark are one step: of requests arriving at once for work not under
// way, one is admitted and the others join it (a refused one marks
// nothing).
func (f *flying) enter(key string, admit func() error) (done func(), err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys[key] == 0 {
		if err := admit(); err != nil {
			return nil, err
		}
	}
	f.mark(key)
	return f.release(key), nil
}

func (f *flying) mark(key string) {
	if f.keys == nil {
		f.keys = map[string]int{}
	}
	f.keys[key]++
}

func (f *flying) release(key string) func() {
	return func() {
		f.mu.Lock()
		if f.keys[key]--; f.keys[key] <= 0 {
			delete(f.keys, key)
		}
		f.mu.Unlock()
	}
}
