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
// already made are served whatever the bucket holds. It is per origin
// process, as decided for OG images: the pacing of a burst, whose total
// the caps on new images bound (ogconfig, counted in the store), so n
// origins allowing n times the pace is not worth a store write per render.
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
	if l.AllowN(now, 1) {
		return true, 0
	}
	// A refused take reserves nothing (a canceled reservation gives back
	// only what later ones did not take): the wait is the time the
	// missing part of a token takes to come.
	missing := 1 - l.TokensAt(now)
	return false, time.Duration(missing / float64(l.Limit()) * float64(time.Second))
}

// forget drops a configuration's bucket (it was deleted).
func (b *budget) forget(configID string) {
	b.mu.Lock()
	delete(b.buckets, configID)
	b.mu.Unlock()
}
