package cache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/dgraph-io/ristretto/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Fixed memory of the L2 engine, whatever DiskBytes is: pebble's block cache
// and its memtables (at most memTableStop of memTableBytes queued).
//
// Pebble reserves its memtables' memory out of the block cache (Reserve),
// so the cache is sized with them on top of indexCacheBytes, what it keeps
// of L2's index: about 290 bytes an entry (value and meta records), so
// some 110,000 entries' records. (At 8 MiB in all, the reservations left
// the cache nothing: every L2 hit read its index block from the file.)
const (
	indexCacheBytes = 32 << 20
	memTableBytes   = 4 << 20
	memTableStop    = 4
	blockCacheBytes = indexCacheBytes + memTableStop*memTableBytes
)

// Cache is the edge's two-level cache. Its methods are safe for concurrent
// use. Every entry in L1 is also in L2 (Put writes L2 first, L2 eviction and
// purges drop from L1 too), so L2's indexes find every copy of an entry.
type Cache struct {
	cfg    Config
	db     *pebble.DB
	bodies *bodyFiles
	l1     *ristretto.Cache[[]byte, *Entry]
	// decoded holds entries L2 hits found, without their bodies; L1 holds
	// entries with theirs.
	decoded *decoded

	seed1, seed2 maphash.Seed // L1's 128-bit key hash; seed1 also places ref bits and shards

	// life is read-held by Get's L2 path so that Close waits for it.
	life   sync.RWMutex
	closed atomic.Bool

	// wmu orders every L2 write (Put, purge, eviction, repair) and the L1
	// writes that go with them. It guards the fields below it.
	wmu      sync.Mutex
	stopping bool   // Close has begun
	nextSeq  uint64 // next queue position
	qHead    uint64 // every queue position below it is gone
	purges   purgeLog

	// epoch counts purges; Epoch hands it out.
	epoch atomic.Uint64

	// shards fence promotions (L2 hits copied into L1) against the writes
	// that would make them stale: see getL2 and fence.
	shards [numShards]shard
	// ref is the eviction clock's second-chance bits, set by every hit.
	ref refBits

	stats stats

	kick    chan struct{}      // wakes the maintainer to evict
	repairs chan []byte        // keys of corrupt values for the maintainer to drop
	barrier chan chan struct{} // tests: wait for the maintainer to be idle
	stop    chan struct{}
	done    chan struct{}

	collector prometheus.Collector
	promote   bool // false in benchmarks that measure the bare L2 path
	// promoteOneIn: an L2 hit on a body of up to memoryMax is read and
	// promoted to L1 once in promoteOneIn hits (drawn at random); the others
	// are sent from their file, and decoded keeps the entry without its body.
	promoteOneIn uint32
}

// An L2 hit on a body of up to memoryMax reads it into memory and promotes
// it once in promoteSample hits, so that a body that is often asked for
// reaches L1 soon while the long tail is answered from its file (read
// behind the headers, or sent with sendfile) without an allocation, a
// checksum or an admission it would mostly lose. An L2 hit that leaves
// its body on disk keeps the entry without it in decoded (about 600
// bytes), so that the next hit skips pebble. A hit that finds its entry
// in decoded promotes it once in promoteSample² hits: the rate every
// measurement since decoded came was made with (a draw there, then
// another after reading the record again), now without the read.
//
// A body over memoryMax is never read back into L1 by a hit (it enters L1
// only when put, as a fill is likely to be asked for again): reading and
// checking it costs more than the copies sendfile saves.
const (
	memoryMax     = 32 << 10
	promoteSample = 8
)

const numShards = 256

type shard struct {
	mu  sync.RWMutex
	gen atomic.Uint64
	_   [64 - 32]byte
}

