package rendition

import (
	"context"
	"errors"
	"fmt"

	"github.com/pictorhq/pictor/kv"
)

// Delete removes the organization's images among ids: records, index
// entries and every stored file. Other ids are skipped. It returns how many
// images it deleted, after the deletions are durable and every OnDelete
// hook (edge purges) has returned. It stops at the first image it cannot
// delete, and still purges the ones it deleted: a retry would skip them.
func (s *Service) Delete(ctx context.Context, orgID string, ids []string) (int, error) {
	var gone []string
	var err error
	for _, id := range ids {
		var ok bool
		ok, err = s.deleteOne(ctx, orgID, id)
		if ok {
			gone = append(gone, id)
		}
		if err != nil {
			break
		}
	}
	if len(gone) > 0 && s.cfg.OnDelete != nil {
		if perr := s.cfg.OnDelete(ctx, gone); perr != nil {
			err = errors.Join(err, fmt.Errorf("purge deleted images: %w", perr))
		}
	}
	return len(gone), err
}

// deleteOne deletes the image if it is the organization's, and reports
// whether its record is gone, also when removing its files then failed.
// The record, its index entries and its render leases go in one
// transaction under its record lock; the files once it committed.
func (s *Service) deleteOne(ctx context.Context, orgID, id string) (bool, error) {
	var deleted bool
	err := s.cfg.Store.Update(ctx, recordLock(id), func(txn kv.Txn) error {
		img, err := (records{txn}).get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if img.OrgID != orgID {
			return nil
		}
		keys := [][]byte{recordKey(id), legacyListKey(orgID, id)} // the legacy entry: not migrated yet, if ever
		if img.SortKey != "" {
			keys = append(keys, listKey(orgID, img.SortKey))
		}
		if img.DedupeKey != "" {
			if cur, err := txn.Get(ctx, dedupeKey(orgID, img.DedupeKey)); err == nil && string(cur) == id {
				keys = append(keys, dedupeKey(orgID, img.DedupeKey))
			}
		}
		for format := range fileNames {
			keys = append(keys, leaseKey(id, format))
		}
		for _, k := range keys {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		deleted = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("delete image %s: %w", id, err)
	}
	if !deleted {
		return false, nil
	}
	// The record is gone: the files go too, even if the caller leaves. A
	// file whose bytes a GET was answered from may still be being stored:
	// its flight then finds the record gone and removes it; the delete
	// returns after that.
	s.waitStores(ctx, id)
	if err := s.cfg.Blobs.Remove(context.WithoutCancel(ctx), id); err != nil {
		return true, err
	}
	return true, nil
}
