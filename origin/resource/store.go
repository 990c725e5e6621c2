package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/seal"
)

// Spec describes a resource's records to Store. Keys:
//
//	<Record><id>              the record (JSON unless Encode/Decode)
//	<Org><org_id>/<id>        empty: an organization's records in creation order
//
// and every write of an organization's records runs in one kv.Update
// holding the lock <Lock><org_id>.
type Spec[T any] struct {
	// Name names the resource in errors ("proxy").
	Name string
	// Record, Org and Lock are the key prefixes and the lock prefix above.
	Record, Org, Lock string
	// NotFound is the error of a record that does not exist or belongs to
	// another organization (the resource's sentinel).
	NotFound error
	// ID and OrgID read a record's id and organization.
	ID, OrgID func(*T) string
	// Encode and Decode, when set, store records in another form than T's
	// JSON.
	Encode func(*T) ([]byte, error)
	Decode func([]byte) (*T, error)
	// Normalize, when set, fixes up a record as read (nil slices and maps
	// as empty ones).
	Normalize func(*T)
	// Index, when set, keeps the resource's other keys: it runs in the
	// transaction of every write after the record is written, with the
	// record as it was (nil on Create) and as it is (nil on Delete).
	Index func(txn kv.Txn, old, cur *T) error
}

// Store keeps one resource's records in a kv.Store (see Spec).
type Store[T any] struct {
	kv   kv.Store
	spec Spec[T]
}

// NewStore returns the Store of spec's records in s.
func NewStore[T any](s kv.Store, spec Spec[T]) *Store[T] {
	return &Store[T]{kv: s, spec: spec}
}

// KV is the store the records are in.
func (s *Store[T]) KV() kv.Store { return s.kv }

// LockName is the lock of an organization's records.
func (s *Store[T]) LockName(orgID string) string { return s.spec.Lock + orgID }

// RecordKey is the key of record id.
func (s *Store[T]) RecordKey(id string) []byte { return []byte(s.spec.Record + id) }

// OrgPrefix is the prefix of an organization's index.
func (s *Store[T]) OrgPrefix(orgID string) []byte { return []byte(s.spec.Org + orgID + "/") }

// OrgKey is the organization index entry of record id.
func (s *Store[T]) OrgKey(orgID, id string) []byte { return []byte(s.spec.Org + orgID + "/" + id) }

// Decode reads a record as stored.
func (s *Store[T]) Decode(raw []byte) (*T, error) {
	t := new(T)
	var err error
	if s.spec.Decode != nil {
		t, err = s.spec.Decode(raw)
	} else {
		err = json.Unmarshal(raw, t)
	}
	if err != nil {
		return nil, err
	}
	if s.spec.Normalize != nil {
		s.spec.Normalize(t)
	}
	return t, nil
}

// Load reads record id from r, whatever its organization: NotFound when
// there is none.
func (s *Store[T]) Load(ctx context.Context, r kv.Reader, id string) (*T, error) {
	raw, err := r.Get(ctx, s.RecordKey(id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, s.spec.NotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", s.spec.Name, id, err)
	}
	t, err := s.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("decode %s %s: %w", s.spec.Name, id, err)
	}
	return t, nil
}

// Put writes t's record (not its indexes).
func (s *Store[T]) Put(w kv.Writer, t *T) error {
	var raw []byte
	var err error
	if s.spec.Encode != nil {
		raw, err = s.spec.Encode(t)
	} else {
		raw, err = json.Marshal(t)
	}
	if err != nil {
		return err
	}
	return w.Put(s.RecordKey(s.spec.ID(t)), raw)
}

// Get returns the organization's record with the id; another
// organization's is NotFound, like a missing one.
func (s *Store[T]) Get(ctx context.Context, orgID, id string) (*T, error) {
	return s.GetIn(ctx, s.kv, orgID, id)
}

// GetIn is Get reading r (a transaction or a snapshot).
func (s *Store[T]) GetIn(ctx context.Context, r kv.Reader, orgID, id string) (*T, error) {
	t, err := s.Load(ctx, r, id)
	if err != nil {
		return nil, err
	}
	if s.spec.OrgID(t) != orgID {
		return nil, s.spec.NotFound
	}
	return t, nil
}

