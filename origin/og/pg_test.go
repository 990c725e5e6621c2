package og

import (
	"context"
	"testing"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pgkv"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
)

// init adds PostgreSQL to sharedStores: two connection pools on one
// fresh database.
func init() {
	sharedStores = append(sharedStores, sharedStore{"postgres", func(t *testing.T) [2]kv.Store {
		url := pgtest.Shared(t).Database(t)
		var out [2]kv.Store
		for i := range out {
			s, err := pgkv.Open(context.Background(), url, pgkv.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			out[i] = s
		}
		return out
	}})
}
