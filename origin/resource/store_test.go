package resource_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/resource"
	"github.com/pictorhq/pictor/origin/seal"
)

// item is a resource of the tests: a name, a counter, a sealed secret and
// a unique label kept in an index of its own (as ogconfig's domain ids and
// apikey's api_ids are).
type item struct {
	ID     string `json:"id"`
	OrgID  string `json:"org_id"`
	Label  string `json:"label"`
	N      int    `json:"n"`
	Secret []byte `json:"secret,omitempty"`
}

var errNoItem = errors.New("item not found")

func labelKey(label string) []byte { return []byte("it/l/" + label) }

var spec = resource.Spec[item]{
	Name: "item", Record: "it/r/", Org: "it/o/", Lock: "item/",
	NotFound: errNoItem,
	ID:       func(i *item) string { return i.ID },
	OrgID:    func(i *item) string { return i.OrgID },
	Index: func(txn kv.Txn, old, cur *item) error {
		var err error
		if old != nil && (cur == nil || cur.Label != old.Label) {
			err = txn.Delete(labelKey(old.Label))
		}
		if cur != nil {
			err = errors.Join(err, txn.Put(labelKey(cur.Label), []byte(cur.ID)))
		}
		return err
	},
}

func newItem(orgID, label string) *item {
	return &item{ID: uuid.Must(uuid.NewV7()).String(), OrgID: orgID, Label: label}
}

