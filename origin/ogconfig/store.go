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
)

// Keys (see doc.go):
//
//	ogc/c/<id>                Config
//	ogc/d/<domain_id>         id of the configuration with that domain id
//	ogc/o/<org_id>/<id>       empty: an organization's configurations in creation order
//	ogc/e/<org_id>/<base_url> id of the organization's enabled configuration for that origin
//	ogc/n/<id>                its new images counted against its caps (caps.go)
//	ogc/s/<org_id>            the credits the organization's OG images spent (caps.go)
func recordKey(id string) []byte         { return []byte("ogc/c/" + id) }
func domainKey(domainID string) []byte   { return []byte("ogc/d/" + domainID) }
func orgPrefix(orgID string) []byte      { return []byte("ogc/o/" + orgID + "/") }
func orgKey(orgID, id string) []byte     { return []byte("ogc/o/" + orgID + "/" + id) }
func claimKey(orgID, base string) []byte { return []byte("ogc/e/" + orgID + "/" + base) }

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
	kv  kv.Store
	now func() time.Time
}

// NewStore returns a Store; now may be nil for the wall clock.
func NewStore(s kv.Store, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{kv: s, now: now}
}

// lockName is the kv lock of an organization's configurations.
func lockName(orgID string) string { return "og-config/" + orgID }

func (s *Store) load(r kv.Reader, id string) (*Config, error) {
	raw, err := r.Get(recordKey(id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get OG configuration %s: %w", id, err)
	}
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("decode OG configuration %s: %w", id, err)
	}
	if c.DefaultOptions == nil {
		c.DefaultOptions = map[string]json.RawMessage{}
	}
	return &c, nil
}

// claimant returns the id of the organization's enabled configuration for
// base, "" when none.
func claimant(r kv.Reader, orgID, base string) (string, error) {
	id, err := r.Get(claimKey(orgID, base))
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
	err := s.kv.Update(ctx, lockName(orgID), func(txn kv.Txn) error {
		if !req.Disabled {
			if other, err := claimant(txn, orgID, req.BaseURL); err != nil {
				return err
			} else if other != "" {
				return &ConflictError{BaseURL: req.BaseURL, ExistingID: other}
			}
		}
		domainID, err := freeDomainID(txn)
		if err != nil {
			return err
		}
		c.DomainID = domainID
		raw, err := json.Marshal(c)
		if err != nil {
			return err
		}
		err = errors.Join(
			txn.Put(recordKey(c.ID), raw),
			txn.Put(domainKey(c.DomainID), []byte(c.ID)),
			txn.Put(orgKey(orgID, c.ID), nil))
		if !c.Disabled {
			err = errors.Join(err, txn.Put(claimKey(orgID, c.BaseURL), []byte(c.ID)))
		}
		return err
	})
	if err != nil {
		var conflict *ConflictError
		if errors.As(err, &conflict) {
			return nil, err
		}
		return nil, fmt.Errorf("store OG configuration: %w", err)
	}
	return c, nil
}

// freeDomainID draws a domain id no configuration has. At 128 bits a
// collision is not expected; looking costs one read. (Domain ids are not
// under one lock: two organizations drawing the same 128 bits at once is
// not a case to guard.)
func freeDomainID(r kv.Reader) (string, error) {
	for range 4 {
		id := newDomainID()
		_, err := r.Get(domainKey(id))
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
func (s *Store) Get(orgID, id string) (*Config, error) {
	return s.get(s.kv, orgID, id)
}

func (s *Store) get(r kv.Reader, orgID, id string) (*Config, error) {
	c, err := s.load(r, id)
	if err != nil {
		return nil, err
	}
	if c.OrgID != orgID {
		return nil, ErrNotFound
	}
	return c, nil
}

// ByDomainID returns the configuration with the domain id, disabled or
// not, whatever its organization: the OG serving path's look-up (one index
// read and one record read).
func (s *Store) ByDomainID(domainID string) (*Config, error) {
	if !validDomainID(domainID) {
		return nil, ErrNotFound
	}
	id, err := s.kv.Get(domainKey(domainID))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("look up domain id: %w", err)
	}
	return s.load(s.kv, string(id))
}

// Update replaces the configuration's fields with req (a full
// replacement); its id, domain id and creation time stay and its revision
// grows. Enabling it, or moving it while enabled, to a base_url another
// enabled configuration holds is a *ConflictError.
func (s *Store) Update(ctx context.Context, orgID, id string, req Request) (*Config, error) {
	var out *Config
	err := s.kv.Update(ctx, lockName(orgID), func(txn kv.Txn) error {
		c, err := s.get(txn, orgID, id)
		if err != nil {
			return err
		}
		if !req.Disabled {
			if other, err := claimant(txn, orgID, req.BaseURL); err != nil {
				return err
			} else if other != "" && other != id {
				return &ConflictError{BaseURL: req.BaseURL, ExistingID: other}
			}
		}
		wasEnabled, oldBase := !c.Disabled, c.BaseURL
		apply(c, req)
		c.Revision++
		c.UpdatedAt = s.now().UTC()
		raw, err := json.Marshal(c)
		if err != nil {
			return err
		}
		err = txn.Put(recordKey(c.ID), raw)
		if wasEnabled && (c.Disabled || c.BaseURL != oldBase) {
			err = errors.Join(err, txn.Delete(claimKey(orgID, oldBase)))
		}
		if !c.Disabled {
			err = errors.Join(err, txn.Put(claimKey(orgID, c.BaseURL), []byte(c.ID)))
		}
		if err != nil {
			return fmt.Errorf("store OG configuration %s: %w", c.ID, err)
		}
		out = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RequestRefresh marks every page of the organization's configuration for
// a recheck at its next request: its RefreshGeneration grows by one and
// RefreshRequestedAt is now. Its revision and updated_at stay: nothing of
// the configuration changed, and its images keep their identity.
func (s *Store) RequestRefresh(ctx context.Context, orgID, id string) (*Config, error) {
	var out *Config
	err := s.kv.Update(ctx, lockName(orgID), func(txn kv.Txn) error {
		c, err := s.get(txn, orgID, id)
		if err != nil {
			return err
		}
		c.RefreshGeneration++
		c.RefreshRequestedAt = s.now().UTC()
		raw, err := json.Marshal(c)
		if err != nil {
			return err
		}
		if err := txn.Put(recordKey(c.ID), raw); err != nil {
			return fmt.Errorf("store OG configuration %s: %w", c.ID, err)
		}
		out = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete removes the configuration with its indexes and returns what it
// was.
func (s *Store) Delete(ctx context.Context, orgID, id string) (*Config, error) {
	var out *Config
	err := s.kv.Update(ctx, lockName(orgID), func(txn kv.Txn) error {
		c, err := s.get(txn, orgID, id)
		if err != nil {
			return err
		}
		err = errors.Join(
			txn.Delete(recordKey(c.ID)),
			txn.Delete(domainKey(c.DomainID)),
			txn.Delete(orgKey(orgID, c.ID)),
			txn.Delete(countKey(c.ID)))
		if !c.Disabled {
			err = errors.Join(err, txn.Delete(claimKey(orgID, c.BaseURL)))
		}
		if err != nil {
			return fmt.Errorf("delete OG configuration %s: %w", c.ID, err)
		}
		out = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// List returns up to count of the organization's configurations newest
// first, disabled ones included, starting after the id after ("" for the
// first page), and whether more follow.
func (s *Store) List(orgID, after string, count int) ([]*Config, bool, error) {
	return kv.ListIndex(s.kv, orgPrefix(orgID), after, count, s.load)
}
