package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/resource"
	"github.com/pictorhq/pictor/origin/seal"
)

// Keys (see doc.go):
//
//	prx/p/<id>           Proxy
//	prx/o/<org_id>/<id>  empty: an organization's proxies in creation order
//
// Every write of an organization's proxies holds the lock proxy/<org_id>.
var spec = resource.Spec[Proxy]{
	Name: "proxy", Record: "prx/p/", Org: "prx/o/", Lock: "proxy/",
	NotFound: ErrNotFound,
	ID:       func(p *Proxy) string { return p.ID },
	OrgID:    func(p *Proxy) string { return p.OrgID },
	Normalize: func(p *Proxy) {
		if p.BypassHosts == nil {
			p.BypassHosts = []string{}
		}
	},
}

// sealedPassword is where a proxy keeps its sealed password.
func sealedPassword(p *Proxy) *[]byte { return &p.SealedPassword }

// Store keeps proxies in a kv.Store, their passwords sealed. Every write
// of an organization's proxies is one kv.Update under the organization's
// lock, which every process sharing the store takes.
type Store struct {
	rs  *resource.Store[Proxy]
	box *seal.Box
	now func() time.Time
}

// NewStore returns a Store; now may be nil for the wall clock.
func NewStore(s kv.Store, box *seal.Box, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rs: resource.NewStore(s, spec), box: box, now: now}
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
	if err := s.rs.Create(ctx, p, nil); err != nil {
		return nil, err
	}
	return p, nil
}

// Get returns the organization's proxy with the id, disabled or not;
// another organization's is ErrNotFound, like a missing one. The render
// path reads a proxy_id with it and Credentials.
func (s *Store) Get(ctx context.Context, orgID, id string) (*Proxy, error) {
	return s.rs.Get(ctx, orgID, id)
}

// Update replaces the proxy's fields with req (a full replacement); its id
// and creation time stay. Without RetainPassword the password becomes
// req.Password (none when empty); with it the stored password is kept if
// retainProblem allows it for the proxy as it is now, else the error is a
// *RetainError.
func (s *Store) Update(ctx context.Context, orgID, id string, req Request) (*Proxy, error) {
	return s.rs.Update(ctx, orgID, id, func(_ kv.Txn, p *Proxy) error {
		if req.RetainPassword {
			if problem := retainProblem(p, req); problem != "" {
				return &RetainError{Problem: problem}
			}
		}
		s.apply(p, req)
		p.UpdatedAt = s.now().UTC()
		return nil
	})
}

// Delete removes the proxy and its index entry.
func (s *Store) Delete(ctx context.Context, orgID, id string) error {
	_, err := s.rs.Delete(ctx, orgID, id)
	return err
}

// List returns up to count of the organization's proxies newest first,
// disabled ones included, starting after the id after ("" for the first
// page), and whether more follow.
func (s *Store) List(ctx context.Context, orgID, after string, count int) ([]*Proxy, bool, error) {
	return s.rs.List(ctx, orgID, after, count, nil)
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
		if err := s.rs.Reseal(context.Background(), p, sealedPassword, upgraded); err != nil {
			// The password opened: the caller goes on, the next read retries.
			slog.Warn("proxy password not migrated to the current sealed format", "proxy_id", p.ID, "error", err)
		}
	}
	return p.Username, string(plain), nil
}

// Reseal seals again under the box's current master key every proxy
// password that is not (sealed under a previous key, or in an older
// format): the full pass of a master key rotation, under the lock every
// write of proxies takes (seal.Reseal); updated_at stays.
func (s *Store) Reseal(ctx context.Context) (seal.ResealCount, error) {
	return seal.Reseal(ctx, s.rs.KV(), s.box, s.rs.SealKind(ctx, "proxy", sealedPassword))
}