// Open opens (creating if needed) the cache in cfg.Dir and starts its
// background eviction. Reopening a directory serves what it held.
func Open(cfg Config) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fs, osFS := cfg.fs, cfg.fs == nil
	if osFS {
		fs = vfs.Default
	}
	if err := fs.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create cache directory: %w", err)
	}
	db, err := openPebble(cfg.Dir, fs)
	if err != nil {
		return nil, fmt.Errorf("open edge cache %s: %w", cfg.Dir, err)
	}
	bodies, err := openBodyFiles(fs, cfg.Dir, osFS)
	if err != nil {
		db.Close()
		return nil, err
	}
	c := &Cache{
		cfg:     cfg,
		db:      db,
		bodies:  bodies,
		seed1:   maphash.MakeSeed(),
		seed2:   maphash.MakeSeed(),
		purges:  newPurgeLog(purgeLogSize),
		ref:     newRefBits(),
		kick:    make(chan struct{}, 1),
		repairs: make(chan []byte, 64),
		barrier: make(chan chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		promote: true,
		decoded: newDecoded(decodedBytes, decodedSlots),

		promoteOneIn: promoteSample,
	}
	if err := c.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open edge cache %s: %w", cfg.Dir, err)
	}
	c.l1, err = ristretto.NewCache(&ristretto.Config[[]byte, *Entry]{
		// Ten counters per entry of about 10 KiB.
		NumCounters: max(cfg.MemBytes/1024, 1024),
		MaxCost:     cfg.MemBytes,
		BufferItems: 64,
		KeyToHash: func(k []byte) (uint64, uint64) {
			return maphash.Bytes(c.seed1, k), maphash.Bytes(c.seed2, k)
		},
		OnEvict:  func(*ristretto.Item[*Entry]) { c.stats.l1Evictions.Add(1) },
		OnReject: func(*ristretto.Item[*Entry]) { c.stats.l1Rejections.Add(1) },
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open edge cache memory level: %w", err)
	}
	if cfg.Registerer != nil {
		c.collector = newCollector(c)
		if err := cfg.Registerer.Register(c.collector); err != nil {
			c.l1.Close()
			db.Close()
			return nil, fmt.Errorf("register edge cache metrics: %w", err)
		}
	}
	go c.maintain()
	if c.stats.l2Bytes.Load() > cfg.DiskBytes {
		c.wake()
	}
	return c, nil
}

func openPebble(dir string, fs vfs.FS) (*pebble.DB, error) {
	cache := pebble.NewCache(blockCacheBytes)
	defer cache.Unref() // the DB holds its own reference
	o := &pebble.Options{
		FS:                          fs,
		Cache:                       cache,
		MemTableSize:                memTableBytes,
		MemTableStopWritesThreshold: memTableStop,
		MaxOpenFiles:                256,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      pebbleLogger{},
	}
	// Bodies are JPEG, PNG, WebP, PDF: compressed already.
	o.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	return pebble.Open(dir, o)
}

// load checks the layout and recomputes L2's size and queue bounds from the
// meta records, which are small; the bodies are not read.
func (c *Cache) load() error {
	v, closer, err := c.db.Get([]byte(formatKey))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		// Claim only an empty database: --cache-dir pointing at the
		// origin's store must not have its keys read as cache records.
		if empty, err := c.empty(); err != nil || !empty {
			if err == nil {
				err = ErrNotCacheDir
			}
			return err
		}
		if err := c.db.Set([]byte(formatKey), []byte(formatName), pebble.Sync); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		layout := string(v)
		closer.Close()
		switch layout {
		case formatName:
		case formatOld:
			if err := c.emptyOldLayout(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: layout %q, want %q", ErrNotCacheDir, layout, formatName)
		}
	}
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixMeta}, UpperBound: []byte{prefixMeta + 1}})
	if err != nil {
		return err
	}
	var size, entries int64
	var bad [][]byte
	named := map[uint64][]byte{} // body file → key, until the files are listed
	for it.First(); it.Valid(); it.Next() {
		m, err := decodeMeta(it.Value())
		if err != nil {
			bad = append(bad, append([]byte(nil), it.Key()[1:]...))
			continue
		}
		size += m.size
		entries++
		c.nextSeq = max(c.nextSeq, m.seq+1)
		named[m.file] = append([]byte(nil), it.Key()[1:]...)
	}
	if err := it.Close(); err != nil {
		return err
	}
	lost, err := c.matchBodies(named)
	if err != nil {
		return err
	}
	size -= lost.size
	entries -= lost.entries
	if len(bad) > 0 {
		b := c.db.NewBatch()
		for _, key := range bad {
			b.Delete(recordKey(prefixValue, key), nil)
			b.Delete(recordKey(prefixMeta, key), nil)
		}
		if err := b.Commit(pebble.Sync); err != nil {
			return err
		}
		c.stats.l2Corrupt.Add(uint64(len(bad)))
		slog.Warn("edge cache dropped corrupt records", "count", len(bad))
	}
	c.stats.l2Bytes.Store(size)
	c.stats.l2Entries.Store(entries)
	// The queue's first record bounds where eviction starts.
	it, err = c.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixQueue}, UpperBound: []byte{prefixQueue + 1}})
	if err != nil {
		return err
	}
	if it.First() && len(it.Key()) == 9 {
		c.qHead = beUint64(it.Key()[1:])
	}
	if it.Last() && len(it.Key()) == 9 {
		c.nextSeq = max(c.nextSeq, beUint64(it.Key()[1:])+1)
	}
	return it.Close()
}

