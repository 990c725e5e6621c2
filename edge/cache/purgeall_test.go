package cache

import (
	"errors"
	"testing"
)

func TestPurgeAll(t *testing.T) {
	c := openCache(t, testConfig(t))
	for i, org := range []string{"o1", "o2", "o3"} {
		mustPut(t, c, "k"+org, newEntry(org, "img"+org, "", 100, uint64(i)))
	}
	if err := c.PurgeAll(); err != nil {
		t.Fatal(err)
	}
	for _, org := range []string{"o1", "o2", "o3"} {
		if _, _, ok := c.Get([]byte("k" + org)); ok {
			t.Fatalf("entry of %s survived PurgeAll", org)
		}
	}
	if err := c.PurgeAll(); err != nil {
		t.Fatalf("PurgeAll of an empty cache: %v", err)
	}
}

// TestPurgeAllRefusesEarlierFetches: an entry fetched before PurgeAll is
// refused, even of an organization that had nothing cached when it ran;
// one fetched after it is taken.
func TestPurgeAllRefusesEarlierFetches(t *testing.T) {
	c := openCache(t, testConfig(t))
	mustPut(t, c, "ko1", newEntry("o1", "img1", "", 100, 1))
	before := c.Epoch()
	if err := c.PurgeAll(); err != nil {
		t.Fatal(err)
	}
	e := newEntry("o2", "img2", "", 100, 2)
	if !c.Purged(before, e) {
		t.Fatal("Purged: an entry fetched before PurgeAll is not reported purged")
	}
	if err := c.PutSince(before, []byte("ko2"), e); !errors.Is(err, ErrPurged) {
		t.Fatalf("PutSince of an entry fetched before PurgeAll: %v, want ErrPurged", err)
	}
	after := c.Epoch()
	if c.Purged(after, e) {
		t.Fatal("Purged: an entry fetched after PurgeAll is reported purged")
	}
	if err := c.PutSince(after, []byte("ko2"), e); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.Get([]byte("ko2")); !ok {
		t.Fatal("the entry fetched after PurgeAll is not cached")
	}
}
