package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// Group is a management operation group.
type Group string

// The groups of spec §8.
const (
	APIKeyRead              Group = "api-key:read"
	APIKeyWrite             Group = "api-key:write"
	ProxyRead               Group = "proxy:read"
	ProxyWrite              Group = "proxy:write"
	StorageDestinationRead  Group = "storage-destination:read"
	StorageDestinationWrite Group = "storage-destination:write"
	OGConfigRead            Group = "og-config:read"
	OGConfigWrite           Group = "og-config:write"
)

// Quotas of spec §8.
const (
	ReadQuota  = 100
	WriteQuota = 20
	Window     = 60 * time.Second
)

// Quota returns the per-window allowance of a group.
func (g Group) Quota() int {
	switch g {
	case APIKeyWrite, ProxyWrite, StorageDestinationWrite, OGConfigWrite:
		return WriteQuota
	}
	return ReadQuota
}

// Decision is the outcome of one Allow.
type Decision struct {
	Allowed bool
	// Limit is the quota and Remaining what is left of it after this call.
	Limit, Remaining int
	// RetryAfter is when a rejected call could next succeed.
	RetryAfter time.Duration
}

// Limiter admits or rejects one request against a sliding window.
type Limiter interface {
	Allow(ctx context.Context, key string, limit int, window time.Duration) (Decision, error)
}

// Memory is an exact in-process sliding-log limiter.
type Memory struct {
	now    func() time.Time
	seed   maphash.Seed
	calls  atomic.Uint64
	shards [32]shard
}

var _ Limiter = (*Memory)(nil)

type shard struct {
	mu   sync.Mutex
	logs map[string]*log
}

// log is a ring of admission times, oldest at head.
type log struct {
	times []time.Time
	head  int
	n     int
}

// sweepEvery is how many calls pass between sweeps of idle logs.
const sweepEvery = 4096

// NewMemory returns a limiter; now may be nil for the wall clock.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	m := &Memory{now: now, seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].logs = map[string]*log{}
	}
	return m
}

// Allow implements Limiter.
func (m *Memory) Allow(_ context.Context, key string, limit int, window time.Duration) (Decision, error) {
	now := m.now()
	if m.calls.Add(1)%sweepEvery == 0 {
		m.sweep(now, window)
	}
	s := &m.shards[maphash.String(m.seed, key)%uint64(len(m.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.logs[key]
	if l == nil || len(l.times) != limit {
		l = &log{times: make([]time.Time, limit)}
		s.logs[key] = l
	}
	l.expire(now, window)
	if l.n >= limit {
		return Decision{Limit: limit, RetryAfter: l.times[l.head].Add(window).Sub(now)}, nil
	}
	l.times[(l.head+l.n)%limit] = now
	l.n++
	return Decision{Allowed: true, Limit: limit, Remaining: limit - l.n}, nil
}

func (l *log) expire(now time.Time, window time.Duration) {
	for l.n > 0 && !now.Before(l.times[l.head].Add(window)) {
		l.head = (l.head + 1) % len(l.times)
		l.n--
	}
}

// sweep drops the logs with no admission left in the window.
func (m *Memory) sweep(now time.Time, window time.Duration) {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		for k, l := range s.logs {
			l.expire(now, window)
			if l.n == 0 {
				delete(s.logs, k)
			}
		}
		s.mu.Unlock()
	}
}
