package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/pgkv"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
)

// Backend opens handles of one fresh store.
type Backend struct {
	Name string
	// Open returns n handles of one fresh store, closed when the test ends.
	Open func(t testing.TB, n int) []kv.Store
}

// Pair returns two handles of one fresh store, as two origins have.
func (b Backend) Pair(t testing.TB) [2]kv.Store {
	s := b.Open(t, 2)
	return [2]kv.Store{s[0], s[1]}
}

// The backends: pebble, which one process opens once (its n handles are
// that one store), and PostgreSQL, n connection pools on a fresh database
// of the test binary's shared cluster (pgtest.Shared: the package's
// TestMain calls pgtest.StopShared).
var (
	Pebble   = Backend{"pebble", openPebble}
	Postgres = Backend{"postgres", openPostgres}
)

// Backends returns every backend.
func Backends() []Backend { return []Backend{Pebble, Postgres} }

// closeAtEnd closes s when the test ends; a failing Close fails the test.
func closeAtEnd(t testing.TB, s kv.Store) {
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
}

func openPebble(t testing.TB, n int) []kv.Store {
	s, err := pebblekv.Open(filepath.Join(t.TempDir(), "kv"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, s)
	out := make([]kv.Store, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func openPostgres(t testing.TB, n int) []kv.Store {
	url := pgtest.Shared(t).Database(t)
	out := make([]kv.Store, n)
	for i := range out {
		s, err := pgkv.Open(context.Background(), url, pgkv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		closeAtEnd(t, s)
		out[i] = s
	}
	return out
}