// emptyOldLayout drops a cache of the layout that kept bodies in pebble
// (it is a cache: what it held is fetched again) and claims the directory
// for this one.
func (c *Cache) emptyOldLayout() error {
	slog.Info("edge cache emptied: its layout predates body files", "layout", formatOld)
	if err := c.db.DeleteRange([]byte{0}, []byte{0xff}, pebble.Sync); err != nil {
		return err
	}
	if err := c.db.Set([]byte(formatKey), []byte(formatName), pebble.Sync); err != nil {
		return err
	}
	return c.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true)
}

// dropped counts the records Open drops.
type dropped struct{ size, entries int64 }

// matchBodies pairs the records with the body files: a file no record
// names (a crash came between writing it and committing its entry, or
// between a deletion and the removal of its file) is removed; a record
// whose file is gone (its directory entry was lost in a crash) is dropped.
// It sets the next file number above every file found.
func (c *Cache) matchBodies(named map[uint64][]byte) (lost dropped, err error) {
	last := uint64(0)
	err = c.bodies.list(func(n uint64) {
		last = max(last, n)
		if _, ok := named[n]; ok {
			delete(named, n)
			return
		}
		c.bodies.remove(n)
	})
	if err != nil {
		return lost, err
	}
	c.bodies.next.Store(last + 1)
	if len(named) == 0 {
		return lost, nil
	}
	b := c.db.NewBatch()
	defer b.Close()
	for _, key := range named {
		m, found, err := c.readMeta(key)
		if err != nil {
			return lost, fmt.Errorf("reread meta: %w", err)
		}
		if !found { // read a moment ago: nothing writes during Open
			continue
		}
		c.deleteEntry(b, key, &m)
		lost.size += m.size
		lost.entries++
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return lost, err
	}
	slog.Warn("edge cache dropped records whose body files are gone", "count", lost.entries)
	return lost, nil
}

func (c *Cache) empty() (bool, error) {
	it, err := c.db.NewIter(nil)
	if err != nil {
		return false, err
	}
	found := it.First()
	return !found, it.Close()
}

// Close stops eviction, makes every L2 write durable and closes both levels.
// Calls made after Close miss or return ErrClosed; call it once the server
// has stopped serving, as ristretto does not expect Gets during its Close.
func (c *Cache) Close() error {
	c.wmu.Lock()
	if c.stopping {
		c.wmu.Unlock()
		return nil
	}
	c.stopping = true
	close(c.stop)
	c.wmu.Unlock()
	<-c.done
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.life.Lock()
	c.closed.Store(true)
	c.life.Unlock()
	if c.collector != nil {
		c.cfg.Registerer.Unregister(c.collector)
	}
	c.l1.Close()
	c.decoded.clear()
	c.bodies.closeHandles()
	// Puts and evictions commit without fsync; one synced record makes
	// everything before it in the WAL durable, once the directories hold
	// the names of the body files it refers to.
	err := c.bodies.syncDirs()
	if err == nil {
		err = c.db.LogData(nil, pebble.Sync)
	}
	if cerr := c.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close edge cache: %w", err)
	}
	return nil
}

