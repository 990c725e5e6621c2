package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// bodyFiles counts the files under bodies/ and their bytes.
func (c *Cache) bodyFiles(t testing.TB) (files int, size int64) {
	t.Helper()
	err := c.bodies.list(func(n uint64) {
		st, err := c.bodies.fs.Stat(c.bodies.path(n))
		if err != nil {
			t.Errorf("stat body %d: %v", n, err)
			return
		}
		files++
		size += st.Size()
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, size
}

// sendOverTCP sends n bytes from start of e's body with Body.SendTo on a
// loopback connection and returns what the other end read.
func sendOverTCP(t *testing.T, c *Cache, e *Entry, start, n int64) []byte {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer conn.Close()
		b, _ := io.ReadAll(conn)
		got <- b
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	body, err := c.OpenBody(e)
	if err != nil {
		t.Fatal(err)
	}
	body.Part(start, n)
	rc, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	written, err := body.SendTo(rc)
	body.Close()
	conn.Close()
	if err != nil || written != n {
		t.Fatalf("SendTo wrote %d bytes (%v), want %d", written, err, n)
	}
	return <-got
}

// bodyInL1 reports whether L1 holds key's entry with its body.
func (c *Cache) bodyInL1(key string) bool {
	e, ok := c.l1.Get([]byte(key))
	return ok && string(e.key) == key && !e.OnDisk()
}

// bodyPath is the file of key's body, from its value record.
func (c *Cache) bodyPath(t testing.TB, key string) string {
	t.Helper()
	v, closer, err := c.db.Get(recordKey(prefixValue, []byte(key)))
	if err != nil {
		t.Fatalf("value of %s: %v", key, err)
	}
	defer closer.Close()
	e, err := decodeValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return c.bodies.path(e.file)
}

// TestSampledHitPromotesDecoded: a sampled L2 hit on an entry decoded
// before reads its body into L1 from that entry, without reading its
// record again; one whose entry a Put replaced after the hit found it
// promotes nothing (the shard's generation moved), and the next Get
// serves the new entry.
func TestSampledHitPromotesDecoded(t *testing.T) {
	c := openCache(t, testConfig(t))
	c.promoteOneIn = 1 << 30 // never: the first hit leaves the entry in decoded
	v1 := newEntry("o", "i", "", 8<<10, 1)
	mustPut(t, c, "k", v1)
	c.dropFromMemory("k")
	if _, lvl, ok := c.Get([]byte("k")); !ok || lvl != L2 || c.decodedEntry("k") == nil {
		t.Fatalf("first hit %v %v; decoded holds it: %v", lvl, ok, c.decodedEntry("k") != nil)
	}
	c.promoteOneIn = 1
	reads := c.Stats().L2Reads
	got, lvl, ok := c.Get([]byte("k"))
	if !ok || lvl != L2 || got.OnDisk() {
		t.Fatalf("sampled hit %v %v, on disk %v", lvl, ok, got.OnDisk())
	}
	sameEntry(t, c, got, v1)
	if n := c.Stats().L2Reads - reads; n != 0 {
		t.Fatalf("a sampled hit on a decoded entry read %d records, want 0", n)
	}
	c.l1.Wait()
	if !c.bodyInL1("k") {
		t.Fatal("the sampled hit did not promote the body to L1")
	}
	if e := c.decodedEntry("k"); e == nil || !e.OnDisk() || e.Body != nil {
		t.Fatal("the promotion changed decoded's entry")
	}

	// A hit finds the entry in decoded, then a write to its shard (of
	// another key, or of v2 over it), then the hit's promotion: what it
	// read may be stale, and it must not reach L1. Over v2, the hit may
	// also miss (v1's body file is gone).
	h := c.hash([]byte("k"))
	var other string
	for i := 0; other == ""; i++ {
		if k := fmt.Sprint("other", i); shardIndex(c.hash([]byte(k))) == shardIndex(h) {
			other = k
		}
	}
	for _, write := range []struct {
		key string
		e   *Entry
	}{{other, newEntry("o", "j", "", 100, 3)}, {"k", newEntry("o", "i", "", 8<<10, 2)}} {
		c.dropFromMemory("k")
		c.promoteOneIn = 1 << 30
		c.Get([]byte("k"))
		gen := c.shards[shardIndex(h)].gen.Load()
		known := c.decoded.get(h, []byte("k"))
		if known == nil {
			t.Fatal("decoded lost the entry")
		}
		mustPut(t, c, write.key, write.e)
		c.promoteOneIn = 1
		e, _, ok := c.getL2([]byte("k"), h, gen, known)
		if ok {
			sameEntry(t, c, e, v1)
		} else if write.key != "k" {
			t.Fatal("the hit missed with its body file in place")
		}
		c.l1.Wait()
		if l1, ok := c.l1.Get([]byte("k")); ok && l1.ETag == v1.ETag {
			t.Fatalf("after a write to %s, the hit promoted what it read", write.key)
		}
	}
	got, _, ok = c.Get([]byte("k"))
	if !ok {
		t.Fatal("miss after the Put")
	}
	sameEntry(t, c, got, newEntry("o", "i", "", 8<<10, 2))
}

// TestL2SendsLargeBodiesFromDisk: an L2 hit on a large body leaves it on
// disk for sendfile (an *os.File of exactly its bytes), a small one is read
// and promoted, and a body asked for often reaches L1 by sampling.
func TestL2SendsLargeBodiesFromDisk(t *testing.T) {
	c := openCache(t, testConfig(t))
	c.promoteOneIn = 1 << 30 // never, for the first part
	large := newEntry("o", "big", "", 64<<10, 1)
	mustPut(t, c, "large", large)
	c.dropFromMemory("large")

	got, lvl, ok := c.Get([]byte("large"))
	if !ok || lvl != L2 || !got.OnDisk() || got.Body != nil || got.Len() != len(large.Body) {
		t.Fatalf("L2 hit on a large body = %v %v, on disk %v, Body %d bytes, Len %d", lvl, ok, got.OnDisk(), len(got.Body), got.Len())
	}
	for _, part := range []struct{ start, n int64 }{{0, int64(len(large.Body))}, {1000, 20000}, {int64(len(large.Body)) - 7, 7}} {
		// Read, and sent with sendfile over a real socket: the same bytes.
		want := large.Body[part.start : part.start+part.n]
		body, err := c.OpenBody(got)
		if err != nil {
			t.Fatal(err)
		}
		body.Part(part.start, part.n)
		read, err := io.ReadAll(body)
		body.Close()
		if err != nil || !bytes.Equal(read, want) {
			t.Fatalf("part %+v read %d bytes (%v), want %d", part, len(read), err, len(want))
		}
		if sent := sendOverTCP(t, c, got, part.start, part.n); !bytes.Equal(sent, want) {
			t.Fatalf("part %+v: %d bytes arrived, want %d", part, len(sent), len(want))
		}
	}
	sameEntry(t, c, got, large)
	c.l1.Wait()
	if _, ok := c.l1.Get([]byte("large")); ok {
		t.Fatal("after an unsampled L2 hit on a large body, L1 holds it; want it in decoded only")
	}
	if e := c.decodedEntry("large"); e != got {
		t.Fatalf("after an unsampled L2 hit on a large body, decoded holds %v; want the entry the hit returned", e)
	}
	// The next hit finds it decoded, reads no record, and its body is
	// still on disk.
	reads := c.Stats().L2Reads
	if again, lvl, ok := c.Get([]byte("large")); !ok || lvl != L2 || again != got || c.Stats().L2Reads != reads {
		t.Fatalf("hit after the first = %v %v, the same entry %v, L2 reads %d → %d", lvl, ok, again == got, reads, c.Stats().L2Reads)
	}

	if _, err := c.OpenBody(&Entry{Body: large.Body}); !errors.Is(err, ErrInvalidEntry) {
		t.Fatalf("OpenBody of a body in memory = %v, want ErrInvalidEntry", err)
	}

	// Sampled: one hit in promoteSample² on an entry in decoded (where
	// the first hit leaves it) reads and promotes a body of up to
	// memoryMax; 4,000 hits all missing it has a probability of
	// (63/64)^4000, about 5e-28. A larger body is never read.
	c.promoteOneIn = promoteSample
	medium := newEntry("o", "medium", "", memoryMax, 3)
	mustPut(t, c, "medium", medium)
	c.dropFromMemory("medium")
	for i := 0; !c.bodyInL1("medium"); i++ {
		if i == 4000 {
			t.Fatal("4,000 L2 hits never promoted the body")
		}
		for _, key := range []string{"medium", "large"} {
			if _, _, ok := c.Get([]byte(key)); !ok {
				t.Fatalf("%s missed", key)
			}
		}
		c.l1.Wait()
	}
	got, lvl, _ = c.Get([]byte("medium"))
	if lvl != L1 || !bytes.Equal(got.Body, medium.Body) {
		t.Fatalf("after promotion: %v, %d bytes", lvl, len(got.Body))
	}
	if c.bodyInL1("large") {
		t.Fatal("a body over memoryMax was promoted")
	}
}

// TestBodyFileDamage: a body file cut short or altered is a miss and is
// dropped, a file removed behind the cache's back is a miss, and a fill
// puts each back.
func TestBodyFileDamage(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		damage  func(t *testing.T, path string)
		corrupt bool
	}{
		// Detected when a hit reads the body (a promotion); a body sent
		// from its file is checked for its length only.
		{"body altered, read by a hit", 5000, func(t *testing.T, path string) { flipByte(t, path, 100) }, true},
		{"large body cut short", 64 << 10, func(t *testing.T, path string) {
			if err := os.Truncate(path, 1000); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"large body grown", 64 << 10, func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("more"))
			f.Close()
		}, true},
		{"file removed", 64 << 10, func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := openCache(t, testConfig(t))
			c.promoteOneIn = 1 << 30
			if tt.size <= memoryMax {
				c.promoteOneIn = 1 // every hit reads it
			}
			e := newEntry("o", "i", "", tt.size, 1)
			mustPut(t, c, "k", e)
			mustPut(t, c, "other", newEntry("o", "j", "", tt.size, 2))
			c.dropFromMemory("k")
			tt.damage(t, c.bodyPath(t, "k"))

			got, _, ok := c.Get([]byte("k"))
			if ok && got.OnDisk() { // sent from disk: OpenBody checks its length
				body, err := c.OpenBody(got)
				if err == nil {
					body.Close()
				}
				if ok = err == nil; !ok && !tt.corrupt && !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("OpenBody of a removed file = %v, want fs.ErrNotExist", err)
				}
			}
			if ok {
				t.Fatal("a damaged body was served")
			}
			if s := c.Stats(); (s.L2Corrupt == 1) != tt.corrupt {
				t.Fatalf("L2Corrupt = %d, corrupt %v", s.L2Corrupt, tt.corrupt)
			}
			c.settle()
			if tt.corrupt && c.inL2("k") {
				t.Fatal("the damaged entry is still in L2 after repair")
			}
			if _, _, ok := c.Get([]byte("other")); !ok {
				t.Fatal("the intact entry is gone")
			}
			// The edge fetches it again and puts it back.
			mustPut(t, c, "k", e)
			c.dropFromMemory("k")
			c.promoteOneIn = 1
			got, lvl, ok := c.Get([]byte("k"))
			if !ok || lvl != L2 {
				t.Fatalf("Get after the refill = %v, %v", lvl, ok)
			}
			sameEntry(t, c, got, e)
			size, entries := c.scanned(t)
			if s := c.Stats(); s.L2Bytes != size || s.L2Entries != entries || entries != 2 {
				t.Fatalf("tracked %d bytes %d entries, scanned %d, %d", s.L2Bytes, s.L2Entries, size, entries)
			}
		})
	}
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// TestCrashMidWrite: the file system is cloned as a crash would leave it
// while a body is half written (its bytes not synced, its entry not
// committed). Reopened, the cache serves everything synced before, nothing
// corrupt, and the torn file is gone.
func TestCrashMidWrite(t *testing.T) {
	for seed := range 8 {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			cfg := testConfig(t)
			cfg.Dir, cfg.fs = "cache", mem
			c := openCache(t, cfg)
			want := map[string]*Entry{}
			for i := range 10 {
				key := fmt.Sprint("k", i)
				want[key] = newEntry("o", fmt.Sprint(i), "", 20000+i, uint64(i))
				mustPut(t, c, key, want[key])
			}
			// A purge that drops something syncs what came before it.
			mustPut(t, c, "purged", newEntry("o", "p", "x", 100, 50))
			if n, err := c.PurgeTag("x"); err != nil || n != 1 {
				t.Fatalf("PurgeTag = %d, %v", n, err)
			}
			var crashed *vfs.MemFS
			c.bodies.beforeSync = func() {
				crashed = mem.CrashClone(vfs.CrashCloneCfg{
					UnsyncedDataPercent: 50,
					RNG:                 rand.New(rand.NewPCG(uint64(seed), 3)),
				})
			}
			mustPut(t, c, "torn", newEntry("o", "t", "", 50000, 99))
			c.bodies.beforeSync = nil
			if crashed == nil {
				t.Fatal("no crash image was taken")
			}

			cfg.fs = crashed
			c2 := openCache(t, cfg)
			c2.promoteOneIn = 1
			if _, _, ok := c2.Get([]byte("torn")); ok {
				t.Fatal("the entry whose body was being written is served")
			}
			for key, e := range want {
				got, _, ok := c2.Get([]byte(key))
				if !ok {
					t.Fatalf("%s, synced before the crash, was lost", key)
				}
				sameEntry(t, c2, got, e)
			}
			if files, _ := c2.bodyFiles(t); files != len(want) {
				t.Fatalf("%d body files after reopening, want %d (the torn one removed)", files, len(want))
			}
			if s := c2.Stats(); s.L2Corrupt != 0 || s.L2Entries != int64(len(want)) {
				t.Fatalf("after the crash: %+v", s)
			}
			size, _ := c2.scanned(t)
			if s := c2.Stats(); s.L2Bytes != size {
				t.Fatalf("tracked %d bytes, scanned %d", s.L2Bytes, size)
			}
		})
	}
}

