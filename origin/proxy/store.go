package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
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

// Store keeps proxies in a kv.Store, their passwords sealed.
type Store struct {
	kv    kv.Store
	box   *seal.Box
	now   func() time.Time
	seed  maphash.Seed
	locks [32]sync.Mutex // writes of one organization are serialized by its stripe
}

// NewStore returns a Store; now may be nil for the wall clock.
func NewStore(s kv.Store, box *seal.Box, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{kv: s, box: box, now: now, seed: maphash.MakeSeed()}
}

func (s *Store) lock(orgID string) func() {
	m := &s.locks[maphash.String(s.seed, orgID)%uint64(len(s.locks))]
	m.Lock()
	return m.Unlock
}

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
func (s *Store) Create(orgID string, req Request) (*Proxy, error) {
	if req.RetainPassword {
		return nil, &RetainError{Problem: "is only for updates: a new proxy has no password to keep"}
	}
	unlock := s.lock(orgID)
	defer unlock()
	now := s.now().UTC()
	p := &Proxy{
		ID:        uuid.Must(uuid.NewV7()).String(),
		OrgID:     orgID,
		CreatedAt: now,
		UpdatedAt: now,
	}
	s.apply(p, req)
	b := s.kv.NewBatch()
	defer b.Close()
	if err := s.put(b, p); err != nil {
		return nil, err
	}
	b.Put(orgKey(orgID, p.ID), nil)
	if err := b.Commit(); err != nil {
		return nil, fmt.Errorf("store proxy: %w", err)
	}
	return p, nil
}

// Get returns the organization's proxy with the id, disabled or not;
// another organization's is ErrNotFound, like a missing one. The render
// path reads a proxy_id with it and Credentials.
func (s *Store) Get(orgID, id string) (*Proxy, error) {
	p, err := s.load(s.kv, id)
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
func (s *Store) Update(orgID, id string, req Request) (*Proxy, error) {
	unlock := s.lock(orgID)
	defer unlock()
	p, err := s.Get(orgID, id)
	if err != nil {
		return nil, err
	}
	if req.RetainPassword {
		if problem := retainProblem(p, req); problem != "" {
			return nil, &RetainError{Problem: problem}
		}
	}
	s.apply(p, req)
	p.UpdatedAt = s.now().UTC()
	if err := s.put(s.kv, p); err != nil {
		return nil, fmt.Errorf("store proxy %s: %w", p.ID, err)
	}
	return p, nil
}

// Delete removes the proxy and its index entry.
func (s *Store) Delete(orgID, id string) error {
	unlock := s.lock(orgID)
	defer unlock()
	p, err := s.Get(orgID, id)
	if err != nil {
		return err
	}
	b := s.kv.NewBatch()
	defer b.Close()
	b.Delete(recordKey(p.ID))
	b.Delete(orgKey(orgID, p.ID))
	if err := b.Commit(); err != nil {
		return fmt.Errorf("delete proxy %s: %w", p.ID, err)
	}
	return nil
}

// List returns up to count of the organization's proxies newest first,
// disabled ones included, starting after the id after ("" for the first
// page), and whether more follow.
func (s *Store) List(orgID, after string, count int) ([]*Proxy, bool, error) {
	return kv.ListIndex(s.kv, orgPrefix(orgID), after, count, s.load)
}

// Credentials returns what a render sends to the proxy: its username and
// opened password ("" for none). A password sealed in the seal package's
// legacy format is stored again in the current one, once. Errors never
// hold the password.
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
	unlock := s.lock(p.OrgID)
	defer unlock()
	cur, err := s.load(s.kv, p.ID)
	if err != nil {
		return err
	}
	if !bytes.Equal(cur.SealedPassword, p.SealedPassword) {
		return nil
	}
	cur.SealedPassword = upgraded
	if err := s.put(s.kv, cur); err != nil {
		return fmt.Errorf("store proxy %s: %w", cur.ID, err)
	}
	p.SealedPassword = upgraded
	return nil
}
