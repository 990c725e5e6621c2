package wasm

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// programCache keeps the compiled programs of the templates evaluated
// lately, by the template's SHA-256, least recently used first out once
// their total size passes max bytes. A program is what the guest
// produced when it first parsed the template; it goes back to a guest,
// which validates it, never to the host's own code.
type programCache struct {
	mu    sync.Mutex
	max   int
	size  int
	ll    *list.List // of *programEntry, most recent first
	items map[[sha256.Size]byte]*list.Element
}

type programEntry struct {
	key     [sha256.Size]byte
	program []byte
}

func newProgramCache(max int) *programCache {
	return &programCache{max: max, ll: list.New(), items: map[[sha256.Size]byte]*list.Element{}}
}

func (c *programCache) get(key [sha256.Size]byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*programEntry).program, true
}

// add keeps program (not copied: the caller gives it up); one larger
// than the whole cache is not kept.
func (c *programCache) add(key [sha256.Size]byte, program []byte) {
	if c.max <= 0 || len(program) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		e := el.Value.(*programEntry)
		c.size += len(program) - len(e.program)
		e.program = program
		c.ll.MoveToFront(el)
	} else {
		c.items[key] = c.ll.PushFront(&programEntry{key: key, program: program})
		c.size += len(program)
	}
	for c.size > c.max {
		el := c.ll.Back()
		e := el.Value.(*programEntry)
		c.ll.Remove(el)
		delete(c.items, e.key)
		c.size -= len(e.program)
	}
}

func (c *programCache) remove(key [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.ll.Remove(el)
		delete(c.items, key)
		c.size -= len(el.Value.(*programEntry).program)
	}
}

// stats returns the number of programs kept and their total size.
func (c *programCache) stats() (n, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items), c.size
}
