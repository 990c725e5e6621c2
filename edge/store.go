package edge

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/pictorhq/pictor/edge/cache"
)

// maxPendingPuts bounds the filled entries answered but not yet cached: a
// fill beyond it is cached before it is answered, as all were before, so
// a burst of misses cannot pile bodies up in memory faster than the disk
// takes them.
const maxPendingPuts = 8

// stores caches filled entries after their answer. Writing a 2.5 MB entry
// to L2 took 4–9 ms of the first GET of a rendered card
// (docs/render-performance.md); the waiters need the bytes, not the copy
// on disk. Until its put is done, the entry is pending: a miss of its key
// finds it here instead of fetching it again, unless a purge of its image,
// organization or tag ran since the fill began (the put would be refused
// then too: cache.PutSince).
type stores struct {
	mu      sync.Mutex
	pending map[string]pendingPut
	slots   chan struct{}
	wg      sync.WaitGroup
	// beforePut, when set (tests), runs before each deferred put.
	beforePut func(key string)
}

// pendingPut is an entry filled since epoch, on its way to the cache.
type pendingPut struct {
	ent   *cache.Entry
	epoch cache.Epoch
}

func newStores() *stores {
	return &stores{pending: map[string]pendingPut{}, slots: make(chan struct{}, maxPendingPuts)}
}

// store caches ent, filled since epoch, under key: after the caller's
// answer when a slot is free, before it otherwise.
func (e *Edge) store(epoch cache.Epoch, key string, ent *cache.Entry) {
	s := e.stores
	select {
	case s.slots <- struct{}{}:
	default:
		e.put(epoch, key, ent)
		return
	}
	s.mu.Lock()
	s.pending[key] = pendingPut{ent: ent, epoch: epoch}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		if s.beforePut != nil {
			s.beforePut(key)
		}
		e.put(epoch, key, ent)
		s.mu.Lock()
		if p, ok := s.pending[key]; ok && p.ent == ent {
			delete(s.pending, key)
		}
		s.mu.Unlock()
		<-s.slots
	}()
}

func (e *Edge) put(epoch cache.Epoch, key string, ent *cache.Entry) {
	if err := e.cache.PutSince(epoch, []byte(key), ent); err != nil && !errors.Is(err, cache.ErrPurged) &&
		!errors.Is(err, cache.ErrTooLarge) && !errors.Is(err, cache.ErrClosed) {
		slog.Warn("edge cache put failed", "error", err)
	}
}

// lookup finds key's entry in the cache, or pending: answered from memory
// either way.
func (e *Edge) lookup(key []byte) (*cache.Entry, cache.Level, bool) {
	if ent, level, ok := e.cache.Get(key); ok {
		return ent, level, true
	}
	if ent, ok := e.pendingEntry(key); ok {
		return ent, cache.L1, true
	}
	return nil, cache.Miss, false
}

// lookupToSend is lookup for an answer: an entry whose body L2 left on
// disk comes with that body open, for the connection to send with
// sendfile (conn.ReadFrom); the answer closes it. A body gone since the
// lookup (a purge or an eviction in between) or damaged makes it a miss.
func (e *Edge) lookupToSend(key []byte) (*cache.Entry, *cache.Body, cache.Level, bool) {
	ent, level, ok := e.lookup(key)
	if !ok {
		return nil, nil, cache.Miss, false
	}
	body, ok := e.toSend(ent)
	if !ok {
		return nil, nil, cache.Miss, false
	}
	return ent, body, level, true
}

// toSend opens ent's body when it is on disk; false means a miss.
func (e *Edge) toSend(ent *cache.Entry) (*cache.Body, bool) {
	if !ent.OnDisk() {
		return nil, true
	}
	body, err := e.cache.OpenBody(ent)
	return body, err == nil
}

// pendingEntry returns key's entry while its put is under way, unless a
// purge dropped it since.
func (e *Edge) pendingEntry(key []byte) (*cache.Entry, bool) {
	s := e.stores
	s.mu.Lock()
	p, ok := s.pending[string(key)]
	s.mu.Unlock()
	if !ok || e.cache.Purged(p.epoch, p.ent) {
		return nil, false
	}
	return p.ent, true
}

// settle waits for the puts under way.
func (s *stores) settle() { s.wg.Wait() }
