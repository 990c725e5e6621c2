package ogconfig

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/resource"
)

// Keys (see doc.go):
//
//	ogc/c/<id>                Config
//	ogc/d/<domain_id>         id of the configuration with that domain id
//	ogc/o/<org_id>/<id>       empty: an organization's configurations in creation order
//	ogc/e/<org_id>/<base_url> id of the organization's enabled configuration for that origin
//	ogc/n/<id>                its new images counted against its caps (caps.go)
//	ogc/s/<org_id>            the credits the organization's OG images spent (caps.go)
//
// Every write of an organization's configurations holds the lock
// og-config/<org_id>.
func domainKey(domainID string) []byte   { return []byte("ogc/d/" + domainID) }
func claimKey(orgID, base string) []byte { return []byte("ogc/e/" + orgID + "/" + base) }

var spec = resource.Spec[Config]{
	Name: "OG configuration", Record: "ogc/c/", Org: "ogc/o/", Lock: "og-config/",
	NotFound: ErrNotFound,
	ID:       func(c *Config) string { return c.ID },
	OrgID:    func(c *Config) string { return c.OrgID },
	Normalize: func(c *Config) {
		if c.DefaultOptions == nil {
			c.DefaultOptions = map[string]json.RawMessage{}
		}
	},
	Index: index,
}

// index keeps a configuration's other keys: its domain id, its claim of
// its base_url while enabled, and its count of new images (caps.go), which
// a deletion removes.
func index(txn kv.Txn, old, cur *Config) error {
	var err error
	switch {
	case old == nil:
		err = txn.Put(domainKey(cur.DomainID), []byte(cur.ID))
	case cur == nil:
		err = errors.Join(txn.Delete(domainKey(old.DomainID)), txn.Delete(countKey(old.ID)))
	}
	if old != nil && !old.Disabled && (cur == nil || cur.Disabled || cur.BaseURL != old.BaseURL) {
		err = errors.Join(err, txn.Delete(claimKey(old.OrgID, old.BaseURL)))
	}
	if cur != nil && !cur.Disabled {
		err = errors.Join(err, txn.Put(claimKey(cur.OrgID, cur.BaseURL), []byte(cur.ID)))
	}
	return err
}

// domainEncoding writes domain ids: lower-case base32 without padding,
// safe in a URL path and in a host name label.
var domainEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// domainIDBytes is the randomness of a domain id: 128 bits.
const domainIDBytes = 16

// DomainIDLength is the length of every domain id: 128 bits in base32.
const DomainIDLength = (domainIDBytes*8 + 4) / 5

func newDomainID() string {
	b := make([]byte, domainIDBytes)
	rand.Read(b)
	return domainEncoding.EncodeToString(b)
}

// validDomainID reports whether s is spelled as a domain id, so that
// hostile input from a public path never reaches the store as a key.
func validDomainID(s string) bool {
	if len(s) != DomainIDLength {
		return false
	}
	b, err := domainEncoding.DecodeString(s)
	return err == nil && len(b) == domainIDBytes && domainEncoding.EncodeToString(b) == s
}

// Store keeps OG configurations in a kv.Store. Every write of an
// organization's configurations is one kv.Update under the organization's
// lock, which every process sharing the store takes: one enabled
// configuration per base_url holds across them.
type Store struct {
	rs  *resource.Store[Config]
	now func() time.Time
}

// NewStore returns a Store; now may be nil for the wall clock.
func NewStore(s kv.Store, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rs: resource.NewStore(s, spec), now: now}
}

// claimant returns the id of the organization's enabled configuration for
// base, "" when none.
func claimant(ctx context.Context, r kv.Reader, orgID, base string) (string, error) {
	id, err := r.Get(ctx, claimKey(orgID, base))
	if errors.Is(err, kv.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look up the OG configuration of %s: %w", base, err)
	}
	return string(id), nil
}

