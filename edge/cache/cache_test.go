package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"
)

// testConfig is small enough for eviction to be reachable in tests.
func testConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.MemBytes = 8 << 20
	cfg.DiskBytes = 64 << 20
	cfg.MaxEntryBytes = 4 << 20
	return cfg
}

func openCache(t testing.TB, cfg Config) *Cache {
	t.Helper()
	c, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// newEntry returns an entry whose body is n bytes derived from seed.
func newEntry(org, image, tag string, n int, seed uint64) *Entry {
	body := make([]byte, n)
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	rand.NewChaCha8(s).Read(body)
	return &Entry{
		Body:         body,
		ContentType:  "image/png",
		ETag:         fmt.Sprintf(`"%s-%d"`, image, seed),
		LastModified: time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC),
		OrgID:        org,
		ImageID:      image,
		Tag:          tag,
	}
}

// newOGEntry returns an entry as the edge keeps an OG image: tagged with
// its configuration, fresh for a while; validator "" when it is the ETag.
func newOGEntry(org, tag, validator string, n int, seed uint64) *Entry {
	e := newEntry(org, "", tag, n, seed)
	e.FreshUntil = time.Date(2026, 5, 6, 7, 8, 9, 10, time.UTC)
	e.StaleWhileRevalidate = 7 * 24 * time.Hour
	e.Validator = validator
	return e
}

func mustPut(t testing.TB, c *Cache, key string, e *Entry) {
	t.Helper()
	if err := c.Put([]byte(key), e); err != nil {
		t.Fatalf("Put %s: %v", key, err)
	}
}

func (c *Cache) inL1(key string) bool {
	e, ok := c.l1.Get([]byte(key))
	return ok && string(e.key) == key
}

// inMemory reports whether L1 or decoded holds key: either must be in L2
// too, or a purge could not find it.
func (c *Cache) inMemory(key string) bool { return c.inL1(key) || c.decodedEntry(key) != nil }

func (c *Cache) inL2(key string) bool {
	v, closer, err := c.db.Get(recordKey(prefixValue, []byte(key)))
	if err != nil {
		return false
	}
	_ = v
	closer.Close()
	return true
}

// dropFromMemory forgets key in L1 and decoded, so the next Get reads
// pebble.
func (c *Cache) dropFromMemory(key string) {
	c.l1.Del([]byte(key))
	c.l1.Wait()
	c.decoded.del(c.hash([]byte(key)), []byte(key))
}

// decodedEntry returns decoded's entry under key, or nil.
func (c *Cache) decodedEntry(key string) *Entry {
	return c.decoded.get(c.hash([]byte(key)), []byte(key))
}

// scanned recomputes L2's size and entry count as Open does.
func (c *Cache) scanned(t testing.TB) (size, entries int64) {
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixMeta}, UpperBound: []byte{prefixMeta + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		m, err := decodeMeta(it.Value())
		if err != nil {
			t.Fatalf("meta of %q: %v", it.Key(), err)
		}
		size += m.size
		entries++
	}
	return size, entries
}

// sameEntry compares got with want, reading got's body from c when it is
// on disk; with a nil c (a decoded value alone) it compares the body's
// length and checksum.
func sameEntry(t testing.TB, c *Cache, got, want *Entry) {
	t.Helper()
	body := got.Body
	switch {
	case got.OnDisk() && c != nil:
		var err error
		if body, err = c.ReadBody(got); err != nil {
			t.Fatalf("body of an entry on disk: %v", err)
		}
	case got.OnDisk():
		if got.size != len(want.Body) || got.sum != crc32.Checksum(want.Body, castagnoli) {
			t.Fatalf("body of %d bytes, sum %08x; want %d bytes", got.size, got.sum, len(want.Body))
		}
		body = want.Body
	}
	if got.Len() != len(want.Body) {
		t.Fatalf("Len %d, want %d", got.Len(), len(want.Body))
	}
	if !bytes.Equal(body, want.Body) || got.ContentType != want.ContentType || got.ETag != want.ETag ||
		!got.LastModified.Equal(want.LastModified) || got.OrgID != want.OrgID || got.ImageID != want.ImageID || got.Tag != want.Tag ||
		!got.FreshUntil.Equal(want.FreshUntil) || got.StaleWhileRevalidate != want.StaleWhileRevalidate || got.Validator != want.Validator {
		g, w := *got, *want
		g.Body, w.Body = nil, nil
		t.Fatalf("entry differs (bodies equal: %v, %d vs %d bytes, on disk %v):\n got %+v\nwant %+v", bytes.Equal(body, want.Body), len(body), len(want.Body), got.OnDisk(), g, w)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mut  func(*Config)
		flag string // "" when valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"no dir", func(c *Config) { c.Dir = "" }, "--cache-dir"},
		{"tiny memory", func(c *Config) { c.MemBytes = 1 << 10 }, "--cache-mem"},
		{"tiny disk", func(c *Config) { c.DiskBytes = 1 << 10 }, "--cache-disk"},
		{"no entry size", func(c *Config) { c.MaxEntryBytes = 0 }, "--cache-max-entry"},
		{"entry over a quarter of disk", func(c *Config) { c.DiskBytes = 16 << 20; c.MaxEntryBytes = 8 << 20 }, "--cache-max-entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.mut(&cfg)
			err := cfg.Validate()
			if tt.flag == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.flag) {
				t.Fatalf("Validate = %v, want an error naming %s", err, tt.flag)
			}
		})
	}
}

