package proxy

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/seal"
)

const password = "Tr0ub4dor-proxy-pw"

// openKV opens a pebble store on a temporary directory.
func openKV(t *testing.T) kv.Store {
	t.Helper()
	s, err := pebblekv.Open(filepath.Join(t.TempDir(), "db"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newBox(t *testing.T) ([]byte, *seal.Box) {
	t.Helper()
	master := make([]byte, 32)
	rand.Read(master)
	box, err := seal.New(master)
	if err != nil {
		t.Fatal(err)
	}
	return master, box
}

func newStore(t *testing.T) (*Store, kv.Store, []byte) {
	t.Helper()
	db := openKV(t)
	master, box := newBox(t)
	return NewStore(db, box, nil), db, master
}

func request(name string) Request {
	return Request{Name: name, URL: "http://proxy.example.com", Port: 3128, Username: "alice", Password: password, BypassHosts: []string{}}
}

// dump returns every key and value of the store.
func dump(t *testing.T, db kv.Store) []byte {
	t.Helper()
	it := db.Iterate(t.Context(), nil, kv.IterOptions{})
	defer it.Close()
	var out bytes.Buffer
	for it.Next() {
		out.Write(it.Key())
		out.WriteByte('=')
		out.Write(it.Value())
		out.WriteByte('\n')
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// wantNoPassword fails if b holds the password in plain text, hex or
// base64 (how JSON writes bytes).
func wantNoPassword(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, form := range []string{password, hex.EncodeToString([]byte(password)), base64.StdEncoding.EncodeToString([]byte(password))} {
		if bytes.Contains(b, []byte(form)) {
			t.Fatalf("%s holds the password (%q):\n%s", what, form, b)
		}
	}
}

// TestStoreKeys: a proxy is its record and one index entry, in the
// families doc.go lists; a deletion leaves nothing.
func TestStoreKeys(t *testing.T) {
	s, db, _ := newStore(t)
	p, err := s.Create(context.Background(), "org-a", request("Office"))
	if err != nil {
		t.Fatal(err)
	}
	keys := func() []string {
		it := db.Iterate(t.Context(), []byte("prx/"), kv.IterOptions{})
		defer it.Close()
		var out []string
		for it.Next() {
			out = append(out, string(it.Key()))
		}
		return out
	}
	if got, want := keys(), []string{"prx/o/org-a/" + p.ID, "prx/p/" + p.ID}; !slices.Equal(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
	if err := s.Delete(context.Background(), "org-a", p.ID); err != nil {
		t.Fatal(err)
	}
	if got := keys(); len(got) != 0 {
		t.Fatalf("keys after the deletion: %q", got)
	}
	if _, err := s.Get(t.Context(), "org-a", p.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after the deletion: %v", err)
	}
	if err := s.Delete(context.Background(), "org-a", p.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Delete: %v", err)
	}
}

// TestStoreSealsPassword: the password is sealed at rest, bound to its
// record, and opened by Credentials only.
func TestStoreSealsPassword(t *testing.T) {
	s, db, _ := newStore(t)
	p, err := s.Create(context.Background(), "org-a", request("Office"))
	if err != nil {
		t.Fatal(err)
	}
	wantNoPassword(t, "the store", dump(t, db))
	if !p.HasPassword() {
		t.Fatal("no password stored")
	}
	got, err := s.Get(t.Context(), "org-a", p.ID)
	if err != nil {
		t.Fatal(err)
	}
	user, pw, err := s.Credentials(got)
	if err != nil || user != "alice" || pw != password {
		t.Fatalf("Credentials = %q, %q, %v", user, pw, err)
	}

	// Moved to another record, the sealed password does not open.
	other, err := s.Create(context.Background(), "org-a", Request{Name: "Other", URL: "http://other.example", Port: 80, BypassHosts: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	other.SealedPassword = p.SealedPassword
	if _, _, err := s.Credentials(other); !errors.Is(err, seal.ErrOpen) {
		t.Fatalf("a password moved to another proxy opened: %v", err)
	}
	// Without a password, Credentials gives the username alone.
	if user, pw, err := s.Credentials(&Proxy{ID: "x", Username: "bob"}); user != "bob" || pw != "" || err != nil {
		t.Fatalf("Credentials without a password = %q, %q, %v", user, pw, err)
	}
}

// TestStoreUpdatePassword: an update replaces, removes or keeps the
// password; keeping it is refused unless retainProblem allows it for the
// proxy as stored.
func TestStoreUpdatePassword(t *testing.T) {
	s, _, _ := newStore(t)
	p, err := s.Create(context.Background(), "org-a", request("Office"))
	if err != nil {
		t.Fatal(err)
	}
	retain := request("Office")
	retain.Password, retain.RetainPassword = "", true

	steps := []struct {
		name     string
		req      func() Request
		problem  string // a fragment of the *RetainError, "" when it succeeds
		password string // then the password Credentials opens
	}{
		{"keep", func() Request { return retain }, "", password},
		{"keep, renamed and disabled", func() Request {
			r := retain
			r.Name, r.Disabled, r.BypassHosts = "Renamed", true, []string{"a.example"}
			return r
		}, "", password},
		{"keep for another username", func() Request { r := retain; r.Username = "bob"; return r }, "same username", ""},
		{"keep for another host", func() Request { r := retain; r.URL = "http://evil.example"; return r }, "same url and port", ""},
		{"keep for another port", func() Request { r := retain; r.Port = 8080; return r }, "same url and port", ""},
		{"replace", func() Request { r := request("Office"); r.Password = "new-password"; return r }, "", "new-password"},
		{"remove", func() Request { r := request("Office"); r.Password = ""; return r }, "", ""},
		{"keep nothing", func() Request { return retain }, "none is stored", ""},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			before, err := s.Get(t.Context(), "org-a", p.ID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Update(context.Background(), "org-a", p.ID, step.req())
			if step.problem != "" {
				var re *RetainError
				if !errors.As(err, &re) || !errors.Is(err, ErrCannotRetain) || !strings.Contains(re.Problem, step.problem) {
					t.Fatalf("Update = %v, want a RetainError mentioning %q", err, step.problem)
				}
				after, _ := s.Get(t.Context(), "org-a", p.ID)
				if !bytes.Equal(after.SealedPassword, before.SealedPassword) || after.Name != before.Name {
					t.Fatal("a refused update changed the proxy")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if step.req().RetainPassword && !bytes.Equal(got.SealedPassword, before.SealedPassword) {
				t.Fatal("retain_password sealed the password again")
			}
			if _, pw, err := s.Credentials(got); err != nil || pw != step.password {
				t.Fatalf("password %q, %v; want %q", pw, err, step.password)
			}
		})
	}
	if _, err := s.Create(context.Background(), "org-a", retain); !errors.Is(err, ErrCannotRetain) {
		t.Fatalf("Create with retain_password: %v", err)
	}
	if _, err := s.Update(context.Background(), "org-b", p.ID, request("Office")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Update by another organization: %v", err)
	}
}

// legacySeal seals as the seal package did before it derived its
// encryption key: AES-256-GCM under the master key itself, nonce first.
func legacySeal(t *testing.T, master, plain, additional []byte) []byte {
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

// TestStoreLegacyPasswordMigrates: a password sealed the old way opens,
// and the first read stores it in the current format without touching
// updated_at.
func TestStoreLegacyPasswordMigrates(t *testing.T) {
	clock := apitest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := openKV(t)
	master, box := newBox(t)
	s := NewStore(db, box, clock.Now)
	p, err := s.Create(context.Background(), "org-a", request("Office"))
	if err != nil {
		t.Fatal(err)
	}
	p.SealedPassword = legacySeal(t, master, []byte(password), []byte(p.ID))
	legacy := bytes.Clone(p.SealedPassword)
	raw, _ := json.Marshal(p)
	if err := db.Put([]byte("prx/p/"+p.ID), raw); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)

	read, err := s.Get(t.Context(), "org-a", p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, pw, err := s.Credentials(read); err != nil || pw != password {
		t.Fatalf("Credentials of a legacy password = %q, %v", pw, err)
	}
	after, err := s.Get(t.Context(), "org-a", p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(after.SealedPassword, legacy) {
		t.Fatal("the legacy sealed password is still stored after a read")
	}
	if plain, up, err := box.OpenUpgrade(after.SealedPassword, []byte(p.ID)); err != nil || up != nil || string(plain) != password {
		t.Fatalf("stored password after migration: upgraded again %v, %v", up != nil, err)
	}
	if !after.UpdatedAt.Equal(p.UpdatedAt) {
		t.Fatalf("updated_at moved to %v", after.UpdatedAt)
	}
	if !bytes.Equal(read.SealedPassword, after.SealedPassword) {
		t.Fatal("the caller's proxy was not given the resealed password")
	}
}

// TestPasswordNeverLogged: creating, updating, opening (and failing to
// open or to migrate) a password logs nothing and returns no error that
// holds it.
func TestPasswordNeverLogged(t *testing.T) {
	logs := apitest.CaptureLogs(t)
	db := &failingKV{Store: openKV(t)}
	master, box := newBox(t)
	s := NewStore(db, box, nil)
	var errs []error
	p, err := s.Create(context.Background(), "org-a", request("Office"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(context.Background(), "org-a", p.ID, request("Office")); err != nil {
		t.Fatal(err)
	}
	retain := request("Office")
	retain.RetainPassword = true
	retain.Username = "mallory"
	_, err = s.Update(context.Background(), "org-a", p.ID, retain)
	errs = append(errs, err)

	// Opened under another master key: fails.
	_, otherBox := newBox(t)
	_, _, err = NewStore(db, otherBox, nil).Credentials(p)
	if err == nil {
		t.Fatal("another master key opened the password")
	}
	errs = append(errs, err)

	// A legacy value whose migration fails (the store refuses writes): the
	// password opens, the failure is logged without it.
	p.SealedPassword = legacySeal(t, master, []byte(password), []byte(p.ID))
	raw, _ := json.Marshal(p)
	if err := db.Put([]byte("prx/p/"+p.ID), raw); err != nil {
		t.Fatal(err)
	}
	db.failPuts.Store(true)
	_, pw, err := s.Credentials(p)
	if err != nil || pw != password {
		t.Fatalf("Credentials with a failing store = %q, %v", pw, err)
	}
	if !strings.Contains(logs.String(), "proxy password not migrated") {
		t.Fatalf("the failed migration was not logged:\n%s", logs)
	}
	var all bytes.Buffer
	for _, err := range errs {
		fmt.Fprintf(&all, "%v\n%+v\n%#v\n", err, err, err)
	}
	fmt.Fprintf(&all, "%v\n%+v\n", request("Office"), request("Office"))
	wantNoPassword(t, "the errors", all.Bytes())
	wantNoPassword(t, "the logs", []byte(logs.String()))
}

// failingKV refuses every Put once failPuts is set.
type failingKV struct {
	kv.Store
	failPuts atomic.Bool
}

func (f *failingKV) Put(key, value []byte) error {
	if f.failPuts.Load() {
		return errors.New("disk full")
	}
	return f.Store.Put(key, value)
}

func (f *failingKV) Update(ctx context.Context, lock string, fn func(kv.Txn) error) error {
	return f.Store.Update(ctx, lock, func(txn kv.Txn) error { return fn(&failingTxn{txn, f}) })
}

// failingTxn refuses every Put of an Update once failPuts is set.
type failingTxn struct {
	kv.Txn
	f *failingKV
}

func (t *failingTxn) Put(key, value []byte) error {
	if t.f.failPuts.Load() {
		return errors.New("disk full")
	}
	return t.Txn.Put(key, value)
}

// TestStoreList: newest first across pages, disabled included, one
// organization's only.
func TestStoreList(t *testing.T) {
	s, _, _ := newStore(t)
	var ids []string
	for i := range 7 {
		r := request(fmt.Sprint("proxy ", i))
		r.Disabled = i%2 == 0
		p, err := s.Create(context.Background(), "org-a", r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	if _, err := s.Create(context.Background(), "org-b", request("theirs")); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(ids)
	var walked []string
	after := ""
	for range 10 {
		page, more, err := s.List(t.Context(), "org-a", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			walked = append(walked, p.ID)
		}
		if !more {
			break
		}
		after = page[len(page)-1].ID
	}
	if !slices.Equal(walked, ids) {
		t.Fatalf("walked %q, want %q", walked, ids)
	}
	if page, more, err := s.List(t.Context(), "org-c", "", 10); err != nil || len(page) != 0 || more {
		t.Fatalf("an empty organization: %v, %v, %v", page, more, err)
	}
}

// TestStoreConcurrent: many goroutines create, update, read, open and list
// the proxies of two organizations at once over two handles of one store
// (two origins; run with -race); every write lands and every password
// opens.
func TestStoreConcurrent(t *testing.T) {
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) { storeConcurrent(t, tc.Pair(t)) })
	}
}

func storeConcurrent(t *testing.T, dbs [2]kv.Store) {
	_, box := newBox(t)
	stores := [2]*Store{NewStore(dbs[0], box, nil), NewStore(dbs[1], box, nil)}
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each*4)
	for w := range workers {
		orgID := fmt.Sprint("org-", w%2)
		s := stores[w/2%2]
		wg.Go(func() {
			for i := range each {
				r := request(fmt.Sprint("proxy ", w, " ", i))
				r.Password = Secret(fmt.Sprint("pw-", w, "-", i))
				p, err := s.Create(context.Background(), orgID, r)
				if err != nil {
					errs <- err
					return
				}
				keep := r
				keep.Password, keep.RetainPassword, keep.Name = "", true, "renamed"
				if _, err := s.Update(context.Background(), orgID, p.ID, keep); err != nil {
					errs <- err
				}
				got, err := s.Get(t.Context(), orgID, p.ID)
				if err != nil {
					errs <- err
					continue
				}
				if _, pw, err := s.Credentials(got); err != nil || pw != string(r.Password) || got.Name != "renamed" {
					errs <- fmt.Errorf("proxy %s: name %q, password opened %v, %v", p.ID, got.Name, pw == string(r.Password), err)
				}
				if _, _, err := s.List(t.Context(), orgID, "", 5); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, orgID := range []string{"org-0", "org-1"} {
		page, _, err := stores[1].List(t.Context(), orgID, "", 100)
		if err != nil || len(page) != workers/2*each {
			t.Fatalf("%s lists %d proxies, %v", orgID, len(page), err)
		}
	}
}

// sharedStores are two handles of one store, as two origins have, on each
// backend.
var sharedStores = storetest.Backends()
