package cache

import (
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// L2 eviction is a FIFO by insertion with second chance (the CLOCK
// algorithm over an on-disk queue):
//
//   - Put gives each entry the next sequence number and writes a queue record
//     'q' seq → key beside it; rewriting a key moves it to the tail.
//   - Every hit, at either level, sets the entry's bit in refBits, a fixed
//     bitmap indexed by a hash of the key (a collision only grants an extra
//     chance). An L1 hit costs one atomic load once the bit is set.
//   - When L2's logical size passes DiskBytes, the maintainer goroutine walks
//     the queue from its head in chunks of evictChunk records, each chunk one
//     batch under wmu, until the size is back under 95% of DiskBytes. An
//     entry whose bit is set has it cleared and moves to the tail (its queue
//     and meta records are rewritten, not its body); any other entry is
//     deleted from L2 and L1. Each pass grants at most one second chance per
//     entry, so it ends even when everything is hot.
//
// Gets never wait for it: they take no lock eviction holds. The cap is soft by
// what Puts add while a pass runs. A body's file is removed as soon as the
// batch deleting its records commits, so its space comes back at once; only
// pebble's small records wait for compactions (plus its WAL and memtables).
const (
	evictChunk = 256
	// lowWaterDiv: a pass stops at DiskBytes - DiskBytes/lowWaterDiv.
	lowWaterDiv = 20
)

// maintain runs eviction and the repair of corrupt values until Close.
func (c *Cache) maintain() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
			c.evict()
		case key := <-c.repairs:
			c.repair(key)
		case ack := <-c.barrier:
			c.drain()
			close(ack)
		}
	}
}

// drain does every pending repair and eviction.
func (c *Cache) drain() {
	for {
		select {
		case key := <-c.repairs:
			c.repair(key)
			continue
		case <-c.kick:
		default:
		}
		break
	}
	c.evict()
}

// settle waits until the maintainer has done the work queued before the
// call. Tests use it instead of sleeping.
func (c *Cache) settle() {
	ack := make(chan struct{})
	select {
	case c.barrier <- ack:
		<-ack
	case <-c.done:
	}
}

func (c *Cache) evict() {
	low := c.cfg.DiskBytes - c.cfg.DiskBytes/lowWaterDiv
	if c.stats.l2Bytes.Load() <= c.cfg.DiskBytes {
		return
	}
	chances := c.stats.l2Entries.Load()
	for c.stats.l2Bytes.Load() > low {
		select {
		case <-c.stop:
			return
		default:
		}
		more, err := c.evictChunk(low, &chances)
		if err != nil {
			slog.Error("edge cache eviction", "err", err)
			return
		}
		if !more {
			return
		}
	}
}

// evictChunk processes up to evictChunk queue records from the head and
// reports whether it should be called again.
func (c *Cache) evictChunk(low int64, chances *int64) (more bool, err error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return false, nil
	}
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: queueKey(c.qHead), UpperBound: []byte{prefixQueue + 1}})
	if err != nil {
		return false, err
	}
	b := c.db.NewBatch()
	defer b.Close()
	size := c.stats.l2Bytes.Load()
	head, nextSeq := c.qHead, c.nextSeq
	var evicted [][]byte
	var files []uint64
	var freed int64
	var second uint64
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		if n == evictChunk || size-freed <= low {
			more = size-freed > low
			break
		}
		n++
		seq := beUint64(it.Key()[1:])
		key := append([]byte(nil), it.Value()...)
		head = seq + 1
		m, found, err := c.readMeta(key)
		switch {
		case errors.Is(err, ErrCorrupt):
			b.Delete(recordKey(prefixValue, key), nil)
			b.Delete(recordKey(prefixMeta, key), nil)
			b.Delete(it.Key(), nil)
			c.stats.l2Corrupt.Add(1)
			evicted = append(evicted, key)
			continue
		case err != nil:
			it.Close()
			return false, err
		case !found || m.seq != seq: // left behind by a rewrite
			b.Delete(it.Key(), nil)
			continue
		}
		if *chances > 0 && c.ref.testAndClear(refIndex(c.hash(key))) {
			*chances--
			second++
			b.Delete(it.Key(), nil)
			m.seq = nextSeq
			nextSeq++
			b.Set(queueKey(m.seq), key, nil)
			b.Set(recordKey(prefixMeta, key), encodeMeta(&m), nil)
			continue
		}
		c.deleteEntry(b, key, &m)
		files = append(files, m.file)
		freed += m.size
		evicted = append(evicted, key)
	}
	if err := it.Close(); err != nil {
		return false, err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return false, err
	}
	for _, f := range files {
		c.bodies.remove(f)
	}
	c.qHead, c.nextSeq = head, nextSeq
	c.stats.l2Bytes.Add(-freed)
	c.stats.l2Entries.Add(-int64(len(evicted)))
	c.stats.l2Evictions.Add(uint64(len(evicted)))
	c.stats.l2SecondChances.Add(second)
	c.dropL1(evicted)
	return more, nil
}

