package rendition

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
)

// List returns up to count of the organization's images newest first,
// after the sort key after, and whether more follow. A position that is a
// signed URL's image id (a page token issued before sort keys) is read as
// that image's sort key.
func (s *Service) List(ctx context.Context, orgID, after string, count int) ([]*Image, bool, error) {
	snap := s.cfg.Store.Snapshot()
	defer snap.Close()
	recs := records{snap}
	prefix := []byte(listPrefix + orgID + "/")
	opts := kv.IterOptions{Reverse: true}
	if after != "" {
		if u, err := uuid.Parse(after); err == nil && u.Version() != 7 {
			if img, err := recs.get(ctx, after); err == nil && img.OrgID == orgID && img.SortKey != "" {
				after = img.SortKey
			}
		}
		opts.After = listKey(orgID, after)
	}
	it := snap.Iterate(ctx, prefix, opts)
	defer it.Close()
	var out []*Image
	for it.Next() {
		if len(out) == count {
			return out, true, nil
		}
		img, err := recs.get(ctx, string(it.Value()))
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
