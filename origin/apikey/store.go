package apikey

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/resource"
	"github.com/pictorhq/pictor/origin/seal"
)

// MaxPerOrg is the most keys, disabled ones included, an organization holds.
const MaxPerOrg = 100

// Key is a stored API key. Secret is sealed under the master key with the
// key id as additional data.
type Key struct {
	ID          string            `json:"id"`
	OrgID       string            `json:"org_id"`
	APIID       string            `json:"api_id"`
	Secret      []byte            `json:"secret"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Disabled    bool              `json:"disabled"`
	Permissions []perm.Permission `json:"permissions"`
	AllFuture   bool              `json:"all_future_permissions"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
}

// Grant returns what the key holds.
func (k *Key) Grant() perm.Grant {
	return perm.Grant{Permissions: k.Permissions, AllFuture: k.AllFuture}
}

// DisplayName is the key's name, or the default built from its creation time.
func (k *Key) DisplayName() string {
	if k.Name != "" {
		return k.Name
	}
	return "Key created " + k.CreatedAt.UTC().Format("2006-01-02 15:04:05")
}

// Store keeps API keys in a kv.Store.
type Store struct {
	rs   *resource.Store[Key]
	box  *seal.Box
	orgs *org.Store
	now  func() time.Time

	dummy []byte // sealed secret compared against when an api_id is unknown
}

var _ auth.Authenticator = (*Store)(nil)

// NewStore returns a Store; now may be nil for the wall clock.
func NewStore(s kv.Store, box *seal.Box, orgs *org.Store, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	st := &Store{rs: resource.NewStore(s, spec), box: box, orgs: orgs, now: now}
	st.dummy = box.Seal([]byte(newSecret()), []byte("dummy"))
	return st
}

// Keys:
//
//	key/<id>                  Key
//	key-api/<api_id>          id of the key with that api_id
//	org-key/<org_id>/<id>     empty: an organization's keys in creation order
//
// Every write of an organization's keys holds the lock api-key/<org_id>.
func apiIDKey(apiID string) []byte { return []byte("key-api/" + apiID) }

var spec = resource.Spec[Key]{
	Name: "API key", Record: "key/", Org: "org-key/", Lock: "api-key/",
	NotFound: ErrNotFound,
	ID:       func(k *Key) string { return k.ID },
	OrgID:    func(k *Key) string { return k.OrgID },
	// Keys are disabled, never deleted: the api_id index is written once.
	Index: func(txn kv.Txn, old, cur *Key) error {
		if old == nil {
			return txn.Put(apiIDKey(cur.APIID), []byte(cur.ID))
		}
		return nil
	},
}

// sealedSecret is where a key keeps its sealed secret.
func sealedSecret(k *Key) *[]byte { return &k.Secret }

