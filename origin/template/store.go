package template

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/resource"
)

// Template is a template's record; its content lives in its versions.
type Template struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"org_id"`
	Latest    int       `json:"latest"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Version is one saved version of a template.
type Version struct {
	TemplateID  string          `json:"template_id"`
	Version     int             `json:"version"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	HTML        string          `json:"html"`
	CSS         string          `json:"css"`
	Defaults    json.RawMessage `json:"defaults"` // render defaults, a JSON object of creation parameters
	RenderCount int64           `json:"render_count"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

// Keys:
//
//	tpl/<template_id>                          Template
//	tpl-ver/<template_id>/<version, 8 bytes>   Version
//	org-tpl/<org_id>/<template_id>             empty: an organization's templates in creation order
func verPrefix(id string) []byte { return []byte("tpl-ver/" + id + "/") }
func verKey(id string, v int) []byte {
	return binary.BigEndian.AppendUint64(verPrefix(id), uint64(v))
}

// spec is the templates' records: created under their organization's
// lock (template/org/<org_id>), changed under their own (tplLock).
var spec = resource.Spec[Template]{
	Name: "template", Record: "tpl/", Org: "org-tpl/", Lock: "template/org/",
	NotFound: ErrNotFound,
	ID:       func(t *Template) string { return t.ID },
	OrgID:    func(t *Template) string { return t.OrgID },
}

// Store keeps templates. Each write is one kv.Update: an organization's
// creations under its lock (the plan's limit counts what every process
// sharing the store made), a template's changes under the template's.
type Store struct {
	rs  *resource.Store[Template]
	kv  kv.Store
	now func() time.Time
}

// NewStore returns a Store; now may be nil for the wall clock.
func NewStore(s kv.Store, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rs: resource.NewStore(s, spec), kv: s, now: now}
}

// tplLock guards the changes of one template.
func tplLock(id string) string { return "template/" + id }

func getJSON(ctx context.Context, r kv.Reader, key []byte, v any) error {
	raw, err := r.Get(ctx, key)
	if errors.Is(err, kv.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

func putJSON(b kv.Writer, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, raw)
}

// Create saves a new template with its first version, within the
// organization's template limit.
func (s *Store) Create(ctx context.Context, orgID string, limit int, v Version) (*Template, *Version, error) {
	now := s.now().UTC()
	t := &Template{ID: "t-" + uuid.Must(uuid.NewV7()).String(), OrgID: orgID, Latest: 1, CreatedAt: now, UpdatedAt: now}
	v.TemplateID, v.Version, v.CreatedAt, v.UpdatedAt, v.RenderCount = t.ID, 1, now, now, 0
	within := s.rs.Limit(ctx, orgID, limit, ErrLimit)
	err := s.rs.Create(ctx, t, func(txn kv.Txn) error {
		if err := within(txn); err != nil {
			return err
		}
		return putJSON(txn, verKey(t.ID, 1), &v)
	})
	if err != nil {
		return nil, nil, err
	}
	return t, &v, nil
}

// Get returns the organization's template; another organization's is
// ErrNotFound.
func (s *Store) Get(ctx context.Context, orgID, id string) (*Template, error) {
	return s.rs.Get(ctx, orgID, id)
}

// Version returns one version (0: the latest) of the organization's template.
func (s *Store) Version(ctx context.Context, orgID, id string, version int) (*Template, *Version, error) {
	return s.getVersion(ctx, s.kv, orgID, id, version)
}

func (s *Store) getVersion(ctx context.Context, r kv.Reader, orgID, id string, version int) (*Template, *Version, error) {
	t, err := s.rs.GetIn(ctx, r, orgID, id)
	if err != nil {
		return nil, nil, err
	}
	if version == 0 {
		version = t.Latest
	}
	var v Version
	if err := getJSON(ctx, r, verKey(id, version), &v); err != nil {
		return nil, nil, err
	}
	return t, &v, nil
}

// Update saves v as a new version, or replaces the latest version when no
// image was rendered from it yet.
func (s *Store) Update(ctx context.Context, orgID, id string, v Version) (*Version, error) {
	err := s.kv.Update(ctx, tplLock(id), func(txn kv.Txn) error {
		t, latest, err := s.getVersion(ctx, txn, orgID, id, 0)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		v.TemplateID, v.UpdatedAt = id, now
		if latest.RenderCount == 0 {
			v.Version, v.CreatedAt = latest.Version, latest.CreatedAt
		} else {
			v.Version, v.CreatedAt = t.Latest+1, now
		}
		t.Latest, t.UpdatedAt = v.Version, now
		return errors.Join(s.rs.Put(txn, t), putJSON(txn, verKey(id, v.Version), &v))
	})
	if errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("store template version: %w", err)
	}
	return &v, nil
}

// CountRenders adds n to a version's render count.
func (s *Store) CountRenders(ctx context.Context, id string, version int, n int64) error {
	ctx = context.WithoutCancel(ctx) // a render made is counted
	return s.kv.Update(ctx, tplLock(id), func(txn kv.Txn) error {
		var v Version
		if err := getJSON(ctx, txn, verKey(id, version), &v); err != nil {
			return err
		}
		v.RenderCount += n
		return putJSON(txn, verKey(id, version), &v)
	})
}

// Delete removes the template and all its versions.
func (s *Store) Delete(ctx context.Context, orgID, id string) error {
	return s.kv.Update(ctx, tplLock(id), func(txn kv.Txn) error {
		if _, err := s.rs.GetIn(ctx, txn, orgID, id); err != nil {
			return err
		}
		var keys [][]byte
		it := txn.Iterate(ctx, verPrefix(id), kv.IterOptions{})
		for it.Next() {
			keys = append(keys, bytes.Clone(it.Key()))
		}
		if err := it.Close(); err != nil {
			return err
		}
		err := errors.Join(txn.Delete(s.rs.RecordKey(id)), txn.Delete(s.rs.OrgKey(orgID, id)))
		for _, k := range keys {
			err = errors.Join(err, txn.Delete(k))
		}
		return err
	})
}

// List returns up to count of the organization's templates (latest
// versions) newest first, after the template id after, and whether more follow.
func (s *Store) List(ctx context.Context, orgID, after string, count int) ([]*Version, bool, error) {
	opts := kv.IterOptions{Reverse: true}
	if after != "" {
		opts.After = s.rs.OrgKey(orgID, after)
	}
	prefix := s.rs.OrgPrefix(orgID)
	it := s.kv.Iterate(ctx, prefix, opts)
	defer it.Close()
	var out []*Version
	for it.Next() {
		if len(out) == count {
			return out, true, nil
		}
		id := string(it.Key()[len(prefix):])
		_, v, err := s.Version(ctx, orgID, id, 0)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		out = append(out, v)
	}
	return out, false, it.Err()
}

// Versions returns every version of the template, newest first.
func (s *Store) Versions(ctx context.Context, orgID, id string) ([]*Version, error) {
	if _, err := s.Get(ctx, orgID, id); err != nil {
		return nil, err
	}
	it := s.kv.Iterate(ctx, verPrefix(id), kv.IterOptions{Reverse: true})
	defer it.Close()
	var out []*Version
	for it.Next() {
		var v Version
		if err := json.Unmarshal(it.Value(), &v); err != nil {
			return nil, err
		}
		out = append(out, &v)
	}
	return out, it.Err()
}
