package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/seal"
)

// Keys (see doc.go):
//
//	prx/p/<id>           Proxy
//	prx/o/<org_id>/<id>  empty: an organization's proxies in creation order
func recordKey(id string) []byte     { return []byte("prx/p/" + id) }
func orgPrefix(orgID string) []byte  { return []byte("prx/o/" + orgID + "/") }
func orgKey(orgID, id string) []byte { return []byte("prx/o/" + orgID + "/" + id) }

// Store keeps proxies in a kv.Store, their passwords sealed. Every write
// of an organization's proxies is one kv.Update under the organization's
// lock, which every process sharing the store takes.
type Store struct {
	kv  kv.Store
	box *seal.Box
	now func() time.Time
}

// NewStore returns a Store; now may be nil for the wall clock.
func NewStore(s kv.Store, box *seal.Box, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{kv: s, box: box, now: now}
}

// lockName is the kv lock of an organization's proxies.
func lockName(orgID string) string { return "proxy/" + orgID }

func (s *Store) load(r kv.Reader, id string) (*Proxy, error) {
	raw, err := r.Get(recordKey(id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get proxy %s: %w", id, err)
	}
	var p Proxy
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("decode proxy %s: %w", id, err)
	}
	if p.BypassHosts == nil {
		p.BypassHosts = []string{}
	}
	return &p, nil
}

func (s *Store) put(b kv.Writer, p *Proxy) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return b.Put(recordKey(p.ID), raw)
}

// apply copies req's fields to p and sets its password: sealed anew from
// req.Password (none when empty), or kept with req.RetainPassword.
func (s *Store) apply(p *Proxy, req Request) {
	p.Name = req.Name
	p.URL = req.URL
	p.Port = req.Port
	p.Disabled = req.Disabled
	p.Username = req.Username
	p.BypassHosts = slices.Clone(req.BypassHosts)
	if p.BypassHosts == nil {
		p.BypassHosts = []string{}
	}
	switch {
	case req.RetainPassword:
	case req.Password == "":
		p.SealedPassword = nil
	default:
		p.SealedPassword = s.box.Seal([]byte(req.Password), []byte(p.ID))
	}
}

// Create adds a proxy to the organization. req.RetainPassword is a
// *RetainError: a new proxy has no password to keep.
func (s *Store) Create(ctx context.Context, orgID string, req Request) (*Proxy, error) {
	if req.RetainPassword {
		return nil, &RetainError{Problem: "is only for updates: a new proxy has no password to keep"}
	}
	now := s.now().UTC()
	p := &Proxy{
		ID:        uuid.Must(uuid.NewV7()).String(),
		OrgID:     orgID,
		CreatedAt: now,
		UpdatedAt: now,
	}
	s.apply(p, req)
	err := s.kv.Update(ctx, lockName(orgID), func(txn kv.Txn) error {
		return errors.Join(s.put(txn, p), txn.Put(orgKey(orgID, p.ID), nil))
	})
	if err != nil {
		return nil, fmt.Errorf("store proxy: %w", err)
	}
	return p, nil
}

// Get returns the organization's proxy with the id, disabled or not;
// another organization's is ErrNotFound, like a missing one. The render
// path reads a proxy_id with it and Credentials.
func (s *Store) Get(orgID, id string) (*Proxy, error) {
	return s.get(s.kv, orgID, id)
}

func (s *Store) get(r kv.Reader, orgID, id string) (*Proxy, error) {
	p, err := s.load(r, id)
	if err != nil {
		return nil, err
	}
	if p.OrgID != orgID {
		return nil, ErrNotFound
	}
	return p, nil
}

