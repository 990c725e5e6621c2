package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pictorhq/pictor/kv"
)

// Key holds a store's migration record; Lock guards it.
const (
	Key  = "sys/schema"
	Lock = "sys/schema"
)

// Migration is one forward step. Run must be idempotent.
type Migration struct {
	// Name says what the step does ("baseline", "og pages: canonical
	// parameters"); it is recorded with the version.
	Name string
	// Run applies the step; nil for a step that only marks a version.
	Run func(ctx context.Context, store kv.Store) error
}

// Record is what a store holds under Key.
type Record struct {
	Version int       `json:"version"`
	Applied []Applied `json:"applied"`
}

// Applied is one recorded migration.
type Applied struct {
	Version int       `json:"version"`
	Name    string    `json:"name"`
	At      time.Time `json:"at"`
	By      string    `json:"by"` // the binary's version
}

// Read returns the store's record; a store never migrated has version 0.
func Read(ctx context.Context, r kv.Reader) (Record, error) {
	var rec Record
	b, err := r.Get(ctx, []byte(Key))
	if errors.Is(err, kv.ErrNotFound) {
		return rec, nil
	}
	if err != nil {
		return rec, fmt.Errorf("migrate: read %s: %w", Key, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("migrate: %s holds no migration record: %w", Key, err)
	}
	return rec, nil
}

// Apply brings store to version len(list), running the migrations it
// lacks in order, and returns the versions it applied. by names the
// binary (recorded with each step); now stamps them.
func Apply(ctx context.Context, store kv.Store, list []Migration, by string, now func() time.Time) ([]int, error) {
	rec, err := Read(ctx, store)
	if err != nil {
		return nil, err
	}
	if rec.Version > len(list) {
		return nil, fmt.Errorf("%w: it is at version %d, this binary knows %d (roll forward, or restore the backup taken before the upgrade)", ErrTooNew, rec.Version, len(list))
	}
	var applied []int
	for v := rec.Version; v < len(list); v++ {
		m := list[v]
		if m.Run != nil {
			if err := m.Run(ctx, store); err != nil {
				return applied, fmt.Errorf("migrate: version %d (%s): %w", v+1, m.Name, err)
			}
		}
		recorded := false
		err := store.Update(ctx, Lock, func(txn kv.Txn) error {
			cur, err := Read(ctx, txn)
			if err != nil {
				return err
			}
			if cur.Version > v {
				return nil // another process recorded it meanwhile
			}
			cur.Version = v + 1
			cur.Applied = append(cur.Applied, Applied{Version: v + 1, Name: m.Name, At: now().UTC(), By: by})
			b, err := json.Marshal(cur)
			if err != nil {
				return err
			}
			recorded = true
			return txn.Put([]byte(Key), b)
		})
		if err != nil {
			return applied, fmt.Errorf("migrate: record version %d: %w", v+1, err)
		}
		if recorded {
			applied = append(applied, v+1)
		}
	}
	return applied, nil
}