// Get returns the entry under key: from L1, or from L2, promoting it to L1.
// An L1 hit allocates nothing. A corrupt L2 value is dropped in the
// background and reported as a miss, so that the edge fetches it again.
func (c *Cache) Get(key []byte) (*Entry, Level, bool) { return c.get(key, true) }

// Recheck is Get for a caller that already counted its miss: one that
// missed, then found no fill of the key under way, looks again in case a
// fill finished in between. A miss is not counted twice. The entry's body
// is in memory, as a fill's is.
func (c *Cache) Recheck(key []byte) (*Entry, bool) {
	e, _, ok := c.get(key, false)
	if ok && e.onDisk {
		body, err := c.ReadBody(e)
		if err != nil {
			return nil, false
		}
		// e may be L1's, shared with every hit: the body goes on a copy.
		cp := *e
		cp.Body, cp.onDisk = body, false
		return &cp, true
	}
	return e, ok
}

func (c *Cache) get(key []byte, countMiss bool) (*Entry, Level, bool) {
	if e, ok := c.l1.Get(key); ok && bytes.Equal(e.key, key) {
		c.ref.set(e.ref)
		c.stats.l1Hits.add(e.ref)
		return e, L1, true
	}
	h := c.hash(key)
	// The shard's generation is read before decoded: fence drops the key
	// from decoded before it moves the generation, so an entry found here
	// that a write has since made stale is not promoted (getL2's check).
	gen := c.shards[shardIndex(h)].gen.Load()
	// An entry decoded before, unless this hit is sampled to read its body
	// into L1 (getL2 does, from this entry).
	known := c.decoded.get(h, key)
	if known != nil && !c.closed.Load() && (known.size > memoryMax || !c.sampledDecoded()) {
		c.ref.set(known.ref)
		c.stats.l2Hits.add(known.ref)
		return known, L2, true
	}
	e, level, ok := c.getL2(key, h, gen, known)
	if !ok && countMiss {
		c.stats.misses.add(refIndex(h))
	}
	return e, level, ok
}

// getL2 reads key, whose hash is h, from L2, or takes known, its entry in
// decoded, and reads its body; gen is its shard's generation, read before
// decoded was. The caller counts a miss.
func (c *Cache) getL2(key []byte, h, gen uint64, known *Entry) (*Entry, Level, bool) {
	if !validKey(key) {
		return nil, Miss, false
	}
	c.life.RLock()
	defer c.life.RUnlock()
	if c.closed.Load() {
		return nil, Miss, false
	}
	s := &c.shards[shardIndex(h)]
	e, read := known, true
	if known == nil {
		c.stats.l2Reads.add(refIndex(h))
		v, closer, err := c.db.Get(recordKey(prefixValue, key))
		if err != nil {
			if !errors.Is(err, pebble.ErrNotFound) {
				slog.Error("edge cache read", "err", err)
			}
			return nil, Miss, false
		}
		e, err = decodeValue(v)
		closer.Close()
		if err != nil {
			c.reportCorrupt(key, err)
			return nil, Miss, false
		}
		e.prepare(key, h)
		read = e.size <= memoryMax && c.sampled()
	}
	if read {
		body, err := c.bodies.read(e)
		switch {
		case errors.Is(err, ErrCorrupt):
			c.reportCorrupt(key, err)
			return nil, Miss, false
		case err != nil: // removed since the value was read, most likely
			return nil, Miss, false
		}
		e = e.withBody(body) // a copy: known is decoded's, shared with other hits
	}
	c.ref.set(e.ref)
	c.stats.l2Hits.add(e.ref)
	// Keep the entry, with its body in L1 or without it in decoded (so that
	// the next hit skips pebble), unless a write to this shard (Put, purge,
	// eviction) started since the read: what was read may be stale now.
	// TryRLock never waits.
	if c.promote && s.mu.TryRLock() {
		if s.gen.Load() == gen {
			if read {
				c.l1.Set(e.key, e, e.cost)
			} else {
				c.decoded.put(h, e)
			}
		}
		s.mu.RUnlock()
	}
	return e, L2, true
}

