package oauth

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

func newLimiter(l Limit) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(float64(l.N)/l.Per.Seconds()), l.Burst)
}

// maxTracked bounds a keyedLimiter's memory.
const maxTracked = 10_000

// keyedLimiter is a token bucket per key: failed sign-ins per client,
// registrations per client address. Keys whose bucket is full again are
// forgotten when room is needed (looked for at most every pruneEvery);
// past maxTracked keys with recent events, further keys share one bucket,
// so a flood of keys cannot grow it. It is
// per process: for sign-ins it slows down guessing rather than guarding a
// secret (an API key has 192 random bits, and anyone can register another
// client), for registrations it keeps one address from taking what all
// addresses share; n origins allowing n times the events changes nothing
// that matters.
type keyedLimiter struct {
	limit    Limit
	mu       sync.Mutex
	buckets  map[string]*rate.Limiter
	overflow *rate.Limiter
	pruned   time.Time // the last look for full buckets to forget
}

// pruneEvery is how often a full keyedLimiter looks for buckets to
// forget at most: the look goes through every bucket.
const pruneEvery = time.Second

func newKeyedLimiter(l Limit) *keyedLimiter {
	return &keyedLimiter{limit: l, buckets: map[string]*rate.Limiter{}, overflow: newLimiter(l)}
}

// take takes one event of key at now. ok is false when key has none left,
// and wait says when it has one again; otherwise the caller may give the
// event back with r.CancelAt (a sign-in that succeeds, a registration
// another limit refuses).
func (k *keyedLimiter) take(key string, now time.Time) (r *rate.Reservation, wait time.Duration, ok bool) {
	return reserve(k.limiter(key, now), now)
}

// reserve takes one event of lim at now, or none, as keyedLimiter.take.
func reserve(lim *rate.Limiter, now time.Time) (r *rate.Reservation, wait time.Duration, ok bool) {
	r = lim.ReserveN(now, 1)
	if wait = r.DelayFrom(now); !r.OK() || wait > 0 {
		r.CancelAt(now)
		return nil, wait, false
	}
	return r, 0, true
}

func (k *keyedLimiter) limiter(key string, now time.Time) *rate.Limiter {
	k.mu.Lock()
	defer k.mu.Unlock()
	if lim, ok := k.buckets[key]; ok {
		return lim
	}
	if len(k.buckets) >= maxTracked && now.Sub(k.pruned).Abs() >= pruneEvery {
		k.pruned = now
		for id, lim := range k.buckets {
			if lim.TokensAt(now) >= float64(k.limit.Burst) {
				delete(k.buckets, id)
			}
		}
	}
	if len(k.buckets) >= maxTracked {
		return k.overflow
	}
	lim := newLimiter(k.limit)
	k.buckets[key] = lim
	return lim
}

// tracked is how many keys have a bucket of their own.
func (k *keyedLimiter) tracked() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.buckets)
}