// Create adds a configuration to the organization. An enabled one whose
// base_url another enabled configuration of the organization holds is a
// *ConflictError.
func (s *Store) Create(ctx context.Context, orgID string, req Request) (*Config, error) {
	now := s.now().UTC()
	c := &Config{
		ID:        uuid.Must(uuid.NewV7()).String(),
		OrgID:     orgID,
		Revision:  1,
		CreatedAt: now,
		UpdatedAt: now,
	}
	apply(c, req)
	err := s.rs.Create(ctx, c, func(txn kv.Txn) error {
		if err := checkClaim(ctx, txn, c); err != nil {
			return err
		}
		domainID, err := freeDomainID(ctx, txn)
		c.DomainID = domainID
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// checkClaim refuses an enabled c whose base_url another enabled
// configuration of the organization holds: a *ConflictError.
func checkClaim(ctx context.Context, r kv.Reader, c *Config) error {
	if c.Disabled {
		return nil
	}
	other, err := claimant(ctx, r, c.OrgID, c.BaseURL)
	if err != nil {
		return err
	}
	if other != "" && other != c.ID {
		return &ConflictError{BaseURL: c.BaseURL, ExistingID: other}
	}
	return nil
}

// freeDomainID draws a domain id no configuration has. At 128 bits a
// collision is not expected; looking costs one read. (Domain ids are not
// under one lock: two organizations drawing the same 128 bits at once is
// not a case to guard.)
func freeDomainID(ctx context.Context, r kv.Reader) (string, error) {
	for range 4 {
		id := newDomainID()
		_, err := r.Get(ctx, domainKey(id))
		if errors.Is(err, kv.ErrNotFound) {
			return id, nil
		}
		if err != nil {
			return "", fmt.Errorf("look up domain id: %w", err)
		}
	}
	return "", errors.New("no free domain id: the random source repeats itself")
}

func apply(c *Config, req Request) {
	c.ConfigType = req.ConfigType
	c.Name = req.Name
	c.Description = req.Description
	c.BaseURL = req.BaseURL
	c.Disabled = req.Disabled
	c.RefreshInterval = req.RefreshInterval
	c.OptimizationMode = req.OptimizationMode
	c.ExtractValues = req.ExtractValues
	c.DefaultOptions = req.DefaultOptions
	if c.DefaultOptions == nil {
		c.DefaultOptions = map[string]json.RawMessage{}
	}
	c.TemplateID = req.TemplateID
	c.TemplateVersion = req.TemplateVersion
	c.Mapping = req.Mapping
	c.Headers = req.Headers
	c.AdditionalHeaderOrigins = req.AdditionalHeaderOrigins
	c.MaxNewImagesPerDay = req.MaxNewImagesPerDay
	c.MaxNewImagesPerPeriod = req.MaxNewImagesPerPeriod
}

// Get returns the organization's configuration with the id; another
// organization's is ErrNotFound, like a missing one.
func (s *Store) Get(ctx context.Context, orgID, id string) (*Config, error) {
	return s.rs.Get(ctx, orgID, id)
}

// ByDomainID returns the configuration with the domain id, disabled or
// not, whatever its organization: the OG serving path's look-up (one index
// read and one record read).
func (s *Store) ByDomainID(ctx context.Context, domainID string) (*Config, error) {
	if !validDomainID(domainID) {
		return nil, ErrNotFound
	}
	return s.rs.ByIndex(ctx, domainKey(domainID), "domain id")
}

// Update replaces the configuration's fields with req (a full
// replacement); its id, domain id and creation time stay and its revision
// grows. Enabling it, or moving it while enabled, to a base_url another
// enabled configuration holds is a *ConflictError.
func (s *Store) Update(ctx context.Context, orgID, id string, req Request) (*Config, error) {
	return s.rs.Update(ctx, orgID, id, func(txn kv.Txn, c *Config) error {
		apply(c, req)
		if err := checkClaim(ctx, txn, c); err != nil {
			return err
		}
		c.Revision++
		c.UpdatedAt = s.now().UTC()
		return nil
	})
}

// RequestRefresh marks every page of the organization's configuration for
// a recheck at its next request: its RefreshGeneration grows by one and
// RefreshRequestedAt is now. Its revision and updated_at stay: nothing of
// the configuration changed, and its images keep their identity.
func (s *Store) RequestRefresh(ctx context.Context, orgID, id string) (*Config, error) {
	return s.rs.Update(ctx, orgID, id, func(_ kv.Txn, c *Config) error {
		c.RefreshGeneration++
		c.RefreshRequestedAt = s.now().UTC()
		return nil
	})
}

// Delete removes the configuration with its indexes and returns what it
// was.
func (s *Store) Delete(ctx context.Context, orgID, id string) (*Config, error) {
	return s.rs.Delete(ctx, orgID, id)
}

// List returns up to count of the organization's configurations newest
// first, disabled ones included, starting after the id after ("" for the
// first page), and whether more follow.
func (s *Store) List(ctx context.Context, orgID, after string, count int) ([]*Config, bool, error) {
	return s.rs.List(ctx, orgID, after, count, nil)
}
