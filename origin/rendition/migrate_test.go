package rendition

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/imageparams"
)

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

// legacyImages stores n images of org the way a version before sort keys
// did, one a minute from t0, every third through the API (a UUIDv7 id of
// its creation time) and the others through signed URLs (content ids, in
// no time order). It returns their ids newest first.
func legacyImages(t *testing.T, store kv.Store, org string, n int, t0 time.Time) []string {
	t.Helper()
	var newestFirst []string
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Minute)
		p := html(fmt.Sprint("image ", i))
		id := sortKeyAt(at, fmt.Sprint("api ", i)) // a UUIDv7 of its creation time, as the API made them
		if i%3 != 0 {
			id = ContentID(org, &p, "create-and-render") // a signed URL's
		}
		putLegacy(t, store, &Image{ID: id, OrgID: org, CreatedAt: at, Params: p, State: StateReady})
		newestFirst = append([]string{id}, newestFirst...)
	}
	return newestFirst
}

// listAll walks an organization's list in pages of n, the way the page
// token does: each page starts after the last image's sort key.
func listAll(t *testing.T, s *Service, org string, n int) []string {
	t.Helper()
	var ids []string
	after := ""
	for range 1000 {
		page, more, err := s.List(t.Context(), org, after, n)
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
	const org, other = "org-a", "org-b"
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	var newestFirst []string
	foreign := &Image{ID: sortKeyAt(t0, "foreign"), OrgID: other, CreatedAt: t0, State: StateReady}
	e := newEnv(t, func(store kv.Store) {
		newestFirst = legacyImages(t, store, org, 12, t0)
		putLegacy(t, store, foreign)
		store.Put(legacyListKey(org, "01a20000-0000-7000-8000-000000000000"), nil) // an entry whose image is gone
	})
	if slices.IsSorted(newestFirst) || slices.IsSortedFunc(newestFirst, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Fatal("the ids happen to be in creation order: the test would prove nothing")
	}
	s := e.svc
	for _, n := range []int{1, 5, 50} {
		if got := listAll(t, s, org, n); !slices.Equal(got, newestFirst) {
			t.Fatalf("pages of %d:\n got %v\nwant %v", n, got, newestFirst)
		}
	}
	if got := listAll(t, s, other, 50); !slices.Equal(got, []string{foreign.ID}) {
		t.Fatalf("the other organization lists %v", got)
	}
	if left := e.keys(t.Context(), legacyPrefix); len(left) > 0 {
		t.Fatalf("legacy entries left: %v", sortedKeys(left))
	}
	if n, err := migrateIndex(t.Context(), e.store); n != 0 || err != nil {
		t.Fatalf("a second migration moved %d (%v)", n, err)
	}
	// A page token issued before the move holds the last image's id.
	page, _, err := s.List(t.Context(), org, newestFirst[4], 3)
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

// TestMigrationResumes: a migration that stopped after some of its atomic
// steps (a crash at start) is finished by the next start, across more
// than one step, and every record then carries the sort key its list entry
// is filed under, the same one a migration in one go gives it.
func TestMigrationResumes(t *testing.T) {
	const org = "org-a"
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	n := migrateBatch + migrateBatch/2
	var newestFirst []string
	e := newEnv(t, func(store kv.Store) {
		newestFirst = legacyImages(t, store, org, n, t0)
		// The first run moved 100 entries, then stopped.
		var keys []string
		it := store.Iterate(t.Context(), []byte(legacyPrefix), kv.IterOptions{})
		for len(keys) < 100 && it.Next() {
			keys = append(keys, string(it.Key()))
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if moved, err := migrateStep(t.Context(), store, keys); moved != 100 || err != nil {
			t.Fatalf("first step moved %d (%v)", moved, err)
		}
	})
	if left := e.keys(t.Context(), legacyPrefix); len(left) > 0 {
		t.Fatalf("%d legacy entries left", len(left))
	}
	if got := listAll(t, e.svc, org, 50); !slices.Equal(got, newestFirst) {
		t.Fatalf("after a resumed migration the list is\n%v\nwant\n%v", got, newestFirst)
	}
	list := e.keys(t.Context(), listPrefix+org+"/")
	if len(list) != n {
		t.Fatalf("%d list entries for %d images", len(list), n)
	}
	for k, id := range list {
		img := e.get(t.Context(), id)
		if want := legacySortKey(img); img.SortKey != want || k != string(listKey(org, want)) {
			t.Fatalf("image %s: sort key %q filed under %q, want %q", id, img.SortKey, k, want)
		}
	}
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
	if again := sortKeyAt(early, "s"); sortKeyAt(early, "zzz") >= sortKeyAt(late, "aaa") || sortKeyAt(early, "s") != again {
		t.Fatal("sortKeyAt is not ordered by time, or not deterministic")
	}
}