// sampled draws the L2 hits on a body on disk that read it into L1: one in
// promoteOneIn; sampledDecoded those on an entry in decoded: one in
// promoteOneIn².
func (c *Cache) sampled() bool { return c.promote && rand.Uint32N(c.promoteOneIn) == 0 }

func (c *Cache) sampledDecoded() bool {
	n := uint64(c.promoteOneIn)
	return c.promote && rand.Uint64N(n*n) == 0
}

// reportCorrupt counts a corrupt L2 record of key and has the maintainer drop it.
func (c *Cache) reportCorrupt(key []byte, err error) {
	c.stats.l2Corrupt.Add(1)
	slog.Warn("edge cache corrupt entry", "key", string(key), "err", err)
	select {
	case c.repairs <- append([]byte(nil), key...):
	default: // the maintainer is busy; the next read finds it again
	}
}

// OpenBody opens the body of e, an entry Get returned with OnDisk true, to
// send it (Body.SendTo: sendfile). The caller closes it. An error (the
// entry was purged or evicted since the Get, or its file is damaged)
// means a miss: fetch it again.
func (c *Cache) OpenBody(e *Entry) (*Body, error) {
	if !e.onDisk {
		return nil, fmt.Errorf("%w: the body is in memory", ErrInvalidEntry)
	}
	h, err := c.bodies.handle(e)
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			c.reportCorrupt(e.key, err)
		}
		return nil, err
	}
	return &Body{h: h, end: int64(e.size), sent: &c.stats.sendfileBytes}, nil
}

// ReadBody returns e's body: Body, or the file of an entry on disk, read
// and checked against its checksum. An error means a miss, as for
// OpenBody.
func (c *Cache) ReadBody(e *Entry) ([]byte, error) {
	if !e.onDisk {
		return e.Body, nil
	}
	body, err := c.bodies.read(e)
	if errors.Is(err, ErrCorrupt) {
		c.reportCorrupt(e.key, err)
	}
	return body, err
}

// fence makes promotions of key that read L2 before now give up; those that
// already passed their check have queued their L1 Set, so an L1 Del issued
// after fence removes it. Call it after the L2 write and before touching L1.
// It drops key from decoded and returns its hash.
func (c *Cache) fence(key []byte) uint64 {
	h := c.hash(key)
	s := &c.shards[shardIndex(h)]
	s.mu.Lock()
	// Dropped before the generation moves: a hit that read the new
	// generation then finds no stale entry in decoded to promote (get).
	c.decoded.del(h, key)
	s.gen.Add(1)
	s.mu.Unlock()
	return h
}

// Epoch is a point in the cache's purge history.
type Epoch uint64

// Epoch returns the current point in the purge history. The edge takes one
// before fetching what a miss needs and gives it to PutSince, so that a
// fetch that raced with a purge cannot put back what the purge dropped.
func (c *Cache) Epoch() Epoch { return Epoch(c.epoch.Load()) }

// Purged reports whether a purge since ep dropped what e belongs to (its
// image, organization or tag), so that PutSince(ep, …, e) would refuse it.
// While no purge ended since ep it answers without waiting for the writes
// under way (wmu is held across a put's commit).
func (c *Cache) Purged(ep Epoch, e *Entry) bool {
	if c.Epoch() == ep {
		return false
	}
	m := meta{org: e.OrgID, image: e.ImageID, tag: e.Tag}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.purges.since(ep, &m)
}

// Put stores e under key in L2 then L1; see PutSince.
func (c *Cache) Put(key []byte, e *Entry) error { return c.PutSince(c.Epoch(), key, e) }

