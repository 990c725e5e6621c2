package template_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/template"
)

// openKV opens a pebble store on a temporary directory.
func openKV(t *testing.T) kv.Store {
	t.Helper()
	s, err := pebblekv.Open(filepath.Join(t.TempDir(), "db"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return s
}

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func version(html string) template.Version {
	return template.Version{Name: "card", HTML: html, Defaults: json.RawMessage(`{"device_scale":1}`)}
}

// TestStoreVersions: an edit replaces the latest version while nothing was
// rendered from it, and adds a version once something was.
func TestStoreVersions(t *testing.T) {
	clock := apitest.NewClock(epoch)
	s := template.NewStore(openKV(t), clock.Now)

	tpl, v1, err := s.Create(context.Background(), "org-1", 10, version("<p>one</p>"))
	if err != nil {
		t.Fatal(err)
	}
	if tpl.OrgID != "org-1" || tpl.Latest != 1 || v1.Version != 1 || v1.TemplateID != tpl.ID || !v1.CreatedAt.Equal(epoch) {
		t.Fatalf("created %+v, %+v", tpl, v1)
	}

	clock.Advance(time.Minute)
	replaced, err := s.Update(context.Background(), "org-1", tpl.ID, version("<p>one, fixed</p>"))
	if err != nil {
		t.Fatal(err)
	}
	if replaced.Version != 1 || !replaced.CreatedAt.Equal(epoch) || !replaced.UpdatedAt.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("edit of an unrendered version: %+v", replaced)
	}

	if err := s.CountRenders(t.Context(), tpl.ID, 1, 3); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	v2, err := s.Update(context.Background(), "org-1", tpl.ID, version("<p>two</p>"))
	if err != nil {
		t.Fatal(err)
	}
	if v2.Version != 2 || !v2.CreatedAt.Equal(epoch.Add(2*time.Minute)) || v2.RenderCount != 0 {
		t.Fatalf("edit of a rendered version: %+v", v2)
	}

	all, err := s.Versions(t.Context(), "org-1", tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Version != 2 || all[1].Version != 1 || all[1].HTML != "<p>one, fixed</p>" || all[1].RenderCount != 3 {
		t.Fatalf("versions %+v", all)
	}
	tests := []struct {
		name    string
		version int
		want    string
	}{
		{"latest", 0, "<p>two</p>"},
		{"first", 1, "<p>one, fixed</p>"},
		{"second", 2, "<p>two</p>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, v, err := s.Version(t.Context(), "org-1", tpl.ID, tc.version)
			if err != nil || v.HTML != tc.want || got.Latest != 2 {
				t.Fatalf("Version(%d) = %+v, %+v, %v", tc.version, got, v, err)
			}
		})
	}
	if _, _, err := s.Version(t.Context(), "org-1", tpl.ID, 3); !errors.Is(err, template.ErrNotFound) {
		t.Fatalf("a version past the latest: %v", err)
	}
}

// TestStoreOrganizations: another organization's template does not exist
// for any operation.
func TestStoreOrganizations(t *testing.T) {
	s := template.NewStore(openKV(t), nil)
	tpl, _, err := s.Create(context.Background(), "org-1", 10, version("x"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		op   func() error
	}{
		{"Get", func() error { _, err := s.Get(t.Context(), "org-2", tpl.ID); return err }},
		{"Version", func() error { _, _, err := s.Version(t.Context(), "org-2", tpl.ID, 0); return err }},
		{"Versions", func() error { _, err := s.Versions(t.Context(), "org-2", tpl.ID); return err }},
		{"Update", func() error { _, err := s.Update(context.Background(), "org-2", tpl.ID, version("y")); return err }},
		{"Delete", func() error { return s.Delete(context.Background(), "org-2", tpl.ID) }},
		{"unknown id", func() error { _, err := s.Get(t.Context(), "org-1", "t-nope"); return err }},
		{"renders of an unknown version", func() error { return s.CountRenders(t.Context(), tpl.ID, 2, 1) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.op(); !errors.Is(err, template.ErrNotFound) {
				t.Fatalf("%s = %v, want ErrNotFound", tc.name, err)
			}
		})
	}
	if _, v, err := s.Version(t.Context(), "org-1", tpl.ID, 0); err != nil || v.HTML != "x" {
		t.Fatalf("the owner's template after the others' attempts: %+v, %v", v, err)
	}
	if list, _, err := s.List(t.Context(), "org-2", "", 10); err != nil || len(list) != 0 {
		t.Fatalf("another organization lists %v (%v)", list, err)
	}
}

// TestStoreLimitAndDelete: an organization holds at most limit templates;
// a deletion removes every version and makes room again.
func TestStoreLimitAndDelete(t *testing.T) {
	db := openKV(t)
	s := template.NewStore(db, nil)
	a, _, err := s.Create(context.Background(), "org-1", 2, version("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(context.Background(), "org-1", 2, version("b")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(context.Background(), "org-1", 2, version("c")); !errors.Is(err, template.ErrLimit) {
		t.Fatalf("a third template under a limit of 2: %v", err)
	}
	if _, _, err := s.Create(context.Background(), "org-2", 2, version("other")); err != nil {
		t.Fatalf("another organization is held by org-1's count: %v", err)
	}

	s.CountRenders(t.Context(), a.ID, 1, 1)
	if _, err := s.Update(context.Background(), "org-1", a.ID, version("a2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(context.Background(), "org-1", a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Versions(t.Context(), "org-1", a.ID); !errors.Is(err, template.ErrNotFound) {
		t.Fatalf("versions of a deleted template: %v", err)
	}
	if err := s.CountRenders(t.Context(), a.ID, 2, 1); !errors.Is(err, template.ErrNotFound) {
		t.Fatalf("renders of a deleted template: %v", err)
	}
	// Nothing of it is left in the store (the key layout of store.go).
	for _, prefix := range []string{"tpl/" + a.ID, "tpl-ver/" + a.ID + "/", "org-tpl/org-1/" + a.ID} {
		it := db.Iterate(t.Context(), []byte(prefix), kv.IterOptions{})
		if it.Next() {
			t.Errorf("key %q left after the deletion", it.Key())
		}
		it.Close()
	}
	if _, _, err := s.Create(context.Background(), "org-1", 2, version("c")); err != nil {
		t.Fatalf("no room after a deletion: %v", err)
	}
}

// TestStoreList: newest first, count at a time, after a template id.
func TestStoreList(t *testing.T) {
	s := template.NewStore(openKV(t), nil)
	var ids []string
	for i := range 5 {
		tpl, _, err := s.Create(context.Background(), "org-1", 10, version(fmt.Sprintf("t%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tpl.ID)
	}
	tests := []struct {
		name  string
		after string
		count int
		want  []string
		more  bool
	}{
		{"first page", "", 2, []string{ids[4], ids[3]}, true},
		{"second page", ids[3], 2, []string{ids[2], ids[1]}, true},
		{"last page", ids[1], 2, []string{ids[0]}, false},
		{"all at once", "", 5, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, false},
		{"after the oldest", ids[0], 5, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			list, more, err := s.List(t.Context(), "org-1", tc.after, tc.count)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range list {
				got = append(got, v.TemplateID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || more != tc.more {
				t.Fatalf("List(after %q, %d) = %v, more %v; want %v, more %v", tc.after, tc.count, got, more, tc.want, tc.more)
			}
		})
	}
}

// TestStoreConcurrency: concurrent creations over two handles of one
// store (two origins) respect the limit exactly, and concurrent render
// counts and edits lose no count.
func TestStoreConcurrency(t *testing.T) {
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) {
			dbs := tc.Pair(t)
			stores := [2]*template.Store{template.NewStore(dbs[0], nil), template.NewStore(dbs[1], nil)}
			ctx := context.Background()
			const limit, tries = 10, 32
			var created atomic.Int32
			var wg sync.WaitGroup
			for i := range tries {
				wg.Go(func() {
					_, _, err := stores[i%2].Create(ctx, "org-1", limit, version("x"))
					switch {
					case err == nil:
						created.Add(1)
					case !errors.Is(err, template.ErrLimit):
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if n := created.Load(); n != limit {
				t.Fatalf("%d of %d concurrent creations succeeded under a limit of %d", n, tries, limit)
			}

			tpl, _, err := stores[0].Create(ctx, "org-2", limit, version("x"))
			if err != nil {
				t.Fatal(err)
			}
			const counters, each = 4, 25
			for i := range counters {
				wg.Go(func() {
					for range each {
						if err := stores[i%2].CountRenders(ctx, tpl.ID, 1, 1); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Go(func() {
				for i := range 10 {
					if _, err := stores[i%2].Update(ctx, "org-2", tpl.ID, version("y")); err != nil {
						t.Error(err)
					}
				}
			})
			wg.Wait()
			all, err := stores[1].Versions(ctx, "org-2", tpl.ID)
			if err != nil {
				t.Fatal(err)
			}
			var total int64
			for _, v := range all {
				total += v.RenderCount
			}
			// Every count went to version 1 (replaced in place by the edits
			// before its first count, kept by those after); none is lost.
			if total != counters*each {
				t.Fatalf("render counts add up to %d over %d versions, want %d", total, len(all), counters*each)
			}
		})
	}
}

// sharedStores are two handles of one store, as two origins have, on each
// backend.
var sharedStores = storetest.Backends()
