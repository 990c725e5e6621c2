package cache

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats is a snapshot of the cache's counters and sizes.
type Stats struct {
	// Gets by where they ended.
	L1Hits, L2Hits, Misses uint64
	// L2Corrupt counts values and meta records that failed their checksum
	// or structure checks and were dropped.
	L2Corrupt uint64
	// L2Reads counts the Gets that read L2's records in pebble: L2 hits on
	// entries decoded did not hold, and misses. DecodedBytes is the cost
	// of the entries decoded holds (at most DecodedMaxBytes).
	L2Reads                       uint64
	DecodedBytes, DecodedMaxBytes int64
	// L1Evictions and L1Rejections are ristretto's (policy evictions and
	// refused admissions); L2Evictions are the eviction clock's deletions and
	// L2SecondChances the hot entries it moved to the queue's tail instead.
	L1Evictions, L1Rejections, L2Evictions, L2SecondChances uint64
	// Puts stored, and those refused with ErrPurged.
	Puts, PutsPurged uint64
	// Purges by kind, and the L2 entries they removed.
	PurgesImage, PurgesOrg, PurgesTag, PurgedEntries uint64
	// L1Bytes is ristretto's used cost, never above L1MaxBytes (MemBytes).
	L1Bytes, L1MaxBytes int64
	// L2Bytes is L2's logical size, L2MaxBytes its cap (DiskBytes).
	L2Bytes, L2MaxBytes, L2Entries int64
	// SendfileBytes counts the body bytes Body.SendTo handed to sockets
	// with sendfile.
	SendfileBytes uint64
}

// Stats returns the current counters.
func (c *Cache) Stats() Stats {
	s := &c.stats
	maxCost := c.l1.MaxCost()
	return Stats{
		L1Hits:          s.l1Hits.load(),
		L2Hits:          s.l2Hits.load(),
		Misses:          s.misses.load(),
		L2Reads:         s.l2Reads.load(),
		DecodedBytes:    c.decoded.bytes.Load(),
		DecodedMaxBytes: c.decoded.max,
		L2Corrupt:       s.l2Corrupt.Load(),
		L1Evictions:     s.l1Evictions.Load(),
		L1Rejections:    s.l1Rejections.Load(),
		L2Evictions:     s.l2Evictions.Load(),
		L2SecondChances: s.l2SecondChances.Load(),
		Puts:            s.puts.Load(),
		PutsPurged:      s.putsDropped.Load(),
		PurgesImage:     s.purges[purgeLabel(byImage)].Load(),
		PurgesOrg:       s.purges[purgeLabel(byOrg)].Load(),
		PurgesTag:       s.purges[purgeLabel(byTag)].Load(),
		PurgedEntries:   s.purged.Load(),
		L1Bytes:         maxCost - c.l1.RemainingCost(),
		L1MaxBytes:      maxCost,
		L2Bytes:         s.l2Bytes.Load(),
		L2MaxBytes:      c.cfg.DiskBytes,
		L2Entries:       s.l2Entries.Load(),
		SendfileBytes:   s.sendfileBytes.Load(),
	}
}

type stats struct {
	l1Hits, l2Hits, misses, l2Reads      striped
	l2Corrupt, l1Evictions, l1Rejections atomic.Uint64
	l2Evictions, l2SecondChances         atomic.Uint64
	puts, putsDropped, purged            atomic.Uint64
	purges                               [3]atomic.Uint64
	l2Bytes, l2Entries                   atomic.Int64
	sendfileBytes                        atomic.Uint64
}

func purgeLabel(k kind) int {
	switch k {
	case byImage:
		return 0
	case byOrg:
		return 1
	}
	return 2
}

// striped is a counter spread over cache lines by a hash of the key, so that
// the hit path of different keys does not share one contended line.
type striped [8]struct {
	n atomic.Uint64
	_ [56]byte
}

func (s *striped) add(i uint32) { s[i&7].n.Add(1) }

func (s *striped) load() uint64 {
	var n uint64
	for i := range s {
		n += s[i].n.Load()
	}
	return n
}