// PutSince stores a copy of e under key, unless a purge of its image,
// organization or tag has run since ep (ErrPurged). The copy shares e.Body:
// the caller must not modify it afterwards. L2 gets it first (written to
// pebble's log without fsync: a crash may lose it, never corrupt it; Close
// syncs), then L1, which may refuse it (admission), so a Get after Put finds
// it at one level or the other.
func (c *Cache) PutSince(ep Epoch, key []byte, in *Entry) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if !validKey(key) {
		return fmt.Errorf("%w: key of %d bytes", ErrInvalidEntry, len(key))
	}
	if err := in.validate(); err != nil {
		return err
	}
	e := &Entry{
		Body: in.Body, ContentType: in.ContentType, ETag: in.ETag,
		LastModified: in.LastModified.UTC(), StoredAt: in.StoredAt.UTC(),
		OrgID: in.OrgID, ImageID: in.ImageID, Tag: in.Tag,
		FreshUntil: in.FreshUntil.UTC(), StaleWhileRevalidate: in.StaleWhileRevalidate.Truncate(time.Second),
		Validator: in.Validator,
	}
	if y := e.StoredAt.Year(); y < 1970 || y > 9999 {
		e.StoredAt = time.Now().UTC()
	}
	e.size = len(in.Body)
	valueLen := encodedLen(e)
	if n := int64(valueLen) + int64(e.size); n > c.cfg.MaxEntryBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, c.cfg.MaxEntryBytes)
	}
	if c.Purged(ep, e) { // spare the file; checked again below
		c.stats.putsDropped.Add(1)
		return ErrPurged
	}
	e.sum = crc32.Checksum(e.Body, castagnoli)
	file, err := c.bodies.write(e.Body)
	if err != nil {
		return fmt.Errorf("cache put: %w", err)
	}
	e.file = file
	committed := false
	defer func() {
		if !committed {
			c.bodies.remove(file)
		}
	}()
	e.prepare(key, c.hash(key))

	// Encode outside the lock, straight into the batch.
	b := c.db.NewBatch()
	defer b.Close()
	op := b.SetDeferred(1+len(key), valueLen)
	op.Key[0] = prefixValue
	copy(op.Key[1:], key)
	encodeValue(op.Value, e)
	if err := op.Finish(); err != nil {
		return fmt.Errorf("cache put: %w", err)
	}
	m := meta{size: entrySize(key, e, valueLen), valueLen: uint32(valueLen), file: file, org: e.OrgID, image: e.ImageID, tag: e.Tag}

	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return ErrClosed
	}
	if c.purges.since(ep, &m) {
		c.stats.putsDropped.Add(1)
		return ErrPurged
	}
	old, found, err := c.readMeta(key)
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("cache put: %w", err)
	}
	if found {
		c.deleteSecondary(b, key, &old)
	}
	m.seq = c.nextSeq
	b.Set(recordKey(prefixMeta, key), encodeMeta(&m), nil)
	b.Set(queueKey(m.seq), key, nil)
	c.setIndexes(b, key, &m)
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("cache put: %w", err)
	}
	committed = true
	if found {
		c.bodies.remove(old.file)
	}
	c.nextSeq++
	c.stats.puts.Add(1)
	c.stats.l2Bytes.Add(m.size - old.size)
	if !found {
		c.stats.l2Entries.Add(1)
	}
	// L1: Del then Set so that the new cost goes through admission (an
	// update would change the cost without evicting), then Wait so that the
	// next Get sees it.
	h := c.fence(key)
	c.l1.Del(e.key)
	c.l1.Set(e.key, e, e.cost)
	c.l1.Wait()
	// Without its body too, for when L1 refuses or evicts it.
	c.decoded.put(h, e.withoutBody())
	if c.stats.l2Bytes.Load() > c.cfg.DiskBytes {
		c.wake()
	}
	return nil
}