func TestPutGet(t *testing.T) {
	c := openCache(t, testConfig(t))
	c.promoteOneIn = 1 // every L2 hit is read and promoted
	tests := []struct {
		name  string
		key   string
		entry *Entry
	}{
		{"image variant", "img/a/w=600.webp", newEntry("org1", "a", "", 24<<10, 1)},
		{"large rendition, read back from disk by no hit", "img/a/w=1200.webp", newEntry("org1", "a", "", memoryMax+1, 7)},
		{"tagged signed url", "sig/xyz", newEntry("org1", "", "api-1", 1000, 2)},
		{"all owners", "img/b/png", newEntry("org2", "b", "api-2", 10, 3)},
		{"empty body, no last-modified", "img/c", func() *Entry { e := newEntry("org2", "c", "", 0, 4); e.LastModified = time.Time{}; return e }()},
		{"og image, fitted", "o|d|twitter|/a", newOGEntry("org3", "og:cfg1", `"origin-1"`, 2000, 5)},
		{"og image, as is, long key", "o|d|default|/" + strings.Repeat("p", 3000), newOGEntry("org3", "og:cfg1", "", 2000, 6)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A body over memoryMax, once out of L1, is only sent from
			// disk; decoded keeps the entry without it.
			large := len(tt.entry.Body) > memoryMax
			mustPut(t, c, tt.key, tt.entry)
			got, lvl, ok := c.Get([]byte(tt.key))
			if !ok || lvl != L1 {
				t.Fatalf("Get after Put = %v, %v; want an L1 hit", lvl, ok)
			}
			sameEntry(t, c, got, tt.entry)
			if got == tt.entry {
				t.Fatal("Get returned the caller's Entry, want the cache's copy")
			}
			if string(got.ContentTypeBytes()) != tt.entry.ContentType || string(got.ETagBytes()) != tt.entry.ETag {
				t.Fatalf("header bytes %q %q", got.ContentTypeBytes(), got.ETagBytes())
			}
			wantLM := ""
			if !tt.entry.LastModified.IsZero() {
				wantLM = tt.entry.LastModified.Format("Mon, 02 Jan 2006 15:04:05 GMT")
			}
			if string(got.LastModifiedBytes()) != wantLM {
				t.Fatalf("Last-Modified bytes %q, want %q", got.LastModifiedBytes(), wantLM)
			}
			if got.StoredAt.IsZero() {
				t.Fatal("StoredAt not set")
			}
			// The same entry from L2.
			c.dropFromMemory(tt.key)
			got2, lvl, ok := c.Get([]byte(tt.key))
			if !ok || lvl != L2 || got2.OnDisk() != large {
				t.Fatalf("Get after dropping L1 = %v, %v, on disk %v; want an L2 hit", lvl, ok, got2.OnDisk())
			}
			sameEntry(t, c, got2, tt.entry)
			if !got2.StoredAt.Equal(got.StoredAt) || !bytes.Equal(got2.LastModifiedBytes(), got.LastModifiedBytes()) {
				t.Fatalf("L2 copy differs in times: %v %q", got2.StoredAt, got2.LastModifiedBytes())
			}
			// Promoted: the next Get is an L1 hit, or for a large body
			// an L2 hit on the entry decoded kept, reading no record.
			c.l1.Wait()
			want := map[bool]Level{false: L1, true: L2}[large]
			reads := c.Stats().L2Reads
			if _, lvl, _ := c.Get([]byte(tt.key)); lvl != want || c.inL1(tt.key) == large || c.Stats().L2Reads != reads {
				t.Fatalf("Get after an L2 hit = %v, want %v (promoted); in L1 %v; L2 reads %d → %d", lvl, want, c.inL1(tt.key), reads, c.Stats().L2Reads)
			}
		})
	}
	if _, lvl, ok := c.Get([]byte("img/none")); ok || lvl != Miss {
		t.Fatalf("Get of an absent key = %v, %v", lvl, ok)
	}
	if s := c.Stats(); s.Puts != uint64(len(tests)) || s.L2Entries != int64(len(tests)) {
		t.Fatalf("stats %+v", s)
	}
}

func TestPutOverwrite(t *testing.T) {
	c := openCache(t, testConfig(t))
	mustPut(t, c, "k", newEntry("o1", "a", "t1", 5000, 1))
	mustPut(t, c, "k", newEntry("o2", "b", "", 100, 2))
	got, _, ok := c.Get([]byte("k"))
	if !ok || got.ImageID != "b" {
		t.Fatalf("Get = %+v, %v; want the second Put", got, ok)
	}
	size, entries := c.scanned(t)
	if s := c.Stats(); s.L2Bytes != size || s.L2Entries != 1 || entries != 1 {
		t.Fatalf("after overwrite: tracked %d bytes %d entries, scanned %d bytes %d entries", s.L2Bytes, s.L2Entries, size, entries)
	}
	// The old owners no longer reach it; the new ones do.
	for _, purge := range []func() (int, error){
		func() (int, error) { return c.PurgeImage("a") },
		func() (int, error) { return c.PurgeOrg("o1") },
		func() (int, error) { return c.PurgeTag("t1") },
	} {
		if n, err := purge(); err != nil || n != 0 {
			t.Fatalf("purge of a former owner = %d, %v", n, err)
		}
	}
	if n, err := c.PurgeImage("b"); err != nil || n != 1 {
		t.Fatalf("PurgeImage(b) = %d, %v", n, err)
	}
}

