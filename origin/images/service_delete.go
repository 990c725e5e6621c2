package images

import (
	"context"
	"errors"
	"fmt"
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
func (s *Service) deleteOne(ctx context.Context, orgID, id string) (bool, error) {
	unlock := s.lock(id)
	defer unlock()
	img, err := s.records.get(id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if img.OrgID != orgID {
		return false, nil
	}
	b := s.cfg.Store.NewBatch()
	defer b.Close()
	b.Delete(recordKey(id))
	if img.SortKey != "" {
		b.Delete(listKey(orgID, img.SortKey))
	}
	b.Delete(legacyListKey(orgID, id)) // not migrated yet, if ever
	if img.DedupeKey != "" {
		if cur, err := s.cfg.Store.Get(dedupeKey(orgID, img.DedupeKey)); err == nil && string(cur) == id {
			b.Delete(dedupeKey(orgID, img.DedupeKey))
		}
	}
	if err := b.Commit(); err != nil {
		return false, fmt.Errorf("delete image %s: %w", id, err)
	}
	// The record is gone: the files go too, even if the caller leaves.
	if err := s.cfg.Blobs.Remove(context.WithoutCancel(ctx), id); err != nil {
		return true, err
	}
	return true, nil
}