// readMeta reads key's meta record; found is false when there is none. A
// corrupt one is reported with ErrCorrupt and found false.
func (c *Cache) readMeta(key []byte) (m meta, found bool, err error) {
	v, closer, err := c.db.Get(recordKey(prefixMeta, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	m, err = decodeMeta(v)
	closer.Close()
	return m, err == nil, err
}

// deleteSecondary adds to b the deletion of key's queue and index records.
func (c *Cache) deleteSecondary(b *pebble.Batch, key []byte, m *meta) {
	b.Delete(queueKey(m.seq), nil)
	for _, x := range m.ids() {
		b.Delete(indexKey(x.k, x.id, key), nil)
	}
}

func (c *Cache) setIndexes(b *pebble.Batch, key []byte, m *meta) {
	for _, x := range m.ids() {
		b.Set(indexKey(x.k, x.id, key), nil, nil)
	}
}

// deleteEntry adds to b the deletion of all of key's records.
func (c *Cache) deleteEntry(b *pebble.Batch, key []byte, m *meta) {
	b.DeleteSized(recordKey(prefixValue, key), m.valueLen, nil)
	b.Delete(recordKey(prefixMeta, key), nil)
	c.deleteSecondary(b, key, m)
}

// dropL1 removes keys from L1 after their L2 records are gone. wmu is held.
func (c *Cache) dropL1(keys [][]byte) {
	for _, key := range keys {
		c.fence(key)
		c.l1.Del(key)
	}
}

// PurgeImage drops every variant of an image from both levels and returns
// how many L2 entries it removed, once the removal is synced to disk.
func (c *Cache) PurgeImage(imageID string) (int, error) { return c.purge(byImage, imageID) }

// PurgeOrg drops every entry of an organization, like PurgeImage.
func (c *Cache) PurgeOrg(orgID string) (int, error) { return c.purge(byOrg, orgID) }

// PurgeTag drops every entry carrying tag, like PurgeImage.
func (c *Cache) PurgeTag(tag string) (int, error) { return c.purge(byTag, tag) }

// Delete drops key's entry from both levels, as when the origin answers
// that what it holds is gone, and reports whether L2 had one.
func (c *Cache) Delete(key []byte) (bool, error) {
	if !validKey(key) {
		return false, nil
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return false, ErrClosed
	}
	m, found, err := c.readMeta(key)
	corrupt := errors.Is(err, ErrCorrupt)
	if err != nil && !corrupt {
		return false, fmt.Errorf("cache delete: %w", err)
	}
	b := c.db.NewBatch()
	defer b.Close()
	switch {
	case found:
		c.deleteEntry(b, key, &m)
	case corrupt: // its index records stay, as after a repair
		b.Delete(recordKey(prefixValue, key), nil)
		b.Delete(recordKey(prefixMeta, key), nil)
	}
	if found || corrupt {
		if err := b.Commit(pebble.NoSync); err != nil {
			return false, fmt.Errorf("cache delete: %w", err)
		}
	}
	switch {
	case found:
		c.bodies.remove(m.file)
		c.stats.l2Bytes.Add(-m.size)
		c.stats.l2Entries.Add(-1)
	case corrupt:
		c.stats.l2Corrupt.Add(1)
		c.stats.l2Entries.Add(-1)
	}
	c.dropL1([][]byte{key})
	return found, nil
}

// purgeChunk bounds the keys one batch deletes.
const purgeChunk = 512

func (c *Cache) purge(k kind, id string) (int, error) {
	if id == "" || len(id) > maxIDLen {
		return 0, fmt.Errorf("%w: purge %s id of %d bytes", ErrInvalidEntry, k, len(id))
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed.Load() {
		return 0, ErrClosed
	}
	// Stream the index in chunks so that a large organization does not
	// hold all its keys in memory; wmu keeps the index still meanwhile.
	prefix := indexPrefix(k, id)
	lower, upper := prefix, prefixEnd(prefix)
	n, wrote := 0, false
	for {
		keys, err := c.indexKeys(lower, upper, len(prefix))
		if err != nil {
			return n, fmt.Errorf("purge %s %s: %w", k, id, err)
		}
		if len(keys) == 0 {
			break
		}
		removed, freed, err := c.purgeKeys(k, id, keys)
		if err != nil {
			return n, fmt.Errorf("purge %s %s: %w", k, id, err)
		}
		n += removed
		wrote = true
		c.stats.l2Bytes.Add(-freed)
		c.stats.l2Entries.Add(-int64(removed))
		c.dropL1(keys)
		if len(keys) < purgeChunk {
			break
		}
		lower = append(indexKey(k, id, keys[len(keys)-1]), 0)
	}
	if wrote {
		// The sync also makes the Puts before the purge durable, body
		// files included.
		if err := c.bodies.syncDirs(); err != nil {
			return n, fmt.Errorf("purge %s %s: %w", k, id, err)
		}
		if err := c.db.LogData(nil, pebble.Sync); err != nil {
			return n, fmt.Errorf("purge %s %s: sync: %w", k, id, err)
		}
	}
	c.purges.record(k, id, &c.epoch)
	c.stats.purges[purgeLabel(k)].Add(1)
	c.stats.purged.Add(uint64(n))
	return n, nil
}

// indexKeys returns up to purgeChunk keys of the index records in
// [lower, upper), whose first skip bytes are the index prefix.
func (c *Cache) indexKeys(lower, upper []byte, skip int) ([][]byte, error) {
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for valid := it.First(); valid && len(keys) < purgeChunk; valid = it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()[skip:]...))
	}
	return keys, it.Close()
}