func TestPutRejects(t *testing.T) {
	c := openCache(t, testConfig(t))
	mod := func(f func(*Entry)) *Entry { e := newEntry("o", "i", "", 10, 1); f(e); return e }
	tests := []struct {
		name  string
		key   string
		entry *Entry
		want  error
	}{
		{"empty key", "", newEntry("o", "i", "", 10, 1), ErrInvalidEntry},
		{"key too long", strings.Repeat("k", maxKeyLen+1), newEntry("o", "i", "", 10, 1), ErrInvalidEntry},
		{"no org", "k", mod(func(e *Entry) { e.OrgID = "" }), ErrInvalidEntry},
		{"no image nor tag", "k", mod(func(e *Entry) { e.ImageID = "" }), ErrInvalidEntry},
		{"weak etag", "k", mod(func(e *Entry) { e.ETag = `W/"x"` }), ErrInvalidEntry},
		{"unquoted etag", "k", mod(func(e *Entry) { e.ETag = "x" }), ErrInvalidEntry},
		{"quote inside etag", "k", mod(func(e *Entry) { e.ETag = `"a"b"` }), ErrInvalidEntry},
		{"header injection", "k", mod(func(e *Entry) { e.ContentType = "image/png\r\nX-Evil: 1" }), ErrInvalidEntry},
		{"no content type", "k", mod(func(e *Entry) { e.ContentType = "" }), ErrInvalidEntry},
		{"id too long", "k", mod(func(e *Entry) { e.ImageID = strings.Repeat("i", 256) }), ErrInvalidEntry},
		{"stale-while-revalidate without freshness", "k", mod(func(e *Entry) { e.StaleWhileRevalidate = time.Minute }), ErrInvalidEntry},
		{"validator without freshness", "k", mod(func(e *Entry) { e.Validator = `"v"` }), ErrInvalidEntry},
		{"weak validator", "k", mod(func(e *Entry) { e.FreshUntil = time.Now(); e.Validator = `W/"v"` }), ErrInvalidEntry},
		{"negative stale-while-revalidate", "k", mod(func(e *Entry) { e.FreshUntil = time.Now(); e.StaleWhileRevalidate = -time.Second }), ErrInvalidEntry},
		{"freshness before 1970", "k", mod(func(e *Entry) { e.FreshUntil = time.Unix(-1, 0) }), ErrInvalidEntry},
		{"too large", "k", newEntry("o", "i", "", 4<<20, 1), ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Put([]byte(tt.key), tt.entry); !errors.Is(err, tt.want) {
				t.Fatalf("Put = %v, want %v", err, tt.want)
			}
		})
	}
	if s := c.Stats(); s.Puts != 0 || s.L2Entries != 0 {
		t.Fatalf("refused Puts stored something: %+v", s)
	}
}

func TestReopenServesL2(t *testing.T) {
	cfg := testConfig(t)
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*Entry{}
	for i := range 50 {
		key := fmt.Sprintf("img/%d/w=%d", i%10, i)
		want[key] = newEntry(fmt.Sprintf("org%d", i%3), fmt.Sprint(i%10), "", 1000+i*37, uint64(i))
		mustPut(t, c, key, want[key])
	}
	before := c.Stats()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	c = openCache(t, cfg)
	after := c.Stats()
	if after.L2Bytes != before.L2Bytes || after.L2Entries != before.L2Entries {
		t.Fatalf("reopened with %d bytes %d entries, closed with %d and %d", after.L2Bytes, after.L2Entries, before.L2Bytes, before.L2Entries)
	}
	for key, e := range want {
		got, lvl, ok := c.Get([]byte(key))
		if !ok || lvl != L2 {
			t.Fatalf("Get %s after reopen = %v, %v; want an L2 hit", key, lvl, ok)
		}
		sameEntry(t, c, got, e)
	}
	// Indexes survived too.
	if n, err := c.PurgeImage("3"); err != nil || n != 5 {
		t.Fatalf("PurgeImage after reopen = %d, %v; want 5", n, err)
	}
}

func TestSecondOpenFails(t *testing.T) {
	cfg := testConfig(t)
	openCache(t, cfg)
	if c, err := Open(cfg); err == nil {
		c.Close()
		t.Fatal("a second Open of the same directory succeeded")
	}
}

