package apikey

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"

	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/seal"
)

// sharedStores are two handles of one store, as two origins have, on each
// backend.
var sharedStores = storetest.Backends()

// TestKeyLimitAcrossProcesses: creates racing on two handles of one store
// stop at exactly MaxPerOrg keys.
func TestKeyLimitAcrossProcesses(t *testing.T) {
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) {
			dbs := tc.Pair(t)
			master := make([]byte, 32)
			rand.Read(master)
			box, err := seal.New(master)
			if err != nil {
				t.Fatal(err)
			}
			o, err := org.NewStore(dbs[0], nil).Create("acme", "scale")
			if err != nil {
				t.Fatal(err)
			}
			stores := [2]*Store{}
			for i, db := range dbs {
				stores[i] = NewStore(db, box, org.NewStore(db, nil), nil)
			}
			const tries = MaxPerOrg + 20
			var mu sync.Mutex
			created, limited := 0, 0
			var wg sync.WaitGroup
			errs := make(chan error, tries)
			for i := range tries {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, err := stores[i%2].CreateContext(context.Background(), o.ID, Request{Name: "k"}, nil)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						created++
					case errors.Is(err, ErrLimit):
						limited++
					default:
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if created != MaxPerOrg || limited != tries-MaxPerOrg {
				t.Fatalf("%d created, %d refused; want %d and %d", created, limited, MaxPerOrg, tries-MaxPerOrg)
			}
			keys, more, err := stores[1].List(t.Context(), o.ID, "", MaxPerOrg+1, Filter{IncludeDisabled: true})
			if err != nil || len(keys) != MaxPerOrg || more {
				t.Fatalf("List: %d keys (more %v), %v; want %d", len(keys), more, err, MaxPerOrg)
			}
		})
	}
}
