package storedest

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/resource"
	"github.com/pictorhq/pictor/origin/seal"
	"github.com/pictorhq/pictor/origin/storage"
)

// Keys (see doc.go):
//
//	sd/r/<id>           record
//	sd/o/<org_id>/<id>  empty: an organization's destinations in creation order
//	sd/x/<org_id>       the organization's AWS external id
//
// Every write of an organization's destinations (and external id) holds
// the lock storage-destination/<org_id>.
var spec = resource.Spec[Destination]{
	Name: "storage destination", Record: "sd/r/", Org: "sd/o/", Lock: "storage-destination/",
	NotFound: ErrNotFound,
	ID:       func(d *Destination) string { return d.ID },
	OrgID:    func(d *Destination) string { return d.OrgID },
	Encode:   func(d *Destination) ([]byte, error) { return json.Marshal(newRecord(d)) },
	Decode: func(raw []byte) (*Destination, error) {
		var rec record
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, err
		}
		return rec.destination(), nil
	},
}

// sealedSecret is where a destination keeps its sealed secret.
func sealedSecret(d *Destination) *[]byte { return &d.sealed }

func externalKey(orgID string) []byte {
	return []byte("sd/x/" + orgID)
}

// ExternalIDPrefix starts every AWS external id.
const ExternalIDPrefix = "pictor-"

// externalEncoding writes external ids: lower-case base32 without padding,
// within what STS accepts in an ExternalId ([\w+=,.@:/-]).
var externalEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newExternalID returns "pictor-" and 128 random bits.
func newExternalID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return ExternalIDPrefix + externalEncoding.EncodeToString(b)
}