func TestOpenRefusesAnotherStore(t *testing.T) {
	cfg := testConfig(t)
	db, err := openPebble(cfg.Dir, vfs.Default)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("x-origin-record"), []byte("precious"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if c, err := Open(cfg); !errors.Is(err, ErrNotCacheDir) {
		if err == nil {
			c.Close()
		}
		t.Fatalf("Open of another store = %v, want ErrNotCacheDir", err)
	}
	db, err = openPebble(cfg.Dir, vfs.Default)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, closer, err := db.Get([]byte(formatKey)); err == nil {
		closer.Close()
		t.Fatal("Open wrote its layout into another store")
	}
}

func TestClosed(t *testing.T) {
	c, err := Open(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, "k", newEntry("o", "i", "", 10, 1))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.Get([]byte("k")); ok {
		t.Fatal("Get after Close hit")
	}
	if err := c.Put([]byte("k"), newEntry("o", "i", "", 10, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close = %v", err)
	}
	if _, err := c.PurgeImage("i"); !errors.Is(err, ErrClosed) {
		t.Fatalf("PurgeImage after Close = %v", err)
	}
}

// corrupt rewrites key's L2 value with f applied to it.
func (c *Cache) corrupt(t testing.TB, key string, f func([]byte) []byte) {
	t.Helper()
	vk := recordKey(prefixValue, []byte(key))
	v, closer, err := c.db.Get(vk)
	if err != nil {
		t.Fatal(err)
	}
	bad := f(append([]byte(nil), v...))
	closer.Close()
	if err := c.db.Set(vk, bad, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	c.dropFromMemory(key)
}

func TestCorruptL2IsAMiss(t *testing.T) {
	tests := []struct {
		name string
		f    func([]byte) []byte
	}{
		{"flipped string bit", func(v []byte) []byte { v[valueHeaderLen+2] ^= 0x10; return v }},
		{"flipped header bit", func(v []byte) []byte { v[3] ^= 1; return v }},
		{"flipped body checksum", func(v []byte) []byte { v[49] ^= 1; return v }},
		{"flipped checksum", func(v []byte) []byte { v[len(v)-1] ^= 0xff; return v }},
		{"truncated", func(v []byte) []byte { return v[:len(v)-10] }},
		{"cut to the header", func(v []byte) []byte { return v[:valueHeaderLen] }},
		{"empty", func([]byte) []byte { return nil }},
		{"appended bytes", func(v []byte) []byte { return append(v, 1, 2, 3) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := openCache(t, testConfig(t))
			mustPut(t, c, "bad", newEntry("o", "i", "", 5000, 1))
			mustPut(t, c, "good", newEntry("o", "i", "", 5000, 2))
			c.corrupt(t, "bad", tt.f)
			if e, lvl, ok := c.Get([]byte("bad")); ok || lvl != Miss || e != nil {
				t.Fatalf("Get of a corrupt value = %v, %v", lvl, ok)
			}
			if s := c.Stats(); s.L2Corrupt != 1 {
				t.Fatalf("L2Corrupt = %d, want 1", s.L2Corrupt)
			}
			c.settle()
			if c.inL2("bad") {
				t.Fatal("corrupt value still in L2 after repair")
			}
			size, entries := c.scanned(t)
			if s := c.Stats(); s.L2Bytes != size || s.L2Entries != 1 || entries != 1 {
				t.Fatalf("after repair: tracked %d bytes %d entries, scanned %d, %d", s.L2Bytes, s.L2Entries, size, entries)
			}
			if _, _, ok := c.Get([]byte("good")); !ok {
				t.Fatal("the intact entry is gone")
			}
			// The edge refetches and puts it back.
			mustPut(t, c, "bad", newEntry("o", "i", "", 5000, 1))
			c.dropFromMemory("bad")
			if _, lvl, ok := c.Get([]byte("bad")); !ok || lvl != L2 {
				t.Fatalf("Get after refetch = %v, %v", lvl, ok)
			}
		})
	}
}

func TestCorruptMetaDroppedAtOpen(t *testing.T) {
	cfg := testConfig(t)
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, "a", newEntry("o", "i", "", 100, 1))
	mustPut(t, c, "b", newEntry("o", "i", "", 100, 2))
	c.Close()
	db, err := openPebble(cfg.Dir, vfs.Default)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(recordKey(prefixMeta, []byte("a")), []byte("garbage!garbage!garbage!garbage!"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()

	c = openCache(t, cfg)
	if s := c.Stats(); s.L2Entries != 1 || s.L2Corrupt != 1 {
		t.Fatalf("reopened with %+v; want 1 entry and 1 corrupt", s)
	}
	if _, _, ok := c.Get([]byte("a")); ok {
		t.Fatal("entry with a corrupt meta record still served")
	}
	if _, _, ok := c.Get([]byte("b")); !ok {
		t.Fatal("intact entry lost")
	}
	// Its queue and index records are left over; a purge and eviction
	// cope with them.
	if n, err := c.PurgeImage("i"); err != nil || n != 1 {
		t.Fatalf("PurgeImage = %d, %v; want 1", n, err)
	}
}

func TestEvictionKeepsL2UnderCap(t *testing.T) {
	cfg := testConfig(t)
	cfg.DiskBytes = 1 << 20
	cfg.MaxEntryBytes = 64 << 10
	c := openCache(t, cfg)
	const n, bodySize = 200, 16 << 10 // 3.2 MiB through a 1 MiB cache
	for i := range n {
		mustPut(t, c, fmt.Sprintf("k%03d", i), newEntry("o", fmt.Sprint(i%7), "", bodySize, uint64(i)))
	}
	c.settle()
	s := c.Stats()
	if s.L2Bytes > cfg.DiskBytes || s.L2Evictions == 0 {
		t.Fatalf("after eviction: %d bytes (cap %d), %d evictions", s.L2Bytes, cfg.DiskBytes, s.L2Evictions)
	}
	size, entries := c.scanned(t)
	if size != s.L2Bytes || entries != s.L2Entries {
		t.Fatalf("tracked %d bytes %d entries, scanned %d, %d", s.L2Bytes, s.L2Entries, size, entries)
	}
	if files, bytes := c.bodyFiles(t); int64(files) != entries || bytes > cfg.DiskBytes {
		t.Fatalf("%d body files of %d bytes for %d entries under a cap of %d", files, bytes, entries, cfg.DiskBytes)
	}
	// FIFO: the first are gone from both levels, the last are there.
	for i := range n {
		key := fmt.Sprintf("k%03d", i)
		mem, l2 := c.inMemory(key), c.inL2(key)
		if mem && !l2 {
			t.Fatalf("%s is in memory but was evicted from L2", key)
		}
		if i < 100 && l2 {
			t.Fatalf("%s (old) survived eviction", key)
		}
		if i >= n-40 && !l2 {
			t.Fatalf("%s (recent) was evicted", key)
		}
	}
	// Purges find only what is left.
	total := 0
	for i := range 7 {
		k, err := c.PurgeImage(fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		total += k
	}
	if int64(total) != s.L2Entries || c.Stats().L2Bytes != 0 {
		t.Fatalf("purged %d of %d entries, %d bytes left", total, s.L2Entries, c.Stats().L2Bytes)
	}
	if files, _ := c.bodyFiles(t); files != 0 {
		t.Fatalf("%d body files left after purging everything", files)
	}
}

func TestEvictionSecondChance(t *testing.T) {
	cfg := testConfig(t)
	cfg.DiskBytes = 1 << 20
	cfg.MaxEntryBytes = 64 << 10
	c := openCache(t, cfg)
	const size = 16 << 10
	put := func(i int) { mustPut(t, c, fmt.Sprintf("k%03d", i), newEntry("o", "i", "", size, uint64(i))) }
	// Fill to just under the cap; nothing is evicted yet.
	i := 0
	for ; c.Stats().L2Bytes+2*size < cfg.DiskBytes; i++ {
		put(i)
	}
	c.settle()
	// Clear the bits Put's own L1 hits might have set, then hit k000 only.
	for j := range i {
		c.ref.testAndClear(refIndex(hashKey(c, fmt.Sprintf("k%03d", j))))
	}
	if _, _, ok := c.Get([]byte("k000")); !ok {
		t.Fatal("k000 missing before eviction")
	}
	for range 4 {
		put(i)
		i++
	}
	c.settle()
	s := c.Stats()
	if s.L2Evictions == 0 || s.L2SecondChances == 0 {
		t.Fatalf("no eviction pass ran: %+v", s)
	}
	if !c.inL2("k000") {
		t.Fatal("k000 was hit but evicted")
	}
	if c.inL2("k001") {
		t.Fatal("k001, as old as k000 and never hit, survived")
	}
}

func hashKey(c *Cache, key string) uint64 { return c.hash([]byte(key)) }

func TestPurge(t *testing.T) {
	type put struct{ key, org, image, tag string }
	puts := []put{
		{"img/a/1", "o1", "a", ""}, {"img/a/2", "o1", "a", ""}, {"img/a/3", "o1", "a", "s1"},
		{"img/b/1", "o1", "b", ""}, {"img/c/1", "o2", "c", "s1"}, {"sig/s2", "o2", "", "s2"},
		{"sig/t1", "o1", "", "tpl:t1 s1"}, {"sig/t2", "o1", "", "tpl:t1 s3"},
	}
	tests := []struct {
		name  string
		purge func(*Cache) (int, error)
		gone  []string
	}{
		{"image", func(c *Cache) (int, error) { return c.PurgeImage("a") }, []string{"img/a/1", "img/a/2", "img/a/3"}},
		{"org", func(c *Cache) (int, error) { return c.PurgeOrg("o2") }, []string{"img/c/1", "sig/s2"}},
		{"tag", func(c *Cache) (int, error) { return c.PurgeTag("s1") }, []string{"img/a/3", "img/c/1", "sig/t1"}},
		{"first of two tags", func(c *Cache) (int, error) { return c.PurgeTag("tpl:t1") }, []string{"sig/t1", "sig/t2"}},
		{"second of two tags", func(c *Cache) (int, error) { return c.PurgeTag("s3") }, []string{"sig/t2"}},
		{"tag that prefixes another", func(c *Cache) (int, error) { return c.PurgeTag("tpl:t") }, nil},
		{"two tags as one", func(c *Cache) (int, error) { return c.PurgeTag("tpl:t1 s1") }, nil},
		{"nothing", func(c *Cache) (int, error) { return c.PurgeImage("zzz") }, nil},
		{"id that prefixes another", func(c *Cache) (int, error) { return c.PurgeOrg("o") }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			c, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range puts {
				mustPut(t, c, p.key, newEntry(p.org, p.image, p.tag, 2000, uint64(i)))
			}
			// One variant only in L2, one only in L2 and decoded (as
			// after an L2 hit), the others in L1 too.
			c.dropFromMemory("img/a/2")
			c.l1.Del([]byte("img/a/1"))
			c.l1.Wait()
			if c.inL1("img/a/1") || c.decodedEntry("img/a/1") == nil || c.decodedEntry("img/b/1") == nil {
				t.Fatal("decoded does not hold what Put stored")
			}
			n, err := tt.purge(c)
			if err != nil || n != len(tt.gone) {
				t.Fatalf("purge = %d, %v; want %d", n, err, len(tt.gone))
			}
			check := func(c *Cache, when string) {
				gone := map[string]bool{}
				for _, k := range tt.gone {
					gone[k] = true
				}
				for _, p := range puts {
					if gone[p.key] {
						if c.inMemory(p.key) || c.inL2(p.key) {
							t.Fatalf("%s: %s still cached", when, p.key)
						}
						if _, _, ok := c.Get([]byte(p.key)); ok {
							t.Fatalf("%s: Get %s hit", when, p.key)
						}
					} else if _, _, ok := c.Get([]byte(p.key)); !ok {
						t.Fatalf("%s: %s lost", when, p.key)
					}
				}
			}
			check(c, "after purge")
			// Durable: the purge survives a restart.
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c = openCache(t, cfg)
			check(c, "after reopen")
			size, entries := c.scanned(t)
			if s := c.Stats(); s.L2Bytes != size || s.L2Entries != entries || entries != int64(len(puts)-len(tt.gone)) {
				t.Fatalf("tracked %d bytes %d entries, scanned %d, %d", s.L2Bytes, s.L2Entries, size, entries)
			}
		})
	}
}

func TestPurgeManyChunks(t *testing.T) {
	c := openCache(t, testConfig(t))
	const n = 2*purgeChunk + 77
	for i := range n {
		mustPut(t, c, fmt.Sprintf("img/%d", i), newEntry("big", fmt.Sprint(i), "", 64, uint64(i)))
	}
	mustPut(t, c, "other", newEntry("small", "x", "", 64, 1))
	if got, err := c.PurgeOrg("big"); err != nil || got != n {
		t.Fatalf("PurgeOrg = %d, %v; want %d", got, err, n)
	}
	for i := range n {
		if key := fmt.Sprintf("img/%d", i); c.inMemory(key) || c.inL2(key) {
			t.Fatalf("%s survived", key)
		}
	}
	if s := c.Stats(); s.L2Entries != 1 {
		t.Fatalf("%d entries left, want 1", s.L2Entries)
	}
}

// TestGetNeverWaitsForWriters holds the lock that Puts, purges and every
// eviction chunk take; Gets at each level must still return.
func TestGetNeverWaitsForWriters(t *testing.T) {
	c := openCache(t, testConfig(t))
	mustPut(t, c, "l1", newEntry("o", "i", "", 100, 1))
	mustPut(t, c, "l2", newEntry("o", "i", "", 100, 2))
	c.dropFromMemory("l2")
	mustPut(t, c, "bad", newEntry("o", "i", "", 100, 3))
	c.corrupt(t, "bad", func(v []byte) []byte { v[20] ^= 1; return v })
	c.wmu.Lock()
	defer c.wmu.Unlock()
	done := make(chan []Level)
	go func() {
		var levels []Level
		for _, k := range []string{"l1", "l2", "bad", "absent"} {
			_, lvl, _ := c.Get([]byte(k))
			levels = append(levels, lvl)
		}
		done <- levels
	}()
	select {
	case got := <-done:
		if want := []Level{L1, L2, Miss, Miss}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("levels %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get waited for the writers' lock")
	}
}

func TestPutSinceEpoch(t *testing.T) {
	c := openCache(t, testConfig(t))
	before := c.Epoch()
	if _, err := c.PurgeImage("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PurgeTag("key1"); err != nil {
		t.Fatal(err)
	}
	after := c.Epoch()
	tests := []struct {
		name  string
		ep    Epoch
		entry *Entry
		want  error
	}{
		{"fetched before the image's purge", before, newEntry("o", "a", "", 10, 1), ErrPurged},
		{"fetched after it", after, newEntry("o", "a", "", 10, 1), nil},
		{"another image, fetched before", before, newEntry("o", "b", "", 10, 1), nil},
		{"second tag purged, fetched before", before, newEntry("o", "", "tpl:t key1", 10, 1), ErrPurged},
		{"second tag purged, fetched after", after, newEntry("o", "", "tpl:t key1", 10, 1), nil},
		{"other tags, fetched before", before, newEntry("o", "", "tpl:t key2", 10, 1), nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := []byte(fmt.Sprint("k", i))
			err := c.PutSince(tt.ep, key, tt.entry)
			if !errors.Is(err, tt.want) {
				t.Fatalf("PutSince = %v, want %v", err, tt.want)
			}
			if _, _, ok := c.Get(key); ok != (tt.want == nil) {
				t.Fatalf("Get hit = %v", ok)
			}
		})
	}
	if s := c.Stats(); s.PutsPurged != 2 {
		t.Fatalf("PutsPurged = %d", s.PutsPurged)
	}
}

func TestPurgeLogFloor(t *testing.T) {
	var epoch atomic.Uint64
	p := newPurgeLog(4)
	m := &meta{org: "o", image: "x"}
	ep := Epoch(epoch.Load())
	for i := range 4 {
		p.record(byImage, fmt.Sprint("other", i), &epoch)
	}
	if p.since(ep, m) {
		t.Fatal("purges of other images refused the entry")
	}
	p.record(byImage, "other4", &epoch) // the first record leaves the log
	if !p.since(ep, m) {
		t.Fatal("an epoch older than the log's memory was accepted")
	}
	if p.since(Epoch(epoch.Load()), m) {
		t.Fatal("a current epoch was refused")
	}
	if len(p.last) != 4 {
		t.Fatalf("log keeps %d purges, want 4", len(p.last))
	}
}

// TestPurgeRacingPuts: Puts of an image's variants, all fetched before the
// purge, race with PurgeImage. Whatever the interleaving, none survives: those
// that commit first are purged, later ones are refused.
func TestPurgeRacingPuts(t *testing.T) {
	for round := range 20 {
		c := openCache(t, testConfig(t))
		ep := c.Epoch()
		mustPut(t, c, "other", newEntry("o", "keep", "", 100, 1))
		started := make(chan struct{})
		var wg sync.WaitGroup
		var stored atomic.Int64
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 30 {
					err := c.PutSince(ep, []byte(fmt.Sprintf("img/x/%d/%d", g, i)), newEntry("o", "x", "", 300, uint64(i)))
					switch {
					case err == nil:
						stored.Add(1)
					case !errors.Is(err, ErrPurged):
						t.Errorf("PutSince: %v", err)
					}
					if g == 0 && i == 5 {
						close(started)
					}
				}
			}()
		}
		<-started
		if _, err := c.PurgeImage("x"); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for g := range 4 {
			for i := range 30 {
				key := fmt.Sprintf("img/x/%d/%d", g, i)
				if _, lvl, ok := c.Get([]byte(key)); ok {
					t.Fatalf("round %d: %s served from %v after the purge", round, key, lvl)
				}
			}
		}
		if stored.Load() == 0 {
			t.Fatalf("round %d: no Put got in before the purge", round)
		}
		if _, _, ok := c.Get([]byte("other")); !ok {
			t.Fatal("another image's entry was purged")
		}
	}
}

func TestL1CostBounded(t *testing.T) {
	cfg := testConfig(t)
	cfg.MemBytes = 1 << 20
	cfg.DiskBytes = 256 << 20
	c := openCache(t, cfg)
	var sizes = []int{1 << 10, 8 << 10, 36 << 10, 100 << 10, 300 << 10}
	written := int64(0)
	for i := 0; written < 10*cfg.MemBytes; i++ {
		e := newEntry("o", fmt.Sprint(i%50), "", sizes[i%len(sizes)], uint64(i))
		mustPut(t, c, fmt.Sprint("k", i), e)
		written += int64(len(e.Body))
		// Hot keys get L1 hits, which feed ristretto's admission.
		c.Get([]byte(fmt.Sprint("k", i/2)))
		if s := c.Stats(); s.L1Bytes > cfg.MemBytes {
			t.Fatalf("after %d bytes: L1 cost %d > MemBytes %d", written, s.L1Bytes, cfg.MemBytes)
		}
	}
	s := c.Stats()
	if s.L1MaxBytes != cfg.MemBytes || s.L1Bytes <= 0 || s.L1Evictions == 0 {
		t.Fatalf("L1 %+v", s)
	}
	t.Logf("wrote %d MiB; L1 holds %d KiB of %d KiB; %d evicted, %d refused", written>>20, s.L1Bytes>>10, s.L1MaxBytes>>10, s.L1Evictions, s.L1Rejections)
}

func TestPebbleMemoryBounded(t *testing.T) {
	cfg := testConfig(t)
	cfg.DiskBytes = 1 << 30
	c := openCache(t, cfg)
	for i := range 600 { // about 21 MiB
		mustPut(t, c, fmt.Sprint("k", i), newEntry("o", "i", "", 36<<10, uint64(i)))
	}
	for i := range 600 {
		c.dropFromMemory(fmt.Sprint("k", i))
		if _, _, ok := c.Get([]byte(fmt.Sprint("k", i))); !ok {
			t.Fatalf("k%d lost", i)
		}
	}
	m := c.db.Metrics()
	if m.BlockCache.Size > blockCacheBytes {
		t.Fatalf("block cache %d bytes > %d", m.BlockCache.Size, blockCacheBytes)
	}
	if limit := uint64((memTableStop + 1) * memTableBytes); m.MemTable.Size > limit {
		t.Fatalf("memtables %d bytes > %d", m.MemTable.Size, limit)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig(t)
	cfg.Registerer = reg
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.promoteOneIn = 1 << 30 // the L2 hit leaves its body on disk
	mustPut(t, c, "a", newEntry("o", "i", "", 100, 1))
	c.Get([]byte("a"))    // L1 hit
	c.dropFromMemory("a") //
	c.Get([]byte("a"))    // L2 hit
	if v := gather(t, reg)[`pictor_edge_cache_decoded_bytes`]; v <= 0 {
		t.Fatalf("decoded_bytes %v after an L2 hit kept its entry", v)
	}
	c.Get([]byte("missing")) // miss
	c.corrupt(t, "a", func(v []byte) []byte { v[10] ^= 1; return v })
	c.Get([]byte("a")) // corrupt: miss
	c.PurgeOrg("o")
	values := gather(t, reg)
	want := map[string]float64{
		`pictor_edge_cache_hits_total{level="l1"}`:      1,
		`pictor_edge_cache_hits_total{level="l2"}`:      1,
		`pictor_edge_cache_misses_total{level="l1"}`:    3,
		`pictor_edge_cache_misses_total{level="l2"}`:    2,
		`pictor_edge_cache_l2_corrupt_total`:            1,
		`pictor_edge_cache_purges_total{by="org"}`:      1,
		`pictor_edge_cache_puts_total{result="stored"}`: 1,
		`pictor_edge_cache_capacity_bytes{level="l1"}`:  float64(cfg.MemBytes),
		`pictor_edge_cache_capacity_bytes{level="l2"}`:  float64(cfg.DiskBytes),
		// The L2 hit, the miss and the corrupt record read pebble.
		`pictor_edge_cache_l2_reads_total`:         3,
		`pictor_edge_cache_decoded_bytes`:          0, // purged
		`pictor_edge_cache_decoded_capacity_bytes`: decodedBytes,
	}
	for name, v := range want {
		if got, ok := values[name]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, v)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Close unregisters, so the next cache can register and report.
	c = openCache(t, cfg)
	if _, ok := gather(t, reg)[`pictor_edge_cache_capacity_bytes{level="l1"}`]; !ok || c.Stats().L1MaxBytes != cfg.MemBytes {
		t.Fatal("the reopened cache's metrics are not registered")
	}
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			if len(m.GetLabel()) > 0 {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[name] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[name] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// TestHammer runs Gets, Puts and purges of overlapping keys from many
// goroutines, in a cache small enough for both levels to evict, then checks
// the invariants: L1 holds nothing L2 lacks, the tracked size is the scanned
// one, and purging every organization empties both levels. Run with -race.
func TestHammer(t *testing.T) {
	cfg := testConfig(t)
	cfg.MemBytes = 1 << 20
	cfg.DiskBytes = 2 << 20
	cfg.MaxEntryBytes = 128 << 10
	c := openCache(t, cfg)
	const keys, orgs, images = 120, 3, 12
	keyOf := func(i int) string { return fmt.Sprintf("img/%d/v%d", i%images, i) }
	entryOf := func(i int, seed uint64) *Entry {
		return newEntry(fmt.Sprint("o", i%images%orgs), fmt.Sprint(i%images), fmt.Sprint("t", i%5), 1000+int(seed%64)*1000, seed)
	}
	var wg sync.WaitGroup
	var hits, purges atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 600 {
				i := r.IntN(keys)
				switch op := r.IntN(100); {
				case op < 55:
					if e, _, ok := c.Get([]byte(keyOf(i))); ok {
						hits.Add(1)
						if e.ImageID != fmt.Sprint(i%images) || e.Len() < 1000 {
							t.Errorf("Get %s returned %s/%d bytes", keyOf(i), e.ImageID, e.Len())
						}
					}
				case op < 96:
					if err := c.PutSince(c.Epoch(), []byte(keyOf(i)), entryOf(i, r.Uint64())); err != nil && !errors.Is(err, ErrPurged) {
						t.Errorf("Put: %v", err)
					}
				case op < 98:
					purges.Add(1)
					if _, err := c.PurgeImage(fmt.Sprint(r.IntN(images))); err != nil {
						t.Errorf("PurgeImage: %v", err)
					}
				case op < 99:
					if _, err := c.PurgeTag(fmt.Sprint("t", r.IntN(5))); err != nil {
						t.Errorf("PurgeTag: %v", err)
					}
				default:
					if _, err := c.PurgeOrg(fmt.Sprint("o", r.IntN(orgs))); err != nil {
						t.Errorf("PurgeOrg: %v", err)
					}
				}
			}
		}()
	}
	wg.Wait()
	c.settle()
	c.l1.Wait()
	s := c.Stats()
	t.Logf("hits %d (L1 %d, L2 %d), misses %d, puts %d, purges %d, L2 evictions %d, L1 bytes %d, L2 bytes %d",
		hits.Load(), s.L1Hits, s.L2Hits, s.Misses, s.Puts, purges.Load(), s.L2Evictions, s.L1Bytes, s.L2Bytes)
	if s.L1Bytes > cfg.MemBytes || s.L2Bytes > cfg.DiskBytes {
		t.Fatalf("over budget: %+v", s)
	}
	if held := c.decoded.held(); held != s.DecodedBytes {
		t.Fatalf("decoded holds entries of %d bytes, counts %d", held, s.DecodedBytes)
	}
	size, entries := c.scanned(t)
	if size != s.L2Bytes || entries != s.L2Entries {
		t.Fatalf("tracked %d bytes %d entries, scanned %d, %d", s.L2Bytes, s.L2Entries, size, entries)
	}
	for i := range keys {
		if k := keyOf(i); c.inMemory(k) && !c.inL2(k) {
			t.Fatalf("%s is in memory but not in L2: a purge could not find it", k)
		}
	}
	for o := range orgs {
		if _, err := c.PurgeOrg(fmt.Sprint("o", o)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range keys {
		if _, lvl, ok := c.Get([]byte(keyOf(i))); ok {
			t.Fatalf("%s served from %v after purging every organization", keyOf(i), lvl)
		}
	}
	if s := c.Stats(); s.L2Bytes != 0 || s.L2Entries != 0 {
		t.Fatalf("after purging everything: %d bytes, %d entries", s.L2Bytes, s.L2Entries)
	}
}

func TestDelete(t *testing.T) {
	c := openCache(t, testConfig(t))
	mustPut(t, c, "o|d|default|/a", newOGEntry("org", "og:c", "", 500, 1))
	mustPut(t, c, "o|d|twitter|/a", newOGEntry("org", "og:c", `"v"`, 500, 2))
	tests := []struct {
		name  string
		key   string
		found bool
	}{
		{"present", "o|d|default|/a", true},
		{"already gone", "o|d|default|/a", false},
		{"never there", "o|d|default|/b", false},
		{"invalid key", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found, err := c.Delete([]byte(tt.key))
			if err != nil || found != tt.found {
				t.Fatalf("Delete = %v, %v; want %v", found, err, tt.found)
			}
			if _, _, ok := c.Get([]byte(tt.key)); ok {
				t.Fatal("Get finds the deleted entry")
			}
		})
	}
	size, entries := c.scanned(t)
	if s := c.Stats(); s.L2Bytes != size || s.L2Entries != 1 || entries != 1 {
		t.Fatalf("tracked %d bytes %d entries, scanned %d bytes %d entries", s.L2Bytes, s.L2Entries, size, entries)
	}
	// The other platform's entry is still there, and its tag finds only it.
	if n, err := c.PurgeTag("og:c"); err != nil || n != 1 {
		t.Fatalf("PurgeTag = %d, %v; want 1", n, err)
	}
}

// TestPurged: an entry is purged since an epoch only by a purge of its
// own image, organization or tag after it; other purges leave it.
func TestPurged(t *testing.T) {
	c := openCache(t, testConfig(t))
	e := newEntry("o1", "img1", "tag1", 100, 1)
	ep := c.Epoch()
	if c.Purged(ep, e) {
		t.Fatal("purged with no purge since")
	}
	if _, err := c.PurgeImage("img2"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PurgeOrg("o2"); err != nil {
		t.Fatal(err)
	}
	if c.Purged(ep, e) {
		t.Fatal("purged by the purges of another image and organization")
	}
	if _, err := c.PurgeTag("tag1"); err != nil {
		t.Fatal(err)
	}
	if !c.Purged(ep, e) {
		t.Fatal("not purged by a purge of its tag")
	}
	if c.Purged(c.Epoch(), e) {
		t.Fatal("purged since an epoch after the purge")
	}
}