// dump returns every key of the store with its value.
func dump(t *testing.T, s kv.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	it := s.Iterate(t.Context(), nil, kv.IterOptions{})
	defer it.Close()
	for it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestStoreKeys: what each write leaves in the store, key by key: the
// record as T's JSON, the organization's index entry, and Index's keys,
// kept through an update and all gone after a delete.
func TestStoreKeys(t *testing.T) {
	db := storetest.Pebble.Open(t, 1)[0]
	s := resource.NewStore(db, spec)
	ctx := context.Background()

	a := newItem("org-a", "one")
	if err := s.Create(ctx, a, nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"it/r/" + a.ID:       mustJSON(t, a),
		"it/o/org-a/" + a.ID: "",
		"it/l/one":           a.ID,
	}
	if got := dump(t, db); !mapsEqual(got, want) {
		t.Fatalf("after create:\n got %q\nwant %q", got, want)
	}

	got, err := s.Update(ctx, "org-a", a.ID, func(_ kv.Txn, cur *item) error {
		cur.Label, cur.N = "two", cur.N+1
		return nil
	})
	if err != nil || got.Label != "two" || got.N != 1 {
		t.Fatalf("update: %+v, %v", got, err)
	}
	want = map[string]string{
		"it/r/" + a.ID:       mustJSON(t, got),
		"it/o/org-a/" + a.ID: "",
		"it/l/two":           a.ID,
	}
	if got := dump(t, db); !mapsEqual(got, want) {
		t.Fatalf("after update:\n got %q\nwant %q", got, want)
	}

	gone, err := s.Delete(ctx, "org-a", a.ID)
	if err != nil || gone.ID != a.ID || gone.Label != "two" {
		t.Fatalf("delete: %+v, %v", gone, err)
	}
	if got := dump(t, db); len(got) != 0 {
		t.Fatalf("after delete: %q", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestStoreNotFound: a missing record and another organization's are the
// resource's own NotFound for every operation, and change nothing.
func TestStoreNotFound(t *testing.T) {
	db := storetest.Pebble.Open(t, 1)[0]
	s := resource.NewStore(db, spec)
	ctx := context.Background()
	a := newItem("org-a", "one")
	if err := s.Create(ctx, a, nil); err != nil {
		t.Fatal(err)
	}
	before := dump(t, db)
	for _, tc := range []struct{ name, org, id string }{
		{"missing", "org-a", uuid.NewString()},
		{"foreign", "org-b", a.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Get(ctx, tc.org, tc.id); err != errNoItem {
				t.Errorf("Get: %v", err)
			}
			called := false
			if _, err := s.Update(ctx, tc.org, tc.id, func(kv.Txn, *item) error { called = true; return nil }); err != errNoItem || called {
				t.Errorf("Update: %v (change called: %v)", err, called)
			}
			if _, err := s.Delete(ctx, tc.org, tc.id); err != errNoItem {
				t.Errorf("Delete: %v", err)
			}
			if after := dump(t, db); !mapsEqual(after, before) {
				t.Errorf("the store changed: %q", after)
			}
		})
	}
	// Load reads whatever the organization.
	if got, err := s.Load(ctx, db, a.ID); err != nil || got.OrgID != "org-a" {
		t.Fatalf("Load: %+v, %v", got, err)
	}
}

// TestStoreRefusals: an error of prepare or change is returned as it is
// (not wrapped: handlers map it by type) and nothing is written.
func TestStoreRefusals(t *testing.T) {
	db := storetest.Pebble.Open(t, 1)[0]
	s := resource.NewStore(db, spec)
	ctx := context.Background()
	refused := fmt.Errorf("refused")

	if err := s.Create(ctx, newItem("org-a", "x"), func(kv.Txn) error { return refused }); err != refused {
		t.Fatalf("Create: %v", err)
	}
	if got := dump(t, db); len(got) != 0 {
		t.Fatalf("a refused create wrote %q", got)
	}
	a := newItem("org-a", "one")
	if err := s.Create(ctx, a, nil); err != nil {
		t.Fatal(err)
	}
	before := dump(t, db)
	_, err := s.Update(ctx, "org-a", a.ID, func(txn kv.Txn, cur *item) error {
		cur.Label = "changed"
		// A write of change itself is dropped with the rest.
		if err := txn.Put([]byte("it/x"), nil); err != nil {
			return err
		}
		return refused
	})
	if err != refused {
		t.Fatalf("Update: %v", err)
	}
	if after := dump(t, db); !mapsEqual(after, before) {
		t.Fatalf("a refused update changed the store: %q", after)
	}
}

// TestStoreList: newest first, pages after a position, more only when
// more follow; with keep, only selected records, and more only when a
// selected one follows.
func TestStoreList(t *testing.T) {
	db := storetest.Pebble.Open(t, 1)[0]
	s := resource.NewStore(db, spec)
	ctx := context.Background()
	var ids []string // creation order
	for i := range 5 {
		it := newItem("org-a", fmt.Sprint("l", i))
		it.N = i
		if err := s.Create(ctx, it, nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, it.ID)
	}
	if err := s.Create(ctx, newItem("org-b", "other"), nil); err != nil {
		t.Fatal(err)
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	idsOf := func(list []*item) []string {
		var out []string
		for _, it := range list {
			out = append(out, it.ID)
		}
		return out
	}
	even := func(it *item) bool { return it.N%2 == 0 }
	for _, tc := range []struct {
		name     string
		after    string
		count    int
		keep     func(*item) bool
		want     []string
		wantMore bool
	}{
		{"first page", "", 2, nil, newest[:2], true},
		{"middle page", newest[1], 2, nil, newest[2:4], true},
		{"last page exactly", newest[1], 3, nil, newest[2:], false},
		{"all", "", 10, nil, newest, false},
		{"kept", "", 10, even, []string{ids[4], ids[2], ids[0]}, false},
		{"kept, one page", "", 2, even, []string{ids[4], ids[2]}, true},
		// ids[0] is the last even one: what follows it is not kept.
		{"kept, no more selected", ids[2], 1, even, []string{ids[0]}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, more, err := s.List(ctx, "org-a", tc.after, tc.count, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			if got := idsOf(list); !slices.Equal(got, tc.want) || more != tc.wantMore {
				t.Fatalf("got %v more=%v, want %v more=%v", got, more, tc.want, tc.wantMore)
			}
		})
	}
	if n, err := s.Count(ctx, db, "org-a"); err != nil || n != 5 {
		t.Fatalf("Count = %d, %v", n, err)
	}
}

// TestStoreEncode: a resource stored in another form than T's JSON
// (storedest's record) is written and read through Encode and Decode.
func TestStoreEncode(t *testing.T) {
	db := storetest.Pebble.Open(t, 1)[0]
	sp := spec
	sp.Index = nil
	sp.Encode = func(i *item) ([]byte, error) { return []byte(i.ID + "|" + i.OrgID + "|" + i.Label), nil }
	sp.Decode = func(raw []byte) (*item, error) {
		parts := bytes.Split(raw, []byte("|"))
		if len(parts) != 3 {
			return nil, errors.New("bad record")
		}
		return &item{ID: string(parts[0]), OrgID: string(parts[1]), Label: string(parts[2])}, nil
	}
	s := resource.NewStore(db, sp)
	a := newItem("org-a", "enc")
	if err := s.Create(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	if raw, err := db.Get(t.Context(), s.RecordKey(a.ID)); err != nil || string(raw) != a.ID+"|org-a|enc" {
		t.Fatalf("stored %q, %v", raw, err)
	}
	if got, err := s.Get(t.Context(), "org-a", a.ID); err != nil || got.Label != "enc" {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	if err := db.Put(s.RecordKey(a.ID), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "org-a", a.ID); err == nil || errors.Is(err, errNoItem) {
		t.Fatalf("a record that does not decode: %v", err)
	}
}

func secretOf(i *item) *[]byte { return &i.Secret }

// TestStoreReseal: a secret sealed under a previous master key is sealed
// again under the current one, by the one-record Reseal (unless the record
// changed meanwhile) and by the full pass of seal.Reseal with SealKind.
func TestStoreReseal(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	oldBox, err := seal.New(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	box, err := seal.New(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.Pebble.Open(t, 1)[0]
	s := resource.NewStore(db, spec)
	ctx := context.Background()
	mk := func(label string, secret bool) *item {
		it := newItem("org-a", label)
		if secret {
			it.Secret = oldBox.Seal([]byte("pw-"+label), []byte(it.ID))
		}
		if err := s.Create(ctx, it, nil); err != nil {
			t.Fatal(err)
		}
		return it
	}
	opensUnderNewOnly := func(it *item) bool {
		stored, err := s.Load(ctx, db, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		_, errOld := oldBox.Open(stored.Secret, []byte(it.ID))
		plain, errNew := box.Open(stored.Secret, []byte(it.ID))
		return errOld != nil && errNew == nil && string(plain) == "pw-"+it.Label
	}

	one := mk("one", true)
	_, upgraded, err := box.OpenUpgrade(one.Secret, []byte(one.ID))
	if err != nil || upgraded == nil {
		t.Fatalf("OpenUpgrade: %v, %x", err, upgraded)
	}
	stale := *one
	stale.Secret = bytes.Clone(one.Secret)
	if err := s.Reseal(ctx, one, secretOf, upgraded); err != nil {
		t.Fatal(err)
	}
	if !opensUnderNewOnly(one) || !bytes.Equal(one.Secret, upgraded) {
		t.Fatal("Reseal did not store the upgraded secret")
	}
	// A reseal from a read older than the record writes nothing.
	if err := s.Reseal(ctx, &stale, secretOf, []byte("not this")); err != nil {
		t.Fatal(err)
	}
	if !opensUnderNewOnly(one) {
		t.Fatal("a stale Reseal overwrote the secret")
	}

	two, three := mk("two", true), mk("three", true)
	mk("none", false)
	c, err := seal.Reseal(ctx, db, box, s.SealKind(ctx, "item", secretOf))
	if err != nil {
		t.Fatal(err)
	}
	if c.Records != 3 || c.Failed != 0 {
		t.Fatalf("counts %+v, want 3 records with a secret, none failed", c)
	}
	for _, it := range []*item{one, two, three} {
		if !opensUnderNewOnly(it) {
			t.Fatalf("%s not sealed under the current key", it.Label)
		}
	}
}

// TestStoreShared: two Stores on two handles of one store (two origins),
// on pebble and PostgreSQL: concurrent creates under Limit never pass it, and concurrent updates all land (no lost update),
// with the index following the last one.
func TestStoreShared(t *testing.T) {
	for _, backend := range storetest.Backends() {
		t.Run(backend.Name, func(t *testing.T) {
			dbs := backend.Pair(t)
			stores := [2]*resource.Store[item]{resource.NewStore(dbs[0], spec), resource.NewStore(dbs[1], spec)}
			ctx := context.Background()
			errLimit := errors.New("limit")

			const limit, tries = 5, 12
			var wg sync.WaitGroup
			results := make([]error, tries)
			for i := range tries {
				wg.Go(func() {
					s := stores[i%2]
					results[i] = s.Create(ctx, newItem("org-a", fmt.Sprint("c", i)), s.Limit(ctx, "org-a", limit, errLimit))
				})
			}
			wg.Wait()
			created := 0
			for _, err := range results {
				switch {
				case err == nil:
					created++
				case err != errLimit:
					t.Fatal(err)
				}
			}
			if n, err := stores[1].Count(ctx, dbs[1], "org-a"); created != limit || err != nil || n != limit {
				t.Fatalf("%d creates succeeded, %d records (%v), want %d", created, n, err, limit)
			}

			a := newItem("org-b", "u0")
			if err := stores[0].Create(ctx, a, nil); err != nil {
				t.Fatal(err)
			}
			const updates = 16
			for i := range updates {
				wg.Go(func() {
					_, err := stores[i%2].Update(ctx, "org-b", a.ID, func(_ kv.Txn, cur *item) error {
						cur.N++
						cur.Label = fmt.Sprint("u", cur.N)
						return nil
					})
					if err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			got, err := stores[1].Get(ctx, "org-b", a.ID)
			if err != nil || got.N != updates {
				t.Fatalf("after %d updates: %+v, %v", updates, got, err)
			}
			// Only the last label is indexed.
			it := dbs[0].Iterate(ctx, []byte("it/l/u"), kv.IterOptions{})
			defer it.Close()
			var labels []string
			for it.Next() {
				labels = append(labels, string(it.Key()))
			}
			if want := []string{string(labelKey(fmt.Sprint("u", updates)))}; !slices.Equal(labels, want) {
				t.Fatalf("label index %q, want %q", labels, want)
			}
		})
	}
}

// TestStoreByIndex: a record found through an index of the resource's
// own, whatever its organization; an absent entry is NotFound.
func TestStoreByIndex(t *testing.T) {
	db := storetest.Pebble.Open(t, 1)[0]
	s := resource.NewStore(db, spec)
	a := newItem("org-a", "findme")
	if err := s.Create(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ByIndex(t.Context(), labelKey("findme"), "label"); err != nil || got.ID != a.ID {
		t.Fatalf("ByIndex: %+v, %v", got, err)
	}
	if _, err := s.ByIndex(t.Context(), labelKey("absent"), "label"); err != errNoItem {
		t.Fatalf("absent: %v", err)
	}
}

// TestStoreNormalize: Normalize fixes up every record read (proxy's
// bypass_hosts, ogconfig's default_options never nil), and what is
// stored stays as written.
func TestStoreNormalize(t *testing.T) {
	db := storetest.Pebble.Open(t, 1)[0]
	sp := spec
	sp.Normalize = func(i *item) {
		if i.Secret == nil {
			i.Secret = []byte{}
		}
	}
	s := resource.NewStore(db, sp)
	a := newItem("org-a", "n")
	if err := s.Create(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(t.Context(), "org-a", a.ID)
	if err != nil || got.Secret == nil {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	if raw, err := db.Get(t.Context(), s.RecordKey(a.ID)); err != nil || string(raw) != mustJSON(t, a) {
		t.Fatalf("stored %s, %v", raw, err)
	}
}
