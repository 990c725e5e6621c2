package cache

import "testing"

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
