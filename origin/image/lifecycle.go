package image

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
)

// Delete removes the organization's images among ids: records, index
// entries and every stored file. Other ids are skipped. It returns how many
// images it deleted, after the deletions are durable and every OnDelete
// hook (edge purges) has returned.
func (s *Service) Delete(ctx context.Context, orgID string, ids []string) (int, error) {
	var gone []string
	for _, id := range ids {
		ok, err := s.deleteOne(orgID, id)
		if err != nil {
			return len(gone), err
		}
		if ok {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 && s.cfg.OnDelete != nil {
		if err := s.cfg.OnDelete(ctx, gone); err != nil {
			return len(gone), fmt.Errorf("purge deleted images: %w", err)
		}
	}
	return len(gone), nil
}

func (s *Service) deleteOne(orgID, id string) (bool, error) {
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
	if err := s.cfg.Blobs.Remove(id); err != nil {
		return false, err
	}
	return true, nil
}

// List returns up to count of the organization's images newest first,
// after the sort key after, and whether more follow. A position that is a
// signed URL's image id (a page token issued before sort keys) is read as
// that image's sort key.
func (s *Service) List(orgID, after string, count int) ([]*Image, bool, error) {
	snap := s.cfg.Store.Snapshot()
	defer snap.Close()
	recs := records{snap}
	prefix := []byte(listPrefix + orgID + "/")
	opts := kv.IterOptions{Reverse: true}
	if after != "" {
		if u, err := uuid.Parse(after); err == nil && u.Version() != 7 {
			if img, err := recs.get(after); err == nil && img.OrgID == orgID && img.SortKey != "" {
				after = img.SortKey
			}
		}
		opts.After = listKey(orgID, after)
	}
	it := snap.Iterate(prefix, opts)
	defer it.Close()
	var out []*Image
	for it.Next() {
		if len(out) == count {
			return out, true, nil
		}
		img, err := recs.get(string(it.Value()))
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		out = append(out, img)
	}
	return out, false, it.Err()
}