// Txn runs fn in one kv.Update holding the organization's lock.
func (s *Store[T]) Txn(ctx context.Context, orgID string, fn func(txn kv.Txn) error) error {
	return s.kv.Update(ctx, s.LockName(orgID), fn)
}

// hookError carries a caller's error out of a transaction unwrapped.
type hookError struct{ err error }

func (e hookError) Error() string { return e.err.Error() }
func (e hookError) Unwrap() error { return e.err }

// unhook returns a caller's error as it is, and any other wrapped with
// what ("" for none).
func unhook(err error, what string) error {
	var h hookError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &h):
		return h.err
	case what == "":
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}

// index runs Index after a write that returned err, unless it failed.
func (s *Store[T]) index(txn kv.Txn, old, cur *T, err error) error {
	if err == nil && s.spec.Index != nil {
		err = s.spec.Index(txn, old, cur)
	}
	return err
}

// Create adds t to its organization: prepare (may be nil) runs first in
// the organization's transaction and may refuse (its error is returned as
// it is) or complete t; then the record, its index entry and Index's keys
// are written. Store errors are wrapped "store <name>".
func (s *Store[T]) Create(ctx context.Context, t *T, prepare func(txn kv.Txn) error) error {
	orgID, id := s.spec.OrgID(t), s.spec.ID(t)
	err := s.Txn(ctx, orgID, func(txn kv.Txn) error {
		if prepare != nil {
			if err := prepare(txn); err != nil {
				return hookError{err}
			}
		}
		return s.index(txn, nil, t, errors.Join(s.Put(txn, t), txn.Put(s.OrgKey(orgID, id), nil)))
	})
	return unhook(err, "store "+s.spec.Name)
}

// edit runs fn on the organization's record id in its transaction and
// returns what fn returns; a missing or foreign record is NotFound.
func (s *Store[T]) edit(ctx context.Context, orgID, id string, fn func(txn kv.Txn, cur *T) (*T, error)) (*T, error) {
	var out *T
	err := s.Txn(ctx, orgID, func(txn kv.Txn) error {
		cur, err := s.GetIn(ctx, txn, orgID, id)
		if err == nil {
			out, err = fn(txn, cur)
		}
		return err
	})
	if err := unhook(err, ""); err != nil {
		return nil, err
	}
	return out, nil
}

// Update changes the organization's record id in its transaction: change
// gets it as stored and may refuse (its error is returned as it is);
// then the record and Index's keys are written, and the record returned.
// A missing or foreign record is NotFound.
func (s *Store[T]) Update(ctx context.Context, orgID, id string, change func(txn kv.Txn, cur *T) error) (*T, error) {
	return s.edit(ctx, orgID, id, func(txn kv.Txn, cur *T) (*T, error) {
		var old *T
		if s.spec.Index != nil {
			var err error
			if old, err = s.Load(ctx, txn, id); err != nil {
				return nil, err
			}
		}
		if err := change(txn, cur); err != nil {
			return nil, hookError{err}
		}
		if err := s.index(txn, old, cur, s.Put(txn, cur)); err != nil {
			return nil, fmt.Errorf("store %s %s: %w", s.spec.Name, id, err)
		}
		return cur, nil
	})
}

// Delete removes the organization's record id, its index entry and
// Index's keys, and returns what it was. A missing or foreign record is
// NotFound.
func (s *Store[T]) Delete(ctx context.Context, orgID, id string) (*T, error) {
	return s.edit(ctx, orgID, id, func(txn kv.Txn, cur *T) (*T, error) {
		err := errors.Join(txn.Delete(s.RecordKey(id)), txn.Delete(s.OrgKey(orgID, id)))
		if err := s.index(txn, cur, nil, err); err != nil {
			return nil, fmt.Errorf("delete %s %s: %w", s.spec.Name, id, err)
		}
		return cur, nil
	})
}

// ByIndex returns the record whose id an index of the resource's own
// keeps at key (what names the index in errors), whatever its
// organization: NotFound when the key is absent.
func (s *Store[T]) ByIndex(ctx context.Context, key []byte, what string) (*T, error) {
	id, err := s.kv.Get(ctx, key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, s.spec.NotFound
	}
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", what, err)
	}
	return s.Load(ctx, s.kv, string(id))
}

