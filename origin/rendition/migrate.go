package rendition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
)

// legacySortKey is the sort key of an image recorded before sort keys:
// its id when that is a UUIDv7 (the order the list had), else one made
// from its creation time.
func legacySortKey(img *Image) string {
	if u, err := uuid.Parse(img.ID); err == nil && u.Version() == 7 {
		return img.ID
	}
	return sortKeyAt(img.CreatedAt, img.ID)
}

// migrateBatch is how many images one atomic step of migrateIndex moves.
const migrateBatch = 256

// migrateIndex moves the list index written before sort keys
// (org-img/<org>/<id>) to org-list/, giving each image its sort key. It runs
// at start, before anything is served; each step is one atomic batch that
// removes the old entries it moved, so an interrupted run resumes where it
// stopped, and a run with nothing left to move reads one empty range. It
// returns how many images it moved.
func migrateIndex(ctx context.Context, store kv.Store) (int, error) {
	moved := 0
	for {
		var keys []string
		it := store.Iterate(ctx, []byte(legacyPrefix), kv.IterOptions{})
		for len(keys) < migrateBatch && it.Next() {
			keys = append(keys, string(it.Key()))
		}
		if err := errors.Join(it.Err(), it.Close()); err != nil {
			return moved, fmt.Errorf("migrate image index: %w", err)
		}
		if len(keys) == 0 {
			return moved, nil
		}
		n, err := migrateStep(ctx, store, keys)
		moved += n
		if err != nil {
			return moved, fmt.Errorf("migrate image index: %w", err)
		}
	}
}

func migrateStep(ctx context.Context, store kv.Store, keys []string) (int, error) {
	b := store.NewBatch()
	defer b.Close()
	moved := 0
	for _, k := range keys {
		b.Delete([]byte(k))
		_, id, _ := strings.Cut(k[len(legacyPrefix):], "/")
		img, err := (records{store}).get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // an entry its image outlived
		}
		if err != nil {
			return 0, err
		}
		if img.SortKey == "" {
			img.SortKey = legacySortKey(img)
			raw, err := json.Marshal(img)
			if err != nil {
				return 0, err
			}
			b.Put(recordKey(img.ID), raw)
		}
		b.Put(listKey(img.OrgID, img.SortKey), []byte(img.ID))
		moved++
	}
	return moved, b.Commit()
}