// record is a destination as stored. Its JSON names are this package's own,
// so that the stored form does not follow storage.Connection's Go names.
type record struct {
	ID                  string     `json:"id"`
	OrgID               string     `json:"org_id"`
	Name                string     `json:"name"`
	Disabled            bool       `json:"disabled"`
	HctiStorageDisabled bool       `json:"hcti_storage_disabled"`
	Connection          connRecord `json:"connection"`
	// Secret is the secret access key sealed under the master key with
	// the destination's id as additional data.
	Secret            []byte    `json:"secret,omitempty"`
	LastTestedAt      time.Time `json:"last_tested_at"`
	LastTestSucceeded bool      `json:"last_test_succeeded"`
	LastTestError     string    `json:"last_test_error,omitempty"`
	Revision          int64     `json:"revision"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

type connRecord struct {
	Provider               storage.Provider `json:"provider"`
	Bucket                 string           `json:"bucket"`
	KeyPrefix              string           `json:"key_prefix,omitempty"`
	Region                 string           `json:"region,omitempty"`
	RoleARN                string           `json:"role_arn,omitempty"`
	CloudflareAccountID    string           `json:"cloudflare_account_id,omitempty"`
	CloudflareJurisdiction string           `json:"cloudflare_jurisdiction,omitempty"`
	Endpoint               string           `json:"endpoint,omitempty"`
	ForcePathStyle         bool             `json:"force_path_style,omitempty"`
	AccessKeyID            string           `json:"access_key_id,omitempty"`
}

func (r *record) destination() *Destination {
	c := r.Connection
	return &Destination{
		ID: r.ID, OrgID: r.OrgID, Name: r.Name, Disabled: r.Disabled, HctiStorageDisabled: r.HctiStorageDisabled,
		Connection: storage.Connection{
			Provider: c.Provider, Bucket: c.Bucket, KeyPrefix: c.KeyPrefix, Region: c.Region, RoleARN: c.RoleARN,
			CloudflareAccountID: c.CloudflareAccountID, CloudflareJurisdiction: c.CloudflareJurisdiction,
			Endpoint: c.Endpoint, ForcePathStyle: c.ForcePathStyle, AccessKeyID: c.AccessKeyID,
		},
		HasSecret:    len(r.Secret) > 0,
		LastTestedAt: r.LastTestedAt, LastTestSucceeded: r.LastTestSucceeded, LastTestError: r.LastTestError,
		Revision: r.Revision, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		sealed: r.Secret,
	}
}

func newRecord(d *Destination) *record {
	c := d.Connection
	return &record{
		ID: d.ID, OrgID: d.OrgID, Name: d.Name, Disabled: d.Disabled, HctiStorageDisabled: d.HctiStorageDisabled,
		Connection: connRecord{
			Provider: c.Provider, Bucket: c.Bucket, KeyPrefix: c.KeyPrefix, Region: c.Region, RoleARN: c.RoleARN,
			CloudflareAccountID: c.CloudflareAccountID, CloudflareJurisdiction: c.CloudflareJurisdiction,
			Endpoint: c.Endpoint, ForcePathStyle: c.ForcePathStyle, AccessKeyID: c.AccessKeyID,
		},
		Secret:       d.sealed,
		LastTestedAt: d.LastTestedAt, LastTestSucceeded: d.LastTestSucceeded, LastTestError: d.LastTestError,
		Revision: d.Revision, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
}

// Input is what a create or an update stores.
type Input struct {
	Name                string
	Disabled            bool
	HctiStorageDisabled bool
	// Connection is stored without ExternalID; its SecretAccessKey is
	// sealed, and required, when the provider takes access keys.
	Connection storage.Connection
	// Test is the connection test of this Connection; nil keeps the
	// destination's last one (an update that changes no connection
	// setting).
	Test *TestResult
}

// Store keeps storage destinations in a kv.Store, their secrets sealed.
// Every write of an organization's destinations (and its external id) is
// one kv.Update under the organization's lock, which every process
// sharing the store takes.
type Store struct {
	rs  *resource.Store[Destination]
	box *seal.Box
	now func() time.Time
	// edits serialize this process's updates of one destination from their
	// read to their write, connection test included, without holding up
	// the rest of the organization; another process's are caught by the
	// revision (Update).
	edits keyedMutex
}

// NewStore returns a Store; now may be nil for the wall clock.
func NewStore(s kv.Store, box *seal.Box, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rs: resource.NewStore(s, spec), box: box, now: now}
}

// apply sets d's fields from in, sealing the secret under d.ID.
func (s *Store) apply(d *Destination, in Input) error {
	conn := in.Connection
	secret := conn.SecretAccessKey
	conn.SecretAccessKey, conn.ExternalID = "", ""
	d.sealed, d.HasSecret = nil, false
	switch {
	case UsesAccessKeys(conn.Provider) && secret == "":
		return fmt.Errorf("storage destination %s: provider %s without a secret access key", d.ID, conn.Provider)
	case UsesAccessKeys(conn.Provider):
		d.sealed, d.HasSecret = s.box.Seal([]byte(secret), []byte(d.ID)), true
	}
	d.Name, d.Disabled, d.HctiStorageDisabled, d.Connection = in.Name, in.Disabled, in.HctiStorageDisabled, conn
	if t := in.Test; t != nil {
		d.LastTestedAt, d.LastTestSucceeded, d.LastTestError = t.At.UTC(), t.Succeeded, t.Error
	}
	return nil
}

// Create adds a destination to the organization.
func (s *Store) Create(ctx context.Context, orgID string, in Input) (*Destination, error) {
	now := s.now().UTC()
	d := &Destination{ID: uuid.Must(uuid.NewV7()).String(), OrgID: orgID, Revision: 1, CreatedAt: now, UpdatedAt: now}
	if err := s.apply(d, in); err != nil {
		return nil, err
	}
	if err := s.rs.Create(ctx, d, nil); err != nil {
		return nil, err
	}
	return d, nil
}

// Get returns the organization's destination with the id, disabled or
// not; another organization's is ErrNotFound, like a missing one. This is
// the render path's look-up (one read); Connection gives what to connect
// with.
func (s *Store) Get(ctx context.Context, orgID, id string) (*Destination, error) {
	return s.rs.Get(ctx, orgID, id)
}

// updateAttempts bounds how many times Update starts again from the
// destination as another process left it. Each new start means another
// update landed, so only a writer outside Update exhausts it.
const updateAttempts = 16

// Update replaces the destination with what change returns for it (a full
// replacement; id, creation time and, unless the Input says otherwise, the
// last test stay). change runs while no other update of the destination
// does in this process, so it may take its time (a connection test); an
// error from it is returned as is and nothing changes. When another
// process updated the destination meanwhile, change runs again on what it
// wrote, up to updateAttempts times, then the error is ErrChanged. A
// destination deleted meanwhile is ErrNotFound.
func (s *Store) Update(ctx context.Context, orgID, id string, change func(cur *Destination) (Input, error)) (*Destination, error) {
	unedit := s.edits.lock(id)
	defer unedit()
	var err error
	for range updateAttempts {
		var d *Destination
		if d, err = s.update(ctx, orgID, id, change); !errors.Is(err, ErrChanged) {
			return d, err
		}
	}
	return nil, err
}

// update is one attempt of Update.
func (s *Store) update(ctx context.Context, orgID, id string, change func(cur *Destination) (Input, error)) (*Destination, error) {
	cur, err := s.Get(ctx, orgID, id)
	if err != nil {
		return nil, err
	}
	in, err := change(cur)
	if err != nil {
		return nil, err
	}
	return s.rs.Update(ctx, orgID, id, func(_ kv.Txn, d *Destination) error {
		if d.Revision != cur.Revision {
			return fmt.Errorf("%w: revision %d, then %d", ErrChanged, cur.Revision, d.Revision)
		}
		if err := s.apply(d, in); err != nil {
			return err
		}
		d.Revision++
		d.UpdatedAt = s.now().UTC()
		return nil
	})
}

// Delete removes the destination and returns what it was. Objects already
// written to its bucket stay there.
func (s *Store) Delete(ctx context.Context, orgID, id string) (*Destination, error) {
	return s.rs.Delete(ctx, orgID, id)
}

// List returns up to count of the organization's destinations newest
// first, disabled ones included, starting after the id after ("" for the
// first page), and whether more follow.
func (s *Store) List(ctx context.Context, orgID, after string, count int) ([]*Destination, bool, error) {
	return s.rs.List(ctx, orgID, after, count, nil)
}

// ExternalID returns the organization's AWS external id, which aws_s3
// destinations' roles must require in their trust policy: made on first
// use ("pictor-" and 128 random bits), then fixed for the organization's
// life. Concurrent first calls get the same id, in every process sharing
// the store.
func (s *Store) ExternalID(ctx context.Context, orgID string) (string, error) {
	id, err := s.rs.KV().Get(ctx, externalKey(orgID))
	if err == nil {
		return string(id), nil
	}
	if !errors.Is(err, kv.ErrNotFound) {
		return "", fmt.Errorf("get external id: %w", err)
	}
	var ext string
	err = s.rs.Txn(ctx, orgID, func(txn kv.Txn) error {
		switch id, err := txn.Get(ctx, externalKey(orgID)); {
		case err == nil:
			ext = string(id)
			return nil
		case !errors.Is(err, kv.ErrNotFound):
			return err
		}
		ext = newExternalID()
		return txn.Put(externalKey(orgID), []byte(ext))
	})
	if err != nil {
		return "", fmt.Errorf("store external id: %w", err)
	}
	return ext, nil
}

// Connection returns what to connect to d's bucket with: its settings, its
// secret access key opened and, for aws_s3, the organization's external
// id. A secret sealed in an older format of the seal package, or under a
// previous master key, is stored again under the current key in the
// current format, once.
func (s *Store) Connection(d *Destination) (storage.Connection, error) {
	ctx := context.Background() // a look-up of the render path: the store bounds it
	c := d.Connection
	if len(d.sealed) > 0 {
		plain, upgraded, err := s.box.OpenUpgrade(d.sealed, []byte(d.ID))
		if err != nil {
			return storage.Connection{}, fmt.Errorf("storage destination %s: %w: %w", d.ID, ErrSecret, err)
		}
		if upgraded != nil {
			if err := s.rs.Reseal(ctx, d, sealedSecret, upgraded); err != nil {
				// The secret opened: the caller goes on, the next read retries.
				slog.Warn("storage destination secret not migrated to the current sealed format", "destination_id", d.ID, "error", err)
			}
		}
		c.SecretAccessKey = string(plain)
	}
	if c.Provider == storage.AWSS3 {
		ext, err := s.ExternalID(ctx, d.OrgID)
		if err != nil {
			return storage.Connection{}, err
		}
		c.ExternalID = ext
	}
	return c, nil
}

// keyedMutex is a mutex per key, dropped when nobody holds or waits for it.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu      sync.Mutex
	holders int // holding or waiting
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.holders++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.holders--; e.holders == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// Reseal seals again under the box's current master key every storage
// destination secret that is not (sealed under a previous key, or in an
// older format): the full pass of a master key rotation, under the lock
// every write of destinations takes (seal.Reseal); revision and
// updated_at stay.
func (s *Store) Reseal(ctx context.Context) (seal.ResealCount, error) {
	return seal.Reseal(ctx, s.rs.KV(), s.box, s.rs.SealKind(ctx, "storage destination", sealedSecret))
}
