package oauth

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

func newLimiter(l Limit) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(float64(l.N)/l.Per.Seconds()), l.Burst)
}

// maxTrackedClients bounds the failure limiter's memory.
const maxTrackedClients = 10_000

// failureLimiter counts failed sign-ins per client. Clients whose bucket is
// full again are forgotten when room is needed; past maxTrackedClients
// clients with recent failures, further clients share one bucket. It is
// per process, like the registration limit: it slows down guessing
// rather than guarding a secret (an API key has 192 random bits, and
// anyone can register another client), so n origins allowing n times the
// attempts changes nothing that matters.
type failureLimiter struct {
	limit    Limit
	mu       sync.Mutex
	clients  map[string]*rate.Limiter
	overflow *rate.Limiter
}

func newFailureLimiter(l Limit) *failureLimiter {
	return &failureLimiter{limit: l, clients: map[string]*rate.Limiter{}, overflow: newLimiter(l)}
}

// attempt takes one sign-in attempt of clientID at now. ok is false when the
// client has no attempt left; otherwise the caller gives the attempt back
// with r.CancelAt when the sign-in succeeds, so only failures count.
func (f *failureLimiter) attempt(clientID string, now time.Time) (r *rate.Reservation, ok bool) {
	lim := f.limiter(clientID, now)
	r = lim.ReserveN(now, 1)
	if !r.OK() || r.DelayFrom(now) > 0 {
		r.CancelAt(now)
		return nil, false
	}
	return r, true
}

func (f *failureLimiter) limiter(clientID string, now time.Time) *rate.Limiter {
	f.mu.Lock()
	defer f.mu.Unlock()
	if lim, ok := f.clients[clientID]; ok {
		return lim
	}
	if len(f.clients) >= maxTrackedClients {
		for id, lim := range f.clients {
			if lim.TokensAt(now) >= float64(f.limit.Burst) {
				delete(f.clients, id)
			}
		}
		if len(f.clients) >= maxTrackedClients {
			return f.overflow
		}
	}
	lim := newLimiter(f.limit)
	f.clients[clientID] = lim
	return lim
}
