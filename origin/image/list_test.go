package image

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/imageparams"
)

func openStore(t *testing.T, dir string) kv.Store {
	t.Helper()
	s, err := pebblekv.Open(filepath.Join(dir, "kv"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newTestService(t *testing.T, store kv.Store, dir string) *Service {
	t.Helper()
	blobs, err := blob.Open(filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewService(Config{Store: store, Blobs: blobs, CompactIdle: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// putLegacy stores an image as a version before sort keys did: a record
// without one, and an entry in org-img/.
func putLegacy(t *testing.T, store kv.Store, img *Image) {
	t.Helper()
	raw, err := json.Marshal(img)
	if err != nil {
		t.Fatal(err)
	}
	b := store.NewBatch()
	b.Put(recordKey(img.ID), raw)
	b.Put(legacyListKey(img.OrgID, img.ID), nil)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// listAll walks an organization's list in pages of n, the way the page
// token does: each page starts after the last image's sort key.
func listAll(t *testing.T, s *Service, org string, n int) []string {
	t.Helper()
	var ids []string
	after := ""
	for range 100 {
		page, more, err := s.List(org, after, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range page {
			ids = append(ids, img.ID)
		}
		if !more {
			return ids
		}
		after = page[len(page)-1].SortKey
	}
	t.Fatal("the list does not end")
	return nil
}

// TestLegacyIndexMigrates: a data directory written before sort keys, with
// images created through the API (UUIDv7 ids) and through signed URLs
// (content-addressed ids), lists newest first after the start that moves
// its index, in any page size; the move happens once, and a deleted image
// leaves the list.
func TestLegacyIndexMigrates(t *testing.T) {
	dir := t.TempDir()
	store := openStore(t, dir)
	defer store.Close()
	const org, other = "org-a", "org-b"
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	var newestFirst []string
	for i := range 12 {
		at := t0.Add(time.Duration(i) * time.Minute)
		p := imageparams.Params{HTML: fmt.Sprint("image ", i)}
		id := sortKeyAt(at, fmt.Sprint("api ", i)) // a UUIDv7 of its creation time, as the API made them
		if i%3 != 0 {
			id = ContentID(org, &p, "create-and-render") // a signed URL's
		}
		putLegacy(t, store, &Image{ID: id, OrgID: org, CreatedAt: at, Params: p, State: StateReady})
		newestFirst = append([]string{id}, newestFirst...)
	}
	if slices.IsSorted(newestFirst) || slices.IsSortedFunc(newestFirst, func(a, b string) int { return -cmpString(a, b) }) {
		t.Fatal("the ids happen to be in creation order: the test would prove nothing")
	}
	foreign := &Image{ID: sortKeyAt(t0, "foreign"), OrgID: other, CreatedAt: t0, State: StateReady}
	putLegacy(t, store, foreign)
	store.Put(legacyListKey(org, "01a20000-0000-7000-8000-000000000000"), nil) // an entry whose image is gone

	s := newTestService(t, store, dir)
	for _, n := range []int{1, 5, 50} {
		if got := listAll(t, s, org, n); !slices.Equal(got, newestFirst) {
			t.Fatalf("pages of %d:\n got %v\nwant %v", n, got, newestFirst)
		}
	}
	if got := listAll(t, s, other, 50); !slices.Equal(got, []string{foreign.ID}) {
		t.Fatalf("the other organization lists %v", got)
	}
	it := store.Iterate([]byte(legacyPrefix), kv.IterOptions{})
	if it.Next() {
		t.Fatalf("legacy entry %q left", it.Key())
	}
	it.Close()
	if n, err := migrateIndex(store); n != 0 || err != nil {
		t.Fatalf("a second migration moved %d (%v)", n, err)
	}
	// A page token issued before the move holds the last image's id.
	page, _, err := s.List(org, newestFirst[4], 3)
	if err != nil || len(page) != 3 || page[0].ID != newestFirst[5] {
		t.Fatalf("page after the id %s: %v (%v)", newestFirst[4], page, err)
	}

	deleted := newestFirst[3]
	if n, err := s.Delete(t.Context(), org, []string{deleted}); n != 1 || err != nil {
		t.Fatalf("delete: %d, %v", n, err)
	}
	want := slices.Delete(slices.Clone(newestFirst), 3, 4)
	if got := listAll(t, s, org, 4); !slices.Equal(got, want) {
		t.Fatalf("after deleting %s: %v", deleted, got)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestSortKeys: an API image (UUIDv7 id) sorts by its id, a signed URL's
// image gets a fresh UUIDv7, and a legacy key of a time sorts by that time.
func TestSortKeys(t *testing.T) {
	v7 := sortKeyAt(time.Now(), "x")
	if newSortKey(v7) != v7 {
		t.Fatal("a UUIDv7 id is not its own sort key")
	}
	p := imageparams.Params{HTML: "x"}
	content := ContentID("org", &p, "create-and-render")
	a, b := newSortKey(content), newSortKey(content)
	if a == content || a >= b {
		t.Fatalf("signed image sort keys %s then %s for %s", a, b, content)
	}
	early, late := time.Unix(1_700_000_000, 0), time.Unix(1_700_000_000, int64(time.Millisecond))
	if sortKeyAt(early, "zzz") >= sortKeyAt(late, "aaa") || sortKeyAt(early, "s") != sortKeyAt(early, "s") {
		t.Fatal("sortKeyAt is not ordered by time, or not deterministic")
	}
}
