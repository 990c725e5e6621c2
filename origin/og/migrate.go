package og

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pictorhq/pictor/kv"
)

// MigratePages is the store migration (kv/migrate) that gives every OG
// page record its Params: the request it stores as JSON, parsed once, so
// that no read of the record parses it again. A record whose request
// breaks a rule keeps none (its renders fail, saying why, as before).
//
// The records keep Request, byte for byte, beside Params: the release
// before reads only Request, ignores the new field, and keeps serving
// while this one rolls out. A record that release writes meanwhile has no
// Params and is read as before (decodePage parses its Request). The
// release that stops writing Request must first run this step again, as
// a step of its own, once no origin of the previous release runs.
//
// Each record is rewritten under its page lock, only when it still has no
// Params: running the step twice, or from several origins at once, leaves
// the same records.
func MigratePages(ctx context.Context, store kv.Store) error {
	var keys [][]byte
	it := store.Iterate(ctx, []byte("og-page/"), kv.IterOptions{})
	for it.Next() {
		if !hasParams(it.Value()) {
			keys = append(keys, append([]byte(nil), it.Key()...))
		}
	}
	err := it.Err()
	it.Close()
	if err != nil {
		return fmt.Errorf("list OG pages: %w", err)
	}
	for _, key := range keys {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := store.Update(ctx, string(key), func(txn kv.Txn) error {
			raw, err := txn.Get(ctx, key)
			if err != nil || hasParams(raw) {
				return ignoreNotFound(err) // deleted, or given Params, meanwhile
			}
			var p page
			if json.Unmarshal(raw, &p) != nil {
				return nil // not a record: left as it is, as reads find it
			}
			if p.Params = requestParams(p.Request); p.Params == nil {
				return nil
			}
			out, err := json.Marshal(&p)
			if err != nil {
				return err
			}
			return txn.Put(key, out)
		})
		if err != nil {
			return fmt.Errorf("migrate OG page %s: %w", key, err)
		}
	}
	return nil
}

// hasParams reports whether a stored record has Params.
func hasParams(raw []byte) bool {
	var probe struct {
		Params json.RawMessage `json:"params"`
	}
	return json.Unmarshal(raw, &probe) == nil && len(probe.Params) > 0 && string(probe.Params) != "null"
}

func ignoreNotFound(err error) error {
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	}
	return err
}