// repair drops key's entry if its value or its body file is still corrupt:
// a Put may have replaced it since Get found it bad.
func (c *Cache) repair(key []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return
	}
	v, closer, err := c.db.Get(recordKey(prefixValue, key))
	if err != nil {
		return
	}
	e, derr := decodeValue(v)
	closer.Close()
	if derr == nil {
		if _, derr = c.bodies.read(e); !errors.Is(derr, ErrCorrupt) {
			return
		}
	}
	m, found, err := c.readMeta(key)
	corruptMeta := errors.Is(err, ErrCorrupt)
	if err != nil && !corruptMeta {
		slog.Error("edge cache repair", "err", err)
		return
	}
	b := c.db.NewBatch()
	defer b.Close()
	b.Delete(recordKey(prefixValue, key), nil)
	b.Delete(recordKey(prefixMeta, key), nil)
	if found {
		c.deleteSecondary(b, key, &m)
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		slog.Error("edge cache repair", "err", err)
		return
	}
	switch {
	case found:
		c.bodies.remove(m.file)
		c.stats.l2Bytes.Add(-m.size)
		c.stats.l2Entries.Add(-1)
	case corruptMeta: // its size is unknown; Open's scan corrects the total
		c.stats.l2Corrupt.Add(1)
		c.stats.l2Entries.Add(-1)
	}
	c.dropL1([][]byte{key})
}

// refBits is the eviction clock's second-chance bitmap: 2^20 bits, 128 KiB.
type refBits []atomic.Uint64

const refBitsLog = 20

func newRefBits() refBits { return make(refBits, 1<<refBitsLog/64) }

func refIndex(h uint64) uint32 { return uint32(h) & (1<<refBitsLog - 1) }

// set marks bit i; when it is already set, as for a hot entry, it only reads.
func (r refBits) set(i uint32) {
	w, bit := &r[i>>6], uint64(1)<<(i&63)
	if w.Load()&bit == 0 {
		w.Or(bit)
	}
}

func (r refBits) testAndClear(i uint32) bool {
	w, bit := &r[i>>6], uint64(1)<<(i&63)
	return w.Load()&bit != 0 && w.And(^bit)&bit != 0
}

// purgeLog remembers the most recent purges so that PutSince can refuse an
// entry fetched before one of them. Older purges are summarized by floor: an
// Epoch before it is refused whatever it carries. wmu guards it.
type purgeLog struct {
	last  map[purgeKey]uint64
	ring  []purgeRec
	next  int
	floor uint64
}

// purgeKey names an index: an entry's image, organization or one of its tags.
type purgeKey struct {
	k  kind
	id string
}

type purgeRec struct {
	key purgeKey
	seq uint64
}

const purgeLogSize = 8192

func newPurgeLog(n int) purgeLog {
	return purgeLog{last: make(map[purgeKey]uint64), ring: make([]purgeRec, n)}
}

func (p *purgeLog) record(k kind, id string, epoch *atomic.Uint64) {
	seq := epoch.Add(1)
	if old := p.ring[p.next]; old.seq != 0 {
		if p.last[old.key] == old.seq {
			delete(p.last, old.key)
		}
		p.floor = max(p.floor, old.seq)
	}
	key := purgeKey{k, id}
	p.ring[p.next] = purgeRec{key, seq}
	p.next = (p.next + 1) % len(p.ring)
	p.last[key] = seq
}

// all records a purge of everything: every epoch before it is purged.
func (p *purgeLog) all(epoch *atomic.Uint64) {
	p.floor = epoch.Add(1)
}

// since reports whether a purge covering m ran after ep.
func (p *purgeLog) since(ep Epoch, m *meta) bool {
	if uint64(ep) < p.floor {
		return true
	}
	for _, x := range m.ids() {
		if seq, ok := p.last[x]; ok && seq > uint64(ep) {
			return true
		}
	}
	return false
}
