package wasm

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// sizedLRU keeps values by a template's SHA-256, least recently used
// first out once their total size passes max bytes. A value larger than
// max (any, when max <= 0) is not kept. It holds the compiled programs
// (newProgramCache) and the outlines (newOutlineCache) of the templates
// used lately.
type sizedLRU[V any] struct {
	mu     sync.Mutex
	max    int
	sizeOf func(V) int
	size   int
	ll     *list.List // of *lruEntry[V], most recent first
	items  map[[sha256.Size]byte]*list.Element
}

type lruEntry[V any] struct {
	key  [sha256.Size]byte
	v    V
	size int
}

func newSizedLRU[V any](max int, sizeOf func(V) int) *sizedLRU[V] {
	return &sizedLRU[V]{max: max, sizeOf: sizeOf, ll: list.New(), items: map[[sha256.Size]byte]*list.Element{}}
}

// newProgramCache keeps up to max bytes of compiled programs. A program
// is what the guest produced when it first parsed the template; it goes
// back to a guest, which validates it, never to the host's own code.
func newProgramCache(max int) *sizedLRU[[]byte] {
	return newSizedLRU(max, func(p []byte) int { return len(p) })
}

func (c *sizedLRU[V]) get(key [sha256.Size]byte) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*lruEntry[V]).v, true
}

// add keeps v (not copied: the caller gives it up), in place of what the
// key held.
func (c *sizedLRU[V]) add(key [sha256.Size]byte, v V) {
	size := c.sizeOf(v)
	if c.max <= 0 || size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*lruEntry[V])
		c.size += size - e.size
		e.v, e.size = v, size
		c.ll.MoveToFront(el)
	} else {
		c.items[key] = c.ll.PushFront(&lruEntry[V]{key: key, v: v, size: size})
		c.size += size
	}
	for c.size > c.max {
		el := c.ll.Back()
		e := el.Value.(*lruEntry[V])
		c.ll.Remove(el)
		delete(c.items, e.key)
		c.size -= e.size
	}
}

func (c *sizedLRU[V]) remove(key [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.ll.Remove(el)
		delete(c.items, key)
		c.size -= el.Value.(*lruEntry[V]).size
	}
}

// stats returns the number of values kept and their total size.
func (c *sizedLRU[V]) stats() (n, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.size
}