// newSecret returns 192 random bits as hex.
func newSecret() string {
	b := make([]byte, 24)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Create adds a key to the organization and returns it with its secret.
// authorize runs in the organization's write transaction, after which the
// limit of MaxPerOrg keys is checked: every process sharing the store
// counts the same keys.
func (s *Store) Create(orgID string, req Request, authorize func() error) (*Key, string, error) {
	return s.CreateContext(context.Background(), orgID, req, authorize)
}

// CreateContext is Create bounded by ctx.
func (s *Store) CreateContext(ctx context.Context, orgID string, req Request, authorize func() error) (*Key, string, error) {
	if authorize != nil {
		if err := authorize(); err != nil {
			return nil, "", err
		}
	}
	now := s.now().UTC()
	secret := newSecret()
	k := &Key{
		ID:        uuid.Must(uuid.NewV7()).String(),
		OrgID:     orgID,
		APIID:     uuid.NewString(),
		CreatedAt: now,
		UpdatedAt: now,
	}
	k.Secret = s.box.Seal([]byte(secret), []byte(k.ID))
	apply(k, req)
	if err := s.rs.Create(ctx, k, s.rs.Limit(ctx, orgID, MaxPerOrg, ErrLimit)); err != nil {
		return nil, "", err
	}
	return k, secret, nil
}

func apply(k *Key, req Request) {
	k.Name = req.Name
	k.Description = req.Description
	k.Disabled = req.Disabled
	k.Permissions = req.Grant.Permissions
	k.AllFuture = req.Grant.AllFuture
}

// Get returns the organization's key with the id; another organization's
// key is ErrNotFound, like a missing one.
func (s *Store) Get(ctx context.Context, orgID, id string) (*Key, error) {
	return s.rs.Get(ctx, orgID, id)
}

// Update replaces the key's fields with req once authorize accepts the
// existing key. The secret is kept.
func (s *Store) Update(ctx context.Context, orgID, id string, req Request, authorize func(existing *Key) error) (*Key, error) {
	return s.modify(ctx, orgID, id, authorize, func(k *Key) { apply(k, req) })
}

// Disable disables the key once authorize accepts it; disabling a disabled
// key succeeds.
func (s *Store) Disable(ctx context.Context, orgID, id string, authorize func(existing *Key) error) (*Key, error) {
	return s.modify(ctx, orgID, id, authorize, func(k *Key) { k.Disabled = true })
}

// modify changes the key in one transaction of its organization;
// authorize and change run inside it and must have no other effect.
func (s *Store) modify(ctx context.Context, orgID, id string, authorize func(*Key) error, change func(*Key)) (*Key, error) {
	return s.rs.Update(ctx, orgID, id, func(_ kv.Txn, k *Key) error {
		if authorize != nil {
			if err := authorize(k); err != nil {
				return err
			}
		}
		change(k)
		k.UpdatedAt = s.now().UTC()
		return nil
	})
}

// Filter selects keys in List.
type Filter struct {
	IncludeDisabled bool
	// WithPermissions keeps keys holding all of these (all-future keys hold all).
	WithPermissions []perm.Permission
}

func (f Filter) match(k *Key) bool {
	if k.Disabled && !f.IncludeDisabled {
		return false
	}
	for _, p := range f.WithPermissions {
		if !k.Grant().Has(p) {
			return false
		}
	}
	return true
}

// List returns up to count of the organization's keys newest first,
// starting after the key id after ("" for the first page), and whether more
// matching keys follow.
func (s *Store) List(ctx context.Context, orgID, after string, count int, f Filter) ([]*Key, bool, error) {
	return s.rs.List(ctx, orgID, after, count, f.match)
}

// Secret returns the key's plaintext secret, for verifying signed URLs.
func (s *Store) Secret(k *Key) (string, error) {
	plain, err := s.openSecret(k)
	if err != nil {
		return "", err
	}
	return string(plain), nil
}

// openSecret opens the key's sealed secret; one sealed in an older format
// of the seal package, or under a previous master key, is stored again
// under the current key in the current format, once.
func (s *Store) openSecret(k *Key) ([]byte, error) {
	plain, upgraded, err := s.box.OpenUpgrade(k.Secret, []byte(k.ID))
	if err != nil {
		return nil, fmt.Errorf("open secret of API key %s: %w", k.ID, err)
	}
	if upgraded != nil {
		if err := s.rs.Reseal(context.Background(), k, sealedSecret, upgraded); err != nil {
			// The secret opened: the caller goes on, the next read retries.
			slog.Warn("API key secret not migrated to the current sealed format", "key_id", k.ID, "error", err)
		}
	}
	return plain, nil
}

// ByAPIID returns the key whose Basic-auth username is apiID.
func (s *Store) ByAPIID(ctx context.Context, apiID string) (*Key, error) {
	return s.rs.ByIndex(ctx, apiIDKey(apiID), "api_id")
}

// Authenticate implements auth.Authenticator.
func (s *Store) Authenticate(ctx context.Context, apiID, secret string) (*auth.Principal, error) {
	k, err := s.ByAPIID(ctx, apiID)
	if errors.Is(err, ErrNotFound) {
		// Spend the same work as for a real key so timing reveals nothing.
		want, _ := s.box.Open(s.dummy, []byte("dummy"))
		subtle.ConstantTimeCompare(want, []byte(secret))
		return nil, auth.ErrInvalid
	}
	if err != nil {
		return nil, err
	}
	want, err := s.openSecret(k)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare(want, []byte(secret)) != 1 {
		return nil, auth.ErrInvalid
	}
	return s.principal(ctx, k)
}

// Principal returns the current principal of the key with the id, for a
// caller authenticated another way than by its secret (an OAuth
// connection the key approved): auth.ErrInvalid when no such key exists,
// auth.ErrDisabled, auth.ErrSuspended.
func (s *Store) Principal(ctx context.Context, id string) (*auth.Principal, error) {
	k, err := s.rs.Load(ctx, s.rs.KV(), id)
	if errors.Is(err, ErrNotFound) {
		return nil, auth.ErrInvalid
	}
	if err != nil {
		return nil, err
	}
	return s.principal(ctx, k)
}

// principal is the caller a key stands for: auth.ErrDisabled for a
// disabled key, auth.ErrSuspended when its organization is suspended.
func (s *Store) principal(ctx context.Context, k *Key) (*auth.Principal, error) {
	if k.Disabled {
		return nil, auth.ErrDisabled
	}
	o, err := s.orgs.Get(ctx, k.OrgID)
	if err != nil {
		return nil, fmt.Errorf("organization of API key %s: %w", k.ID, err)
	}
	if o.Suspended {
		return nil, auth.ErrSuspended
	}
	return &auth.Principal{Org: o, KeyID: k.ID, APIID: k.APIID, Grant: k.Grant()}, nil
}

// Reseal seals again under the box's current master key every key secret
// that is not (sealed under a previous key, or in an older format): the
// full pass of a master key rotation, under the lock every write of keys
// takes (seal.Reseal); updated_at stays.
func (s *Store) Reseal(ctx context.Context) (seal.ResealCount, error) {
	return seal.Reseal(ctx, s.rs.KV(), s.box, s.rs.SealKind(ctx, "API key", sealedSecret))
}
