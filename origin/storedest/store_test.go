package storedest

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/seal"
	"github.com/pictorhq/pictor/origin/storage"
)

var master = bytes.Repeat([]byte{7}, 32)

// openKV opens a pebble store on a temporary directory.
func openKV(t *testing.T) kv.Store {
	t.Helper()
	s, err := pebblekv.Open(filepath.Join(t.TempDir(), "db"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return s
}

func newBox(t *testing.T) *seal.Box {
	t.Helper()
	box, err := seal.New(master)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

var storeEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func wasabiInput(name, secret string) Input {
	return Input{Name: name, Connection: storage.Connection{Provider: storage.Wasabi, Bucket: "renders", Region: "us-east-1",
		AccessKeyID: "AK", SecretAccessKey: secret}, Test: &TestResult{At: storeEpoch, Succeeded: true}}
}

// entries returns every key of the package with its value.
func entries(t *testing.T, db kv.Store) map[string][]byte {
	t.Helper()
	it := db.Iterate(t.Context(), []byte("sd/"), kv.IterOptions{})
	defer it.Close()
	out := map[string][]byte{}
	for it.Next() {
		out[string(it.Key())] = bytes.Clone(it.Value())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStoreKeys: a destination is its record and its index entry, in the
// families doc.go lists; the external id has a key of its own; a deletion
// leaves only that.
func TestStoreKeys(t *testing.T) {
	db := openKV(t)
	s := NewStore(db, newBox(t), apitest.NewClock(storeEpoch).Now)
	d, err := s.Create(context.Background(), "org-a", wasabiInput("one", "wasabi-secret"))
	if err != nil {
		t.Fatal(err)
	}
	ext, err := s.ExternalID(context.Background(), "org-a")
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(func(yield func(string) bool) {
		for k := range entries(t, db) {
			if !yield(k) {
				return
			}
		}
	})
	want := []string{"sd/o/org-a/" + d.ID, "sd/r/" + d.ID, "sd/x/org-a"}
	if !slices.Equal(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
	if _, err := s.Delete(context.Background(), "org-a", d.ID); err != nil {
		t.Fatal(err)
	}
	if e := entries(t, db); len(e) != 1 || string(e["sd/x/org-a"]) != ext {
		t.Fatalf("after deletion: %q", e)
	}
	if _, err := s.Get(t.Context(), "org-a", d.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after deletion: %v", err)
	}
	if _, err := s.Delete(context.Background(), "org-a", d.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second deletion: %v", err)
	}
}

// TestStoreSealsSecrets: the secret is stored sealed, bound to its record:
// Connection opens it, a copy moved to another record does not open.
func TestStoreSealsSecrets(t *testing.T) {
	db := openKV(t)
	s := NewStore(db, newBox(t), nil)
	const secret = "wasabi-secret-value-0123456789"
	a, err := s.Create(context.Background(), "org-a", wasabiInput("a", secret))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Create(context.Background(), "org-a", wasabiInput("b", "another-secret-value-987654"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range entries(t, db) {
		if bytes.Contains(v, []byte(secret)) {
			t.Fatalf("%s holds the secret in clear: %s", k, v)
		}
	}
	got, err := s.Get(t.Context(), "org-a", a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.HasSecret || got.Connection.SecretAccessKey != "" {
		t.Fatalf("stored destination %+v", got)
	}
	c, err := s.Connection(got)
	if err != nil || c.SecretAccessKey != secret || c.AccessKeyID != "AK" || c.ExternalID != "" {
		t.Fatalf("Connection = %+v, %v", c, err)
	}
	// a's sealed secret in b's record.
	moved, _ := s.Get(t.Context(), "org-a", b.ID)
	moved.sealed = got.sealed
	if _, err := s.Connection(moved); !errors.Is(err, ErrSecret) {
		t.Fatalf("a secret moved to another record opened: %v", err)
	}
	// Another master key opens nothing.
	otherBox, _ := seal.New(bytes.Repeat([]byte{8}, 32))
	if _, err := NewStore(db, otherBox, nil).Connection(got); !errors.Is(err, ErrSecret) {
		t.Fatalf("another master key: %v", err)
	}
	// A record without a secret for an access-key provider is refused.
	in := wasabiInput("c", "")
	if _, err := s.Create(context.Background(), "org-a", in); err == nil {
		t.Fatal("created a wasabi destination without a secret")
	}
}

// TestStoreAWSConnection: an aws_s3 destination stores no secret and
// connects with the organization's external id.
func TestStoreAWSConnection(t *testing.T) {
	s := NewStore(openKV(t), newBox(t), nil)
	in := Input{Name: "aws", Connection: storage.Connection{Provider: storage.AWSS3, Bucket: "renders", Region: "us-east-1",
		RoleARN: "arn:aws:iam::123456789012:role/x", ExternalID: "ignored"}}
	d, err := s.Create(context.Background(), "org-a", in)
	if err != nil {
		t.Fatal(err)
	}
	if d.HasSecret || d.Connection.ExternalID != "" {
		t.Fatalf("stored %+v", d)
	}
	c, err := s.Connection(d)
	ext, _ := s.ExternalID(context.Background(), "org-a")
	if err != nil || c.ExternalID != ext || c.RoleARN != in.Connection.RoleARN || c.SecretAccessKey != "" {
		t.Fatalf("Connection = %+v, %v (external id %s)", c, err, ext)
	}
}

// legacySeal seals as the seal package did before it derived its
// encryption key: AES-256-GCM under the master key itself, nonce first.
func legacySeal(t *testing.T, plain, additional []byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(master)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, gcm.NonceSize())
	rand.Read(nonce)
	return gcm.Seal(nonce, nonce, plain, additional)
}

// TestLegacySecretMigrates: a secret in the legacy sealed format opens,
// and the first Connection stores it in the current format without
// touching the destination's revision or updated_at.
func TestLegacySecretMigrates(t *testing.T) {
	db := openKV(t)
	s := NewStore(db, newBox(t), nil)
	d, err := s.Create(context.Background(), "org-a", wasabiInput("a", "placeholder"))
	if err != nil {
		t.Fatal(err)
	}
	d.sealed = legacySeal(t, []byte("legacy-secret"), []byte(d.ID))
	if err := s.rs.Put(db, d); err != nil {
		t.Fatal(err)
	}
	legacy := bytes.Clone(d.sealed)
	stored, _ := s.Get(t.Context(), "org-a", d.ID)
	c, err := s.Connection(stored)
	if err != nil || c.SecretAccessKey != "legacy-secret" {
		t.Fatalf("Connection = %+v, %v", c, err)
	}
	after, _ := s.Get(t.Context(), "org-a", d.ID)
	if bytes.Equal(after.sealed, legacy) {
		t.Fatal("the legacy sealed secret is still stored after a read")
	}
	if _, upgraded, err := newBox(t).OpenUpgrade(after.sealed, []byte(d.ID)); err != nil || upgraded != nil {
		t.Fatalf("the stored secret is not in the current format (upgraded %v, %v)", upgraded != nil, err)
	}
	if after.Revision != d.Revision || !after.UpdatedAt.Equal(d.UpdatedAt) {
		t.Fatalf("migration changed the destination: %+v", after)
	}
	if c, err := s.Connection(after); err != nil || c.SecretAccessKey != "legacy-secret" {
		t.Fatalf("Connection after migration = %+v, %v", c, err)
	}
}

var externalShape = regexp.MustCompile(`^pictor-[a-z2-7]{26}$`)

// TestExternalID: made once per organization, whoever asks first; the
// same from another Store on the same data; distinct per organization.
func TestExternalID(t *testing.T) {
	db := openKV(t)
	s := NewStore(db, newBox(t), nil)
	const n = 32
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id, err := s.ExternalID(context.Background(), "org-a")
			if err != nil {
				t.Error(err)
			}
			got[i] = id
		})
	}
	wg.Wait()
	for _, id := range got {
		if id != got[0] || !externalShape.MatchString(id) {
			t.Fatalf("external ids %q", got)
		}
	}
	if again, _ := NewStore(db, newBox(t), nil).ExternalID(context.Background(), "org-a"); again != got[0] {
		t.Fatalf("another store: %q, want %q", again, got[0])
	}
	if b, _ := s.ExternalID(context.Background(), "org-b"); b == got[0] || !externalShape.MatchString(b) {
		t.Fatalf("org-b's external id %q", b)
	}
}

// TestUpdate: a full replacement that keeps id, creation time and (when
// no test ran) the last test; revisions grow.
func TestUpdate(t *testing.T) {
	clock := apitest.NewClock(storeEpoch)
	s := NewStore(openKV(t), newBox(t), clock.Now)
	d, err := s.Create(context.Background(), "org-a", wasabiInput("a", "secret-one"))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	in := wasabiInput("renamed", "secret-two")
	in.Test = nil
	in.HctiStorageDisabled = true
	u, err := s.Update(context.Background(), "org-a", d.ID, func(cur *Destination) (Input, error) {
		if cur.ID != d.ID || cur.Revision != 1 {
			t.Errorf("change got %+v", cur)
		}
		return in, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != d.ID || u.Name != "renamed" || !u.HctiStorageDisabled || u.Revision != 2 || !u.CreatedAt.Equal(storeEpoch) ||
		!u.UpdatedAt.Equal(storeEpoch.Add(time.Minute)) || !u.LastTestedAt.Equal(storeEpoch) || !u.LastTestSucceeded {
		t.Fatalf("updated %+v", u)
	}
	if c, _ := s.Connection(u); c.SecretAccessKey != "secret-two" {
		t.Fatalf("secret after update %q", c.SecretAccessKey)
	}
	in.Test = &TestResult{At: storeEpoch.Add(time.Hour), Error: "denied"}
	u, _ = s.Update(context.Background(), "org-a", d.ID, func(*Destination) (Input, error) { return in, nil })
	if !u.LastTestedAt.Equal(storeEpoch.Add(time.Hour)) || u.LastTestSucceeded || u.LastTestError != "denied" {
		t.Fatalf("test result not recorded: %+v", u)
	}
	// Errors of change are returned as they are; nothing changes.
	boom := errors.New("boom")
	if _, err := s.Update(context.Background(), "org-a", d.ID, func(*Destination) (Input, error) { return Input{}, boom }); err != boom {
		t.Fatalf("err = %v", err)
	}
	if again, _ := s.Get(t.Context(), "org-a", d.ID); again.Revision != 3 {
		t.Fatalf("revision %d after a failed change", again.Revision)
	}
	// Another organization's id is not found.
	if _, err := s.Update(context.Background(), "org-b", d.ID, func(*Destination) (Input, error) { return in, nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("foreign update: %v", err)
	}
}

// TestUpdateRaces: updates of one destination run one after the other,
// each from the result of the last; one whose destination is deleted
// while it tests is ErrNotFound and does not bring it back; a write
// outside Update makes it start again from that write, and one that
// always gets in first is ErrChanged.
func TestUpdateRaces(t *testing.T) {
	s := NewStore(openKV(t), newBox(t), nil)
	d, _ := s.Create(context.Background(), "org-a", wasabiInput("a", "secret-one"))

	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	var seen []int64
	for range n {
		wg.Go(func() {
			_, err := s.Update(context.Background(), "org-a", d.ID, func(cur *Destination) (Input, error) {
				mu.Lock()
				seen = append(seen, cur.Revision)
				mu.Unlock()
				runtime.Gosched() // let the others try to update meanwhile, as during a connection test
				return wasabiInput("a", "secret-two"), nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	slices.Sort(seen)
	for i, r := range seen {
		if r != int64(i+1) {
			t.Fatalf("updates started from revisions %v", seen)
		}
	}

	_, err := s.Update(context.Background(), "org-a", d.ID, func(cur *Destination) (Input, error) {
		if _, err := s.Delete(context.Background(), "org-a", cur.ID); err != nil {
			t.Fatal(err)
		}
		return wasabiInput("a", "secret-three"), nil
	})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of a destination deleted meanwhile: %v", err)
	}
	if _, err := s.Get(t.Context(), "org-a", d.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the deleted destination came back: %v", err)
	}

	// A write of another process between the read and the write: change
	// runs again on what it wrote.
	e, _ := s.Create(context.Background(), "org-a", wasabiInput("e", "secret-one"))
	calls := 0
	u, err := s.Update(context.Background(), "org-a", e.ID, func(cur *Destination) (Input, error) {
		if calls++; calls == 1 {
			other := *cur
			other.Revision++
			if err := s.rs.Put(s.rs.KV(), &other); err != nil {
				t.Fatal(err)
			}
		}
		return wasabiInput("e", "secret-two"), nil
	})
	if err != nil || calls != 2 || u.Revision != 3 {
		t.Fatalf("update after a write outside it: %+v, %v after %d changes; want revision 3 after 2", u, err, calls)
	}
	// A writer that always gets in first: ErrChanged in the end.
	_, err = s.Update(context.Background(), "org-a", e.ID, func(cur *Destination) (Input, error) {
		other := *cur
		other.Revision++
		if err := s.rs.Put(s.rs.KV(), &other); err != nil {
			t.Fatal(err)
		}
		return wasabiInput("e", "secret-two"), nil
	})
	if !errors.Is(err, ErrChanged) {
		t.Fatalf("update always overtaken: %v", err)
	}
	if len(s.edits.m) != 0 {
		t.Fatalf("edit locks left: %d", len(s.edits.m))
	}
}

// TestList: newest first, paged, one organization's only.
func TestList(t *testing.T) {
	s := NewStore(openKV(t), newBox(t), nil)
	var ids []string
	for range 5 {
		d, err := s.Create(context.Background(), "org-a", wasabiInput("a", "secret"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	s.Create(context.Background(), "org-b", wasabiInput("b", "secret"))
	slices.Reverse(ids)
	var walked []string
	after := ""
	for {
		page, more, err := s.List(t.Context(), "org-a", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page {
			walked = append(walked, d.ID)
		}
		if !more {
			break
		}
		after = page[len(page)-1].ID
	}
	if !slices.Equal(walked, ids) {
		t.Fatalf("walked %q, want %q", walked, ids)
	}
	if page, more, _ := s.List(t.Context(), "org-a", "", 5); len(page) != 5 || more {
		t.Fatalf("a page of exactly the rest: %d, more %v", len(page), more)
	}
}

// TestTestGuard: settings the storage package cannot use are a 400 naming
// the field before any test runs; a missing external id is ours (500).
func TestTestGuard(t *testing.T) {
	h := &Handler{Store: NewStore(openKV(t), newBox(t), nil), Test: func(context.Context, storage.Connection) error {
		t.Fatal("tested")
		return nil
	}}
	for _, tc := range []struct {
		conn   storage.Connection
		status int
		path   string
	}{
		{storage.Connection{Provider: storage.Wasabi, Bucket: "renders", Region: "mars-1", AccessKeyID: "AK", SecretAccessKey: "SK"}, 400, "connection_info.region"},
		{storage.Connection{Provider: storage.CloudflareR2, Bucket: "renders", CloudflareAccountID: "x", AccessKeyID: "AK", SecretAccessKey: "SK"}, 400, "connection_info.cloudflare_account_id"},
		{storage.Connection{Provider: storage.AWSS3, Bucket: "renders", Region: "us-east-1", RoleARN: "arn:aws:iam::123456789012:role/x"}, 500, ""},
	} {
		_, err := h.test(context.Background(), "org-a", "", tc.conn, true)
		e := apierr.From(err)
		if e.Status != tc.status || (tc.path != "" && (len(e.Fields) != 1 || e.Fields[0].Path != tc.path)) {
			t.Fatalf("%+v: %v", tc.conn, err)
		}
	}
}

// sharedStores are two handles of one store, as two origins have, on each
// backend.
var sharedStores = storetest.Backends()

// TestSharedStore: two Stores on two handles of one store (two origins):
// concurrent first asks of the external id get one id; concurrent updates
// of one destination all land, each from the revision the last one wrote.
func TestSharedStore(t *testing.T) {
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) {
			dbs := tc.Pair(t)
			box := newBox(t)
			stores := [2]*Store{NewStore(dbs[0], box, nil), NewStore(dbs[1], box, nil)}
			ctx := context.Background()

			const n = 16
			ids := make([]string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					id, err := stores[i%2].ExternalID(ctx, "org-a")
					if err != nil {
						t.Error(err)
					}
					ids[i] = id
				})
			}
			wg.Wait()
			for _, id := range ids {
				if id != ids[0] || !externalShape.MatchString(id) {
					t.Fatalf("external ids %q", ids)
				}
			}

			d, err := stores[0].Create(ctx, "org-a", wasabiInput("a", "secret-one"))
			if err != nil {
				t.Fatal(err)
			}
			const updates = 8
			from := make([]int64, updates) // the revision each update's last change saw
			for i := range updates {
				wg.Go(func() {
					_, err := stores[i%2].Update(ctx, "org-a", d.ID, func(cur *Destination) (Input, error) {
						from[i] = cur.Revision
						runtime.Gosched() // as during a connection test
						return wasabiInput("a", "secret-two"), nil
					})
					if err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			slices.Sort(from)
			for i, r := range from {
				if r != int64(i+1) {
					t.Fatalf("updates wrote over revisions %v, want 1 to %d once each", from, updates)
				}
			}
			if got, err := stores[1].Get(ctx, "org-a", d.ID); err != nil || got.Revision != updates+1 {
				t.Fatalf("after %d updates: %+v, %v", updates, got, err)
			}
		})
	}
}