// Update replaces the proxy's fields with req (a full replacement); its id
// and creation time stay. Without RetainPassword the password becomes
// req.Password (none when empty); with it the stored password is kept if
// retainProblem allows it for the proxy as it is now, else the error is a
// *RetainError.
func (s *Store) Update(ctx context.Context, orgID, id string, req Request) (*Proxy, error) {
	var out *Proxy
	err := s.kv.Update(ctx, lockName(orgID), func(txn kv.Txn) error {
		p, err := s.get(txn, orgID, id)
		if err != nil {
			return err
		}
		if req.RetainPassword {
			if problem := retainProblem(p, req); problem != "" {
				return &RetainError{Problem: problem}
			}
		}
		s.apply(p, req)
		p.UpdatedAt = s.now().UTC()
		if err := s.put(txn, p); err != nil {
			return fmt.Errorf("store proxy %s: %w", p.ID, err)
		}
		out = p
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete removes the proxy and its index entry.
func (s *Store) Delete(ctx context.Context, orgID, id string) error {
	return s.kv.Update(ctx, lockName(orgID), func(txn kv.Txn) error {
		p, err := s.get(txn, orgID, id)
		if err != nil {
			return err
		}
		if err := errors.Join(txn.Delete(recordKey(p.ID)), txn.Delete(orgKey(orgID, p.ID))); err != nil {
			return fmt.Errorf("delete proxy %s: %w", p.ID, err)
		}
		return nil
	})
}

// List returns up to count of the organization's proxies newest first,
// disabled ones included, starting after the id after ("" for the first
// page), and whether more follow.
func (s *Store) List(orgID, after string, count int) ([]*Proxy, bool, error) {
	return kv.ListIndex(s.kv, orgPrefix(orgID), after, count, s.load)
}

// Credentials returns what a render sends to the proxy: its username and
// opened password ("" for none). A password sealed in an older format of
// the seal package, or under a previous master key, is stored again under
// the current key in the current format, once. Errors never hold the
// password.
func (s *Store) Credentials(p *Proxy) (username, password string, err error) {
	if !p.HasPassword() {
		return p.Username, "", nil
	}
	plain, upgraded, err := s.box.OpenUpgrade(p.SealedPassword, []byte(p.ID))
	if err != nil {
		return "", "", fmt.Errorf("open password of proxy %s: %w", p.ID, err)
	}
	if upgraded != nil {
		if err := s.reseal(p, upgraded); err != nil {
			// The password opened: the caller goes on, the next read retries.
			slog.Warn("proxy password not migrated to the current sealed format", "proxy_id", p.ID, "error", err)
		}
	}
	return p.Username, string(plain), nil
}

// reseal replaces p's stored password by upgraded unless the record changed
// meanwhile (its password is no longer the one opened). It is not an
// update of the proxy: updated_at stays.
func (s *Store) reseal(p *Proxy, upgraded []byte) error {
	wrote := false
	err := s.kv.Update(context.Background(), lockName(p.OrgID), func(txn kv.Txn) error {
		cur, err := s.load(txn, p.ID)
		if err != nil {
			return err
		}
		if !bytes.Equal(cur.SealedPassword, p.SealedPassword) {
			return nil
		}
		cur.SealedPassword = upgraded
		wrote = true
		return s.put(txn, cur)
	})
	if err != nil {
		return fmt.Errorf("store proxy %s: %w", p.ID, err)
	}
	if wrote {
		p.SealedPassword = upgraded
	}
	return nil
}

// Reseal seals again under the box's current master key every proxy
// password that is not (sealed under a previous key, or in an older
// format): the full pass of a master key rotation, under the lock every
// write of proxies takes (seal.Reseal); updated_at stays.
func (s *Store) Reseal(ctx context.Context) (seal.ResealCount, error) {
	return seal.Reseal(ctx, s.kv, s.box, seal.Kind{
		Name:   "proxy",
		Prefix: []byte("prx/p/"),
		Scan: func(raw []byte) (seal.Sealed, error) {
			var p Proxy
			err := json.Unmarshal(raw, &p)
			if !p.HasPassword() {
				return seal.Sealed{ID: p.ID}, err
			}
			return seal.Sealed{ID: p.ID, OrgID: p.OrgID, Value: p.SealedPassword}, err
		},
		Lock: lockName,
		Reload: func(txn kv.Txn, id string) ([]byte, func([]byte) error, error) {
			p, err := s.load(txn, id)
			if errors.Is(err, ErrNotFound) {
				return nil, nil, nil
			}
			if err != nil || !p.HasPassword() {
				return nil, nil, err
			}
			return p.SealedPassword, func(upgraded []byte) error {
				p.SealedPassword = upgraded
				return s.put(txn, p)
			}, nil
		},
	})
}
