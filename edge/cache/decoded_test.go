package cache

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

func decodedEntryOf(key string, cost int64) *Entry {
	return &Entry{key: []byte(key), cost: cost, onDisk: true}
}

// TestDecodedSlots: an entry is found by its key only, a colliding one
// replaces it, and del drops only the key it names.
func TestDecodedSlots(t *testing.T) {
	x := newDecoded(1<<20, 16)
	a, b := decodedEntryOf("a", 100), decodedEntryOf("b", 200)
	x.put(3, a)
	if x.get(3, []byte("a")) != a || x.get(3, []byte("b")) != nil || x.get(4, []byte("a")) != nil {
		t.Fatal("a is not found by its own key and slot only")
	}
	x.put(3+16, b) // the same slot
	if x.get(3, []byte("a")) != nil || x.get(3+16, []byte("b")) != b || x.bytes.Load() != 200 {
		t.Fatalf("after a collision: a %v, b %v, %d bytes", x.get(3, []byte("a")), x.get(3+16, []byte("b")), x.bytes.Load())
	}
	x.del(3, []byte("a")) // no longer there: b stays
	if x.get(3, []byte("b")) != b {
		t.Fatal("del of another key dropped b")
	}
	x.del(3, []byte("b"))
	if x.get(3, []byte("b")) != nil || x.bytes.Load() != 0 {
		t.Fatalf("after del: %v, %d bytes", x.get(3, []byte("b")), x.bytes.Load())
	}
}

// TestDecodedBound: entries larger than the slots were sized for (an OG
// image's long key) never take the costs over the bound, and the table
// keeps taking new entries once it is full.
func TestDecodedBound(t *testing.T) {
	const max = 10_000
	x := newDecoded(max, 64)
	for i := range 1000 {
		x.put(rand.Uint64(), decodedEntryOf(fmt.Sprint("k", i), 900))
		if n := x.bytes.Load(); n > max || n != x.held() {
			t.Fatalf("put %d: %d bytes counted, %d held, bound %d", i, n, x.held(), max)
		}
	}
	// Each put that does not fit drops one of the 11 or so entries: 1000
	// puts all failing would need each drop to hit one of the 53 empty
	// slots, or the slot itself.
	last := decodedEntryOf("last", 900)
	for i := 0; x.get(7, []byte("last")) == nil; i++ {
		if i == 1000 {
			t.Fatal("a full table never took a new entry")
		}
		x.put(7, last)
	}
}

// TestDecodedConcurrent: puts, dels and clears racing over few slots keep
// the count equal to the costs the slots hold.
func TestDecodedConcurrent(t *testing.T) {
	x := newDecoded(1<<30, 8)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range 20000 {
				h := r.Uint64N(32)
				key := fmt.Sprint("k", h)
				switch r.IntN(10) {
				case 0:
					x.del(h, []byte(key))
				case 1:
					x.drop(x.slot(h))
				default:
					x.put(h, decodedEntryOf(key, int64(1+r.IntN(1000))))
				}
			}
		}()
	}
	wg.Wait()
	if n, held := x.bytes.Load(), x.held(); n != held {
		t.Fatalf("%d bytes counted, %d held", n, held)
	}
	x.clear()
	if n := x.bytes.Load(); n != 0 || x.held() != 0 {
		t.Fatalf("after clear: %d bytes counted", n)
	}
}

// held sums the costs of the entries in the slots.
func (x *decoded) held() int64 {
	var n int64
	for i := range x.slots {
		if e := x.slots[i].Load(); e != nil {
			n += e.cost
		}
	}
	return n
}
