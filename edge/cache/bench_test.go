package cache

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Bodies of 24 KiB: the hot-image JPEG of the edge's benchmark.
const benchBody = 24 << 10

func benchCache(b *testing.B, mem, disk int64) *Cache {
	cfg := testConfig(b)
	cfg.MemBytes, cfg.DiskBytes = mem, disk
	return openCache(b, cfg)
}

// fill puts n entries, then flushes and compacts so that the measurement
// does not share the two cores with compactions of the setup's writes.
func fill(b *testing.B, c *Cache, n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("/v1/image/%08d.webp?width=600", i))
		mustPut(b, c, string(keys[i]), newEntry("org", fmt.Sprint(i), "", benchBody, uint64(i)))
	}
	if err := c.db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := c.db.Compact(b.Context(), []byte{0}, []byte{0xff}, true); err != nil {
		b.Fatal(err)
	}
	return keys
}

// BenchmarkGetL1 is the edge's hot-image hit: it must report 0 allocs/op.
func BenchmarkGetL1(b *testing.B) {
	c := benchCache(b, 64<<20, 1<<30)
	key := fill(b, c, 1)[0]
	b.ReportAllocs()
	b.SetBytes(benchBody)
	for b.Loop() {
		if _, lvl, _ := c.Get(key); lvl != L1 {
			b.Fatalf("level %v", lvl)
		}
	}
}

// BenchmarkGetL1Parallel is the same hit from every core on one key.
func BenchmarkGetL1Parallel(b *testing.B) {
	c := benchCache(b, 64<<20, 1<<30)
	key := fill(b, c, 1)[0]
	b.ReportAllocs()
	b.SetBytes(benchBody)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, lvl, _ := c.Get(key); lvl != L1 {
				b.Errorf("level %v", lvl)
				return
			}
		}
	})
}

// BenchmarkGetL2 gets entries from L2 without promoting them, so every Get
// is an L2 hit on a body left on disk: the index record read and checked,
// the header bytes, and the body file opened and closed as an answer that
// sends it does.
func BenchmarkGetL2(b *testing.B) {
	c := benchCache(b, 1<<20, 1<<30)
	keys := fill(b, c, 1000)
	c.promote = false
	for _, k := range keys {
		c.dropFromMemory(string(k))
	}
	b.ReportAllocs()
	b.SetBytes(benchBody)
	i := 0
	for b.Loop() {
		e, lvl, _ := c.Get(keys[i%len(keys)])
		if lvl != L2 || !e.OnDisk() {
			b.Fatalf("level %v", lvl)
		}
		f, err := c.OpenBody(e)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
		i++
	}
}

// BenchmarkGetZipf is the edge's second scenario: Zipf-distributed Gets over
// more images than L1 holds (4000 × 24 KiB through a 32 MiB L1), promotion on.
func BenchmarkGetZipf(b *testing.B) {
	c := benchCache(b, 32<<20, 1<<30)
	keys := fill(b, c, 4000)
	for _, k := range keys {
		c.dropFromMemory(string(k))
	}
	z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, uint64(len(keys)-1))
	before := c.Stats()
	b.ReportAllocs()
	b.SetBytes(benchBody)
	for b.Loop() {
		if _, _, ok := c.Get(keys[z.Uint64()]); !ok {
			b.Fatal("miss")
		}
	}
	s := c.Stats()
	l1, l2 := s.L1Hits-before.L1Hits, s.L2Hits-before.L2Hits
	b.ReportMetric(100*float64(l1)/float64(l1+l2), "%L1")
}

// BenchmarkPut stores distinct 24 KiB entries; past 256 MiB eviction runs
// beside it.
func BenchmarkPut(b *testing.B) {
	c := benchCache(b, 64<<20, 256<<20)
	entries := make([]*Entry, 64)
	for i := range entries {
		entries[i] = newEntry("org", fmt.Sprint(i), "", benchBody, uint64(i))
	}
	b.ReportAllocs()
	b.SetBytes(benchBody)
	i := 0
	for b.Loop() {
		key := fmt.Appendf(nil, "/v1/image/%08d.webp", i)
		if err := c.Put(key, entries[i%len(entries)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkWriteAmplification puts distinct 2.8 MB entries (a rendered
// master's weight) through a 256 MiB L2, eviction running beside it, and
// reports what reached the disk per byte of body: the body files (written
// once) and pebble's writes (its log, flushes and compactions, of the
// index records only). When pebble held the bodies, they were written
// about three times.
func BenchmarkWriteAmplification(b *testing.B) {
	const master = 2800 << 10
	c := benchCache(b, 16<<20, 256<<20)
	entries := make([]*Entry, 16)
	for i := range entries {
		entries[i] = newEntry("org", fmt.Sprint(i), "", master, uint64(i))
	}
	pebbleWrites := func() uint64 {
		t := c.db.Metrics().Total()
		return t.TableBytesFlushed + t.TableBytesCompacted
	}
	before := pebbleWrites()
	b.SetBytes(master)
	i := 0
	for b.Loop() {
		if err := c.Put(fmt.Appendf(nil, "i|%08d|png|", i), entries[i%len(entries)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	c.settle()
	if err := c.db.Flush(); err != nil {
		b.Fatal(err)
	}
	bodies := float64(i) * master
	pebble := float64(pebbleWrites() - before)
	b.ReportMetric(pebble/bodies, "pebble-bytes/body-byte")
	b.ReportMetric((pebble+bodies)/bodies, "disk-bytes/body-byte")
}
