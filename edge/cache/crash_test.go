package cache

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestCrash takes crash images of the file system (pebble's crashable MemFS
// keeps what was synced and a random part of the rest, torn blocks
// included) and reopens the cache on each: what a crash loses is only
// unsynced Puts; nothing comes back corrupt, a synced purge stays done, and
// the size Open recomputes matches the records.
func TestCrash(t *testing.T) {
	for seed := range 16 {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			cfg := testConfig(t)
			cfg.Dir, cfg.fs = "cache", mem
			c := openCache(t, cfg)
			want := map[string]*Entry{}
			put := func(key string, image int, seed uint64) {
				e := newEntry(fmt.Sprint("o", image%2), fmt.Sprint(image), "", 2000+int(seed)*100, seed)
				mustPut(t, c, key, e)
				want[key] = e
			}
			for i := range 30 {
				put(fmt.Sprint("a", i), i%5, uint64(i))
			}
			// The purge syncs: it and every Put before it survive.
			if n, err := c.PurgeImage("1"); err != nil || n != 6 {
				t.Fatalf("PurgeImage = %d, %v", n, err)
			}
			for i := range 30 {
				put(fmt.Sprint("b", i), i%5, uint64(100+i)) // unsynced
			}
			crashed := mem.CrashClone(vfs.CrashCloneCfg{
				UnsyncedDataPercent: []int{0, 50, 90, 100}[seed%4],
				RNG:                 rand.New(rand.NewPCG(uint64(seed), 9)),
			})

			cfg.fs = crashed
			c2 := openCache(t, cfg)
			lost := 0
			for key, e := range want {
				got, _, ok := c2.Get([]byte(key))
				switch {
				case key[0] == 'a' && e.ImageID == "1":
					if ok {
						t.Fatalf("%s came back after its synced purge", key)
					}
				case key[0] == 'a':
					if !ok {
						t.Fatalf("%s, synced by the purge, was lost", key)
					}
					sameEntry(t, c2, got, e)
				case ok:
					sameEntry(t, c2, got, e)
				default:
					lost++
				}
			}
			if s := c2.Stats(); s.L2Corrupt != 0 {
				t.Fatalf("%d corrupt records after the crash", s.L2Corrupt)
			}
			size, entries := c2.scanned(t)
			if s := c2.Stats(); s.L2Bytes != size || s.L2Entries != entries {
				t.Fatalf("tracked %d bytes %d entries, scanned %d, %d", s.L2Bytes, s.L2Entries, size, entries)
			}
			// Indexes are as consistent as the entries: purging every
			// organization empties the cache.
			for _, org := range []string{"o0", "o1"} {
				if _, err := c2.PurgeOrg(org); err != nil {
					t.Fatal(err)
				}
			}
			if s := c2.Stats(); s.L2Bytes != 0 || s.L2Entries != 0 {
				t.Fatalf("after purging everything: %+v", s)
			}
			t.Logf("%d of 30 unsynced Puts lost", lost)
		})
	}
}
