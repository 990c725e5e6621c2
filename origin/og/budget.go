package og

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultBudget is the renders per minute an OG configuration may start by
// default: a crawler walking a large site, or someone requesting made-up
// paths, spends the organization's credits no faster than this.
const DefaultBudget = 60

// budget holds one token bucket per configuration: perMinute renders a
// minute, up to perMinute at once. Only new renders take a token; images
// already made are served whatever the bucket holds.
type budget struct {
	perMinute int
	now       func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newBudget(perMinute int, now func() time.Time) *budget {
	return &budget{perMinute: perMinute, now: now, buckets: map[string]*rate.Limiter{}}
}

// take spends one render of the configuration's budget; when none is left
// it returns how long until one is.
func (b *budget) take(configID string) (ok bool, retryAfter time.Duration) {
	b.mu.Lock()
	l, found := b.buckets[configID]
	if !found {
		l = rate.NewLimiter(rate.Limit(float64(b.perMinute)/60), b.perMinute)
		b.buckets[configID] = l
	}
	b.mu.Unlock()
	now := b.now()
	r := l.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// forget drops a configuration's bucket (it was deleted).
func (b *budget) forget(configID string) {
	b.mu.Lock()
	delete(b.buckets, configID)
	b.mu.Unlock()
}