// TestOpenMatchesRecordsAndFiles: Open removes files no record names and
// drops records whose file is gone, and keeps the sizes true.
func TestOpenMatchesRecordsAndFiles(t *testing.T) {
	cfg := testConfig(t)
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		mustPut(t, c, fmt.Sprint("k", i), newEntry("o", fmt.Sprint(i), "", 10000, uint64(i)))
	}
	gone := c.bodyPath(t, "k2")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	stray := []string{
		filepath.Join(cfg.Dir, bodiesDir, "07", "0000000000001007"), // an orphan: no record names it
		filepath.Join(cfg.Dir, bodiesDir, "07", "not-a-body"),
		filepath.Join(cfg.Dir, bodiesDir, "07", "0000000000000008"), // in the wrong directory
	}
	for _, p := range stray {
		if err := os.WriteFile(p, []byte("left by a crash"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	c = openCache(t, cfg)
	for _, p := range stray {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s survived Open: %v", p, err)
		}
	}
	if _, _, ok := c.Get([]byte("k2")); ok {
		t.Fatal("the entry whose file is gone is served")
	}
	s := c.Stats()
	size, entries := c.scanned(t)
	if s.L2Entries != 5 || entries != 5 || s.L2Bytes != size || s.L2Corrupt != 0 {
		t.Fatalf("reopened with %+v; scanned %d bytes %d entries", s, size, entries)
	}
	if files, _ := c.bodyFiles(t); files != 5 {
		t.Fatalf("%d body files, want 5", files)
	}
	// New files never reuse the number of one found at Open.
	mustPut(t, c, "new", newEntry("o", "n", "", 100, 9))
	if p := c.bodyPath(t, "new"); filepath.Base(p) <= "0000000000001007" {
		t.Fatalf("new body %s is not numbered above the files found", p)
	}
}

// TestOpenEmptiesOldLayout: a cache of the layout that kept bodies in
// pebble is emptied and claimed, not refused (it is a cache).
func TestOpenEmptiesOldLayout(t *testing.T) {
	cfg := testConfig(t)
	db, err := openPebble(cfg.Dir, vfs.Default)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{formatKey: formatOld, "vimg": "an old value with its body", "mimg": "an old meta"} {
		if err := db.Set([]byte(k), []byte(v), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	c := openCache(t, cfg)
	if s := c.Stats(); s.L2Entries != 0 || s.L2Bytes != 0 || s.L2Corrupt != 0 {
		t.Fatalf("opened the old layout with %+v", s)
	}
	if c.inL2("img") {
		t.Fatal("an old record survived")
	}
	mustPut(t, c, "k", newEntry("o", "i", "", 100, 1))
	if _, _, ok := c.Get([]byte("k")); !ok {
		t.Fatal("the claimed directory does not cache")
	}
}

// TestConcurrentFillsOfOneKey: puts of one key racing each other leave one
// entry, one file, and a body matching its ETag.
func TestConcurrentFillsOfOneKey(t *testing.T) {
	c := openCache(t, testConfig(t))
	c.promoteOneIn = 1 << 30
	const n = 16
	entries := make([]*Entry, n)
	for i := range entries {
		entries[i] = newEntry("o", "i", "", 30000+i, uint64(i))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			if err := c.Put([]byte("k"), entries[i]); err != nil {
				t.Errorf("Put %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if files, _ := c.bodyFiles(t); files != 1 {
		t.Fatalf("%d body files for one key", files)
	}
	c.dropFromMemory("k")
	got, _, ok := c.Get([]byte("k"))
	if !ok {
		t.Fatal("k missed")
	}
	var want *Entry
	for _, e := range entries {
		if e.ETag == got.ETag {
			want = e
		}
	}
	if want == nil {
		t.Fatalf("ETag %s is none of the puts'", got.ETag)
	}
	sameEntry(t, c, got, want)
	size, count := c.scanned(t)
	if s := c.Stats(); s.L2Entries != 1 || count != 1 || s.L2Bytes != size {
		t.Fatalf("tracked %+v, scanned %d bytes %d entries", s, size, count)
	}
}

// TestPurgeRemovesBodyFiles: purges and Delete remove the files of what
// they drop and nothing else.
func TestPurgeRemovesBodyFiles(t *testing.T) {
	c := openCache(t, testConfig(t))
	for i := range 12 {
		mustPut(t, c, fmt.Sprint("k", i), newEntry(fmt.Sprint("o", i%2), fmt.Sprint(i%3), fmt.Sprint("t", i%4), 9000, uint64(i)))
	}
	steps := []struct {
		name  string
		purge func() (int, error)
		files int
	}{
		{"image 0", func() (int, error) { return c.PurgeImage("0") }, 8},
		{"tag t1", func() (int, error) { return c.PurgeTag("t1") }, 6}, // k1 k5 (k9 went with image 0)
		{"delete k2", func() (int, error) {
			found, err := c.Delete([]byte("k2"))
			return map[bool]int{true: 1}[found], err
		}, 5},
		{"org o1", func() (int, error) { return c.PurgeOrg("o1") }, 3},
	}
	for _, st := range steps {
		if _, err := st.purge(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		files, _ := c.bodyFiles(t)
		if s := c.Stats(); files != st.files || s.L2Entries != int64(files) {
			t.Fatalf("after %s: %d files, %d entries; want %d", st.name, files, s.L2Entries, st.files)
		}
	}
}

// TestBodyHandles: the files kept open for hits are bounded by the handle
// table; a body being sent when its entry is purged is sent whole, and
// its file is closed once the answer is done with it; after the purge the
// entry's body cannot be opened again.
func TestBodyHandles(t *testing.T) {
	cfg := testConfig(t)
	c := openCache(t, cfg)
	c.promoteOneIn = 1 << 30
	const slots = 64 // a small table, so that it fills
	c.bodies.handles = make([]atomic.Pointer[fileHandle], slots)
	n := slots + slots/4
	dir := filepath.Join(cfg.Dir, bodiesDir)
	entries := make([]*Entry, n)
	for i := range n {
		entries[i] = newEntry("o", fmt.Sprint(i), "", 1000+i, uint64(i))
		mustPut(t, c, fmt.Sprint("k", i), entries[i])
		c.dropFromMemory(fmt.Sprint("k", i))
	}
	got := make([]*Entry, n)
	for i := range n {
		e, _, ok := c.Get([]byte(fmt.Sprint("k", i)))
		if !ok || !e.OnDisk() {
			t.Fatalf("k%d: hit %v, on disk %v", i, ok, ok && e.OnDisk())
		}
		got[i] = e
		body, err := c.OpenBody(e)
		if err != nil {
			t.Fatal(err)
		}
		body.Close()
	}
	if open := apitest.OpenFilesUnder(t, dir); open > slots || open == 0 {
		t.Fatalf("%d body files open after %d hits, table of %d", open, n, slots)
	}

	// Purged while being sent.
	body, err := c.OpenBody(got[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PurgeImage("0"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenBody(got[0]); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenBody after the purge = %v, want fs.ErrNotExist", err)
	}
	read, err := io.ReadAll(body)
	if err != nil || !bytes.Equal(read, entries[0].Body) {
		t.Fatalf("the body being sent during its purge: %d bytes (%v), want %d", len(read), err, len(entries[0].Body))
	}
	before := apitest.OpenFilesUnder(t, dir)
	body.Close()
	if after := apitest.OpenFilesUnder(t, dir); after != before-1 {
		t.Fatalf("closing the purged body left %d files open, %d before", after, before)
	}
	if _, err := c.PurgeOrg("o"); err != nil {
		t.Fatal(err)
	}
	if open := apitest.OpenFilesUnder(t, dir); open != 0 {
		t.Fatalf("%d body files open after purging everything", open)
	}
}

// TestOpenBodyAfterClose: a body opened after Close (an answer still under
// way when the edge stops) reads whole, and closing it leaves no file open:
// the handle table, swept by Close, keeps nothing opened since.
func TestOpenBodyAfterClose(t *testing.T) {
	cfg := testConfig(t)
	c := openCache(t, cfg)
	c.promoteOneIn = 1 << 30
	want := newEntry("o", "i", "", 9000, 1)
	mustPut(t, c, "k", want)
	c.dropFromMemory("k")
	e, _, ok := c.Get([]byte("k"))
	if !ok || !e.OnDisk() {
		t.Fatalf("hit %v, on disk %v", ok, ok && e.OnDisk())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cfg.Dir, bodiesDir)
	body, err := c.OpenBody(e)
	if err != nil {
		t.Fatal(err)
	}
	read, err := io.ReadAll(body)
	if err != nil || !bytes.Equal(read, want.Body) {
		t.Fatalf("read %d bytes (%v), want %d", len(read), err, len(want.Body))
	}
	body.Close()
	if open := apitest.OpenFilesUnder(t, dir); open != 0 {
		t.Fatalf("%d body files open after the only body opened since Close was closed", open)
	}
}

// TestHandleSlots: the handle table leaves the process its reserve of
// descriptors and stays within its bounds.
func TestHandleSlots(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	n := uint64(handleSlots())
	if n < 256 || n > 16384 || (rl.Cur > 5120+256 && n > rl.Cur-5120) {
		t.Fatalf("%d handle slots under an open-file limit of %d", n, rl.Cur)
	}
}

// TestRecheckLeavesDecodedAlone: Recheck returns the body in memory without
// changing the entry decoded shares with every other hit.
func TestRecheckLeavesDecodedAlone(t *testing.T) {
	c := openCache(t, testConfig(t))
	c.promoteOneIn = 1 << 30
	e := newEntry("o", "i", "", 64<<10, 1)
	mustPut(t, c, "k", e)
	c.dropFromMemory("k")
	if got, _, ok := c.Get([]byte("k")); !ok || !got.OnDisk() {
		t.Fatal("the first hit did not leave the body on disk")
	}
	c.l1.Wait()
	got, ok := c.Recheck([]byte("k"))
	if !ok || got.OnDisk() || !bytes.Equal(got.Body, e.Body) {
		t.Fatalf("Recheck = %v, body in memory %v", ok, ok && !got.OnDisk())
	}
	shared := c.decodedEntry("k")
	if shared == nil || !shared.OnDisk() || shared.Body != nil {
		t.Fatalf("decoded's entry after Recheck: %v", shared)
	}
}

// TestL2IndexInBlockCache: an L2 hit reads its index record from pebble's
// block cache once the block is there, not from the file each time. The
// memtables' reservations once took the whole block cache, and every hit
// read its block again.
func TestL2IndexInBlockCache(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dir, cfg.fs = "cache", vfs.NewMem() // 10,000 puts without a disk sync each
	c := openCache(t, cfg)
	const n = 10000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("/v1/image/%08d.webp?width=600", i)
		mustPut(t, c, keys[i], newEntry("org", fmt.Sprint(i), "", 64, uint64(i)))
	}
	if err := c.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := c.db.Compact(t.Context(), []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	c.promote = false
	pass := func() (hits, misses int64) {
		before := c.db.Metrics().BlockCache
		for _, k := range keys {
			c.dropFromMemory(k)
			if _, lvl, ok := c.Get([]byte(k)); !ok || lvl != L2 {
				t.Fatalf("Get %s: level %v, %v; want an L2 hit", k, lvl, ok)
			}
		}
		after := c.db.Metrics().BlockCache
		return after.Hits - before.Hits, after.Misses - before.Misses
	}
	pass() // the blocks' first reads
	if hits, misses := pass(); misses != 0 || hits < n {
		t.Fatalf("second pass over %d L2 entries: %d block cache hits, %d misses; want every read a hit", n, hits, misses)
	}
}

// TestMemoryBody: a body in memory reads, narrows and reports its bytes
// like one on disk, and once closed reads nothing.
func TestMemoryBody(t *testing.T) {
	p := []byte("0123456789abcdef")
	b := MemoryBody(p)
	if m, ok := b.Memory(); !ok || !bytes.Equal(m, p) || b.Len() != len(p) {
		t.Fatalf("Memory %q, %v, Len %d; want all of %q", m, ok, b.Len(), p)
	}
	b.Part(4, 6)
	if m, _ := b.Memory(); string(m) != "456789" || b.Len() != 6 {
		t.Fatalf("Part(4, 6): Memory %q, Len %d", m, b.Len())
	}
	got, err := io.ReadAll(onlyReader{b})
	if err != nil || string(got) != "456789" {
		t.Fatalf("read %q, %v", got, err)
	}
	var sink bytes.Buffer
	if n, err := MemoryBody(p).WriteTo(&sink); n != int64(len(p)) || err != nil || !bytes.Equal(sink.Bytes(), p) {
		t.Fatalf("WriteTo: %d, %v, %q", n, err, sink.Bytes())
	}
	b.Close()
	if _, ok := b.Memory(); ok {
		t.Fatal("a closed body still has memory")
	}
	if _, err := b.Read(make([]byte, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v, want ErrClosed", err)
	}
}