// Limit returns a prepare for Create that refuses with err once the
// organization has max records, counted in the creation's transaction so
// that every process sharing the store counts the same records.
func (s *Store[T]) Limit(ctx context.Context, orgID string, max int, err error) func(txn kv.Txn) error {
	return func(txn kv.Txn) error {
		n, cerr := s.Count(ctx, txn, orgID)
		if cerr != nil {
			return cerr
		}
		if n >= max {
			return err
		}
		return nil
	}
}

// List returns up to count of the organization's records newest first
// (their ids are time-ordered), starting after the id after ("" for the
// first page), read from one snapshot, and whether more follow. keep, when
// set, selects records: then more says whether more selected ones follow.
func (s *Store[T]) List(ctx context.Context, orgID, after string, count int, keep func(*T) bool) ([]*T, bool, error) {
	snap := s.kv.Snapshot()
	defer snap.Close()
	prefix := s.OrgPrefix(orgID)
	opts := kv.IterOptions{Reverse: true}
	if after != "" {
		opts.After = s.OrgKey(orgID, after)
	}
	it := snap.Iterate(ctx, prefix, opts)
	defer it.Close()
	var out []*T
	for it.Next() {
		if keep == nil && len(out) == count {
			return out, true, nil
		}
		t, err := s.Load(ctx, snap, string(it.Key()[len(prefix):]))
		if err != nil {
			return nil, false, err
		}
		if keep != nil && !keep(t) {
			continue
		}
		if len(out) == count {
			return out, true, nil
		}
		out = append(out, t)
	}
	return out, false, it.Err()
}

// Count returns how many records the organization has, read from r (in
// its transaction, to hold a limit across processes).
func (s *Store[T]) Count(ctx context.Context, r kv.Reader, orgID string) (int, error) {
	it := r.Iterate(ctx, s.OrgPrefix(orgID), kv.IterOptions{})
	defer it.Close()
	n := 0
	for it.Next() {
		n++
	}
	return n, it.Err()
}

// Sealed returns where a record keeps a sealed secret (seal.Box), for
// SealKind and Reseal.
type Sealed[T any] func(*T) *[]byte

// Reseal replaces t's stored secret by upgraded (an opened secret that
// seal.Box.OpenUpgrade sealed again) unless the record changed meanwhile
// (its secret is no longer the one opened); nothing else of the record
// changes. t's secret becomes upgraded when it was written.
func (s *Store[T]) Reseal(ctx context.Context, t *T, secret Sealed[T], upgraded []byte) error {
	id := s.spec.ID(t)
	wrote := false
	err := s.Txn(ctx, s.spec.OrgID(t), func(txn kv.Txn) error {
		cur, err := s.Load(ctx, txn, id)
		if err != nil {
			return err
		}
		if !bytes.Equal(*secret(cur), *secret(t)) {
			return nil
		}
		*secret(cur) = upgraded
		wrote = true
		return s.Put(txn, cur)
	})
	if err != nil {
		return fmt.Errorf("store %s %s: %w", s.spec.Name, id, err)
	}
	if wrote {
		*secret(t) = upgraded
	}
	return nil
}

// SealKind describes the records' secrets to seal.Reseal, the full pass
// of a master key rotation; kind names them in its errors and logs.
func (s *Store[T]) SealKind(ctx context.Context, kind string, secret Sealed[T]) seal.Kind {
	return seal.Kind{
		Name:   kind,
		Prefix: []byte(s.spec.Record),
		Scan: func(raw []byte) (seal.Sealed, error) {
			t, err := s.Decode(raw)
			if err != nil {
				return seal.Sealed{}, err
			}
			if len(*secret(t)) == 0 {
				return seal.Sealed{ID: s.spec.ID(t)}, nil
			}
			return seal.Sealed{ID: s.spec.ID(t), OrgID: s.spec.OrgID(t), Value: *secret(t)}, nil
		},
		Lock: s.LockName,
		Reload: func(txn kv.Txn, id string) ([]byte, func([]byte) error, error) {
			t, err := s.Load(ctx, txn, id)
			if errors.Is(err, s.spec.NotFound) {
				return nil, nil, nil
			}
			if err != nil || len(*secret(t)) == 0 {
				return nil, nil, err
			}
			return *secret(t), func(upgraded []byte) error {
				*secret(t) = upgraded
				return s.Put(txn, t)
			}, nil
		},
	}
}