// collector exports Stats at scrape time, so the hit path pays nothing for
// Prometheus.
type collector struct {
	c                                  *Cache
	hits, misses, corrupt, evictions   *prometheus.Desc
	rejections, chances, puts, purges  *prometheus.Desc
	purged, bytes, capacity, l2Entries *prometheus.Desc
	sendfile, l2Reads, decoded         *prometheus.Desc
	decodedCap                         *prometheus.Desc
}

func newCollector(c *Cache) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("pictor_edge_cache_"+name, help, labels, nil)
	}
	return &collector{
		c:          c,
		hits:       d("hits_total", "Gets answered, by level (l1, l2).", "level"),
		misses:     d("misses_total", "Gets a level did not answer, by level (l1: went to L2; l2: missed both).", "level"),
		corrupt:    d("l2_corrupt_total", "L2 records dropped because their checksum or structure was wrong."),
		evictions:  d("evictions_total", "Entries evicted to stay within the level's size, by level.", "level"),
		rejections: d("l1_rejections_total", "Entries L1's admission policy refused (L2 still holds them)."),
		chances:    d("l2_second_chances_total", "Recently hit L2 entries moved to the eviction queue's tail instead of evicted."),
		puts:       d("puts_total", "Puts, by result (stored; purged: fetched before a purge that covers it).", "result"),
		purges:     d("purges_total", "Purges, by what they select (image, org, tag).", "by"),
		purged:     d("purged_entries_total", "L2 entries removed by purges."),
		bytes:      d("bytes", "Bytes held, by level (L1: ristretto cost; L2: logical size of its records).", "level"),
		capacity:   d("capacity_bytes", "Configured size of each level.", "level"),
		l2Entries:  d("l2_entries", "Entries in L2."),
		sendfile:   d("sendfile_bytes_total", "L2 body bytes sent to clients with sendfile."),
		l2Reads:    d("l2_reads_total", "Gets that read L2's records on disk: L2 hits on entries not kept decoded in memory, and misses."),
		decoded:    d("decoded_bytes", "Bytes of the L2 entries kept decoded in memory, without their bodies."),
		decodedCap: d("decoded_capacity_bytes", "Bound of decoded_bytes, a fixed part of L2's memory."),
	}
}

func (k *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{k.hits, k.misses, k.corrupt, k.evictions, k.rejections, k.chances, k.puts, k.purges, k.purged, k.bytes, k.capacity, k.l2Entries, k.sendfile, k.l2Reads, k.decoded, k.decodedCap} {
		ch <- d
	}
}

func (k *collector) Collect(ch chan<- prometheus.Metric) {
	s := k.c.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	counter(k.hits, s.L1Hits, "l1")
	counter(k.hits, s.L2Hits, "l2")
	counter(k.misses, s.L2Hits+s.Misses, "l1")
	counter(k.misses, s.Misses, "l2")
	counter(k.corrupt, s.L2Corrupt)
	counter(k.evictions, s.L1Evictions, "l1")
	counter(k.evictions, s.L2Evictions, "l2")
	counter(k.rejections, s.L1Rejections)
	counter(k.chances, s.L2SecondChances)
	counter(k.puts, s.Puts, "stored")
	counter(k.puts, s.PutsPurged, "purged")
	counter(k.purges, s.PurgesImage, "image")
	counter(k.purges, s.PurgesOrg, "org")
	counter(k.purges, s.PurgesTag, "tag")
	counter(k.purged, s.PurgedEntries)
	gauge(k.bytes, s.L1Bytes, "l1")
	gauge(k.bytes, s.L2Bytes, "l2")
	gauge(k.capacity, s.L1MaxBytes, "l1")
	gauge(k.capacity, s.L2MaxBytes, "l2")
	gauge(k.l2Entries, s.L2Entries)
	counter(k.sendfile, s.SendfileBytes)
	counter(k.l2Reads, s.L2Reads)
	gauge(k.decoded, s.DecodedBytes)
	gauge(k.decodedCap, s.DecodedMaxBytes)
}