// purgeKeys deletes the entries of keys indexed under (k, id). An index
// record whose entry is gone, or now belongs to another owner, is dropped
// alone.
func (c *Cache) purgeKeys(k kind, id string, keys [][]byte) (removed int, freed int64, err error) {
	b := c.db.NewBatch()
	defer b.Close()
	files := make([]uint64, 0, len(keys))
	for _, key := range keys {
		m, found, err := c.readMeta(key)
		switch {
		case errors.Is(err, ErrCorrupt):
			b.Delete(recordKey(prefixValue, key), nil)
			b.Delete(recordKey(prefixMeta, key), nil)
			b.Delete(indexKey(k, id, key), nil)
			c.stats.l2Corrupt.Add(1)
			continue
		case err != nil:
			return 0, 0, err
		case !found || !m.owns(k, id):
			b.Delete(indexKey(k, id, key), nil)
			continue
		}
		c.deleteEntry(b, key, &m)
		files = append(files, m.file)
		removed++
		freed += m.size
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return 0, 0, err
	}
	for _, f := range files {
		c.bodies.remove(f)
	}
	return removed, freed, nil
}

func (m *meta) owns(k kind, id string) bool {
	switch k {
	case byImage:
		return m.image == id
	case byOrg:
		return m.org == id
	}
	for t := range strings.FieldsSeq(m.tag) {
		if t == id {
			return true
		}
	}
	return false
}

func (c *Cache) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func beUint64(b []byte) uint64 {
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
}

func shardIndex(h uint64) int { return int(h >> 56) }

// pebbleLogger forwards pebble's errors to slog and drops its chatter.
type pebbleLogger struct{}

func (pebbleLogger) Infof(string, ...any) {}
func (pebbleLogger) Errorf(format string, args ...any) {
	slog.Error("edge cache pebble", "detail", fmt.Sprintf(format, args...))
}
func (pebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

// hash places a key's second-chance bit, promotion shard and counter stripe.
func (c *Cache) hash(key []byte) uint64 { return maphash.Bytes(c.seed1, key) }

// PurgeAll drops every entry from both levels (an edge that fell off the
// origin's purge log): organization by organization, since every entry has
// one. Entries fetched before it began are refused by PutSince, whatever
// their organization, including one that had nothing cached.
func (c *Cache) PurgeAll() error {
	c.wmu.Lock()
	c.purges.all(&c.epoch)
	c.wmu.Unlock()
	prefix := []byte{prefixIndex, byte(byOrg)}
	for {
		it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
		if err != nil {
			return err
		}
		var org string
		if it.First() {
			rest := it.Key()[len(prefix):]
			n, w := binary.Uvarint(rest)
			if w > 0 && uint64(len(rest)-w) >= n {
				org = string(rest[w : w+int(n)])
			}
		}
		if err := it.Close(); err != nil {
			return err
		}
		if org == "" {
			return nil
		}
		if _, err := c.PurgeOrg(org); err != nil {
			return err
		}
	}
}
