package ogconfig

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/storetest"
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

func request(base string, disabled bool) Request {
	return Request{ConfigType: HTMLCSS, BaseURL: base, Disabled: disabled, RefreshInterval: DefaultRefreshInterval,
		OptimizationMode: PostProcess, ExtractValues: true}
}

// keys lists every key of the package's families.
func keys(t *testing.T, db kv.Store) []string {
	t.Helper()
	it := db.Iterate(t.Context(), []byte("ogc/"), kv.IterOptions{})
	defer it.Close()
	var out []string
	for it.Next() {
		out = append(out, string(it.Key()))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStoreIndexes: the record and its three indexes follow every change,
// in the families doc.go lists, and a deletion leaves nothing.
func TestStoreIndexes(t *testing.T) {
	db := openKV(t)
	s := NewStore(db, nil)
	c, err := s.Create(context.Background(), "org-a", request("https://a.example", false))
	if err != nil {
		t.Fatal(err)
	}
	record, domain, list := "ogc/c/"+c.ID, "ogc/d/"+c.DomainID, "ogc/o/org-a/"+c.ID
	claim := func(base string) string { return "ogc/e/org-a/" + base }

	steps := []struct {
		name   string
		change func() error
		want   []string
	}{
		{"created enabled", func() error { return nil }, []string{record, domain, claim("https://a.example"), list}},
		{"disabled", func() error {
			_, err := s.Update(context.Background(), "org-a", c.ID, request("https://a.example", true))
			return err
		},
			[]string{record, domain, list}},
		{"enabled again", func() error {
			_, err := s.Update(context.Background(), "org-a", c.ID, request("https://a.example", false))
			return err
		},
			[]string{record, domain, claim("https://a.example"), list}},
		{"moved", func() error {
			_, err := s.Update(context.Background(), "org-a", c.ID, request("https://b.example", false))
			return err
		},
			[]string{record, domain, claim("https://b.example"), list}},
		{"updated in place", func() error {
			_, err := s.Update(context.Background(), "org-a", c.ID, request("https://b.example", false))
			return err
		},
			[]string{record, domain, claim("https://b.example"), list}},
		{"deleted", func() error { _, err := s.Delete(context.Background(), "org-a", c.ID); return err }, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.change(); err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(st.want)
			slices.Sort(want)
			if got := keys(t, db); !slices.Equal(got, want) {
				t.Fatalf("keys %q, want %q", got, want)
			}
		})
	}
}

// TestStoreRecord: ids, domain ids, revisions and timestamps.
func TestStoreRecord(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Second); return now }
	s := NewStore(openKV(t), clock)

	seen := map[string]bool{}
	for i := range 50 {
		c, err := s.Create(context.Background(), "org-a", request(fmt.Sprintf("https://%d.example", i), false))
		if err != nil {
			t.Fatal(err)
		}
		if !validDomainID(c.DomainID) || len(c.DomainID) != DomainIDLength || DomainIDLength != 26 || c.DomainID == c.ID {
			t.Fatalf("domain id %q (id %q)", c.DomainID, c.ID)
		}
		if seen[c.DomainID] || seen[c.ID] {
			t.Fatalf("repeated id or domain id: %+v", c)
		}
		seen[c.DomainID], seen[c.ID] = true, true
	}

	c, err := s.Create(context.Background(), "org-b", request("https://x.example", true))
	if err != nil {
		t.Fatal(err)
	}
	if c.Revision != 1 || !c.CreatedAt.Equal(c.UpdatedAt) {
		t.Fatalf("new configuration %+v", c)
	}
	for want := int64(2); want <= 4; want++ {
		u, err := s.Update(context.Background(), "org-b", c.ID, request("https://x.example", true))
		if err != nil {
			t.Fatal(err)
		}
		if u.Revision != want || u.DomainID != c.DomainID || !u.CreatedAt.Equal(c.CreatedAt) || !u.UpdatedAt.After(c.CreatedAt) {
			t.Fatalf("update %d: %+v (was %+v)", want, u, c)
		}
	}
	got, err := s.ByDomainID(t.Context(), c.DomainID)
	if err != nil || got.ID != c.ID || got.Revision != 4 || !got.Disabled || got.OrgID != "org-b" {
		t.Fatalf("ByDomainID = %+v, %v", got, err)
	}
	for _, tc := range []struct{ name, domainID string }{
		{"unknown", newDomainID()},
		{"the id", c.ID},
		{"upper case", toUpper(c.DomainID)},
		{"too short", c.DomainID[1:]},
		{"a key family", "../c/" + c.ID},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := s.ByDomainID(t.Context(), tc.domainID); !errors.Is(err, ErrNotFound) {
				t.Fatalf("ByDomainID(%q) = %+v, %v", tc.domainID, got, err)
			}
		})
	}
	if _, err := s.Get(t.Context(), "org-a", c.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another organization's Get: %v", err)
	}
	if _, err := s.Update(context.Background(), "org-a", c.ID, request("https://x.example", true)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another organization's Update: %v", err)
	}
	if _, err := s.Delete(context.Background(), "org-a", c.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another organization's Delete: %v", err)
	}
}

func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// TestStoreConcurrentClaims: many creations, and many enabling updates,
// for one origin at once over two handles of one store (two origins):
// exactly one wins, the others conflict with it; another organization is
// not held up by the first one's claim.
func TestStoreConcurrentClaims(t *testing.T) {
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) { concurrentClaims(t, tc.Pair(t)) })
	}
}

func concurrentClaims(t *testing.T, dbs [2]kv.Store) {
	stores := [2]*Store{NewStore(dbs[0], nil), NewStore(dbs[1], nil)}
	s := stores[0]
	const n = 32
	race := func(t *testing.T, do func(i int) (*Config, error)) (winner *Config) {
		t.Helper()
		results := make([]*Config, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { results[i], errs[i] = do(i) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] == nil {
				if winner != nil {
					t.Fatalf("two winners: %s and %s", winner.ID, results[i].ID)
				}
				winner = results[i]
			}
		}
		if winner == nil {
			t.Fatalf("no winner: %v", errs[0])
		}
		for _, err := range errs {
			var ce *ConflictError
			if err != nil && (!errors.As(err, &ce) || ce.ExistingID != winner.ID || !errors.Is(err, ErrConflict)) {
				t.Fatalf("loser's error %v, want a conflict with %s", err, winner.ID)
			}
		}
		return winner
	}

	for _, orgID := range []string{"org-a", "org-b"} {
		t.Run("create "+orgID, func(t *testing.T) {
			race(t, func(i int) (*Config, error) {
				return stores[i%2].Create(context.Background(), orgID, request("https://same.example", false))
			})
		})
	}

	t.Run("enable", func(t *testing.T) {
		ids := make([]string, n)
		for i := range n {
			c, err := s.Create(context.Background(), "org-c", request("https://same.example", true))
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = c.ID
		}
		winner := race(t, func(i int) (*Config, error) {
			return stores[i%2].Update(context.Background(), "org-c", ids[i], request("https://same.example", false))
		})
		if got, err := claimant(t.Context(), dbs[1], "org-c", "https://same.example"); err != nil || got != winner.ID {
			t.Fatalf("claim held by %q, %v; want %s", got, err, winner.ID)
		}
	})
}

// sharedStores are two handles of one store, as two origins have, on each
// backend.
var sharedStores = storetest.Backends()
