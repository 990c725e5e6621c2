package kv

import "context"

// ListIndex reads one page of an index: the keys under prefix end in the
// ids of records, and the walk goes from the largest key down (newest
// first for time-ordered ids), after the id after ("" from the start). It
// loads each record with load from one snapshot, returns up to count, and
// whether more follow.
func ListIndex[T any](ctx context.Context, s Store, prefix []byte, after string, count int, load func(r Reader, id string) (T, error)) ([]T, bool, error) {
	snap := s.Snapshot()
	defer snap.Close()
	opts := IterOptions{Reverse: true}
	if after != "" {
		opts.After = append(append([]byte(nil), prefix...), after...)
	}
	it := snap.Iterate(ctx, prefix, opts)
	defer it.Close()
	var out []T
	for it.Next() {
		if len(out) == count {
			return out, true, nil
		}
		v, err := load(snap, string(it.Key()[len(prefix):]))
		if err != nil {
			return nil, false, err
		}
		out = append(out, v)
	}
	return out, false, it.Err()
}
