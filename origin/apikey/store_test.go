package apikey

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"testing"

	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/seal"
)

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

// TestLegacySecretsMigrate stores a key whose secret is sealed the old
// way: it still authenticates and signs, and the first read stores it in
// the current format (which the raw master key no longer opens), without
// touching updated_at.
func TestLegacySecretsMigrate(t *testing.T) {
	master := make([]byte, 32)
	rand.Read(master)
	box, err := seal.New(master)
	if err != nil {
		t.Fatal(err)
	}
	db, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	orgs := org.NewStore(db, nil)
	o, err := orgs.Create("acme", "scale")
	if err != nil {
		t.Fatal(err)
	}
	keys := NewStore(db, box, orgs, nil)

	for _, tc := range []struct {
		name string
		read func(t *testing.T, k *Key, secret string)
	}{
		{"authenticate", func(t *testing.T, k *Key, secret string) {
			p, err := keys.Authenticate(context.Background(), k.APIID, secret)
			if err != nil {
				t.Fatalf("authenticate with a legacy secret: %v", err)
			}
			if p.KeyID != k.ID {
				t.Fatalf("principal key %s, want %s", p.KeyID, k.ID)
			}
		}},
		{"secret", func(t *testing.T, k *Key, secret string) {
			got, err := keys.Secret(k)
			if err != nil || got != secret {
				t.Fatalf("Secret = %q, %v; want %q", got, err, secret)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, secret, err := keys.Create(o.ID, Request{Name: tc.name}, nil)
			if err != nil {
				t.Fatal(err)
			}
			k.Secret = legacySeal(t, master, []byte(secret), []byte(k.ID))
			raw, _ := json.Marshal(k)
			if err := db.Put([]byte("key/"+k.ID), raw); err != nil {
				t.Fatal(err)
			}
			legacy := bytes.Clone(k.Secret)

			tc.read(t, k, secret)

			stored, err := keys.rs.Load(t.Context(), db, k.ID)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(stored.Secret, legacy) {
				t.Fatal("the legacy sealed secret is still stored after a read")
			}
			if rawOpens(master, stored) {
				t.Fatal("the master key itself still opens the stored secret")
			}
			if plain, up, err := box.OpenUpgrade(stored.Secret, []byte(k.ID)); err != nil || up != nil || string(plain) != secret {
				t.Fatalf("stored secret after migration: %q, upgraded again %v, %v", plain, up != nil, err)
			}
			if !stored.UpdatedAt.Equal(k.UpdatedAt) {
				t.Fatalf("updated_at changed by the migration: %v → %v", k.UpdatedAt, stored.UpdatedAt)
			}
			// Still the same secret, through every path.
			if _, err := keys.Authenticate(context.Background(), k.APIID, secret); err != nil {
				t.Fatalf("authenticate after migration: %v", err)
			}
			if _, err := keys.Authenticate(context.Background(), k.APIID, secret+"x"); err == nil {
				t.Fatal("a wrong secret authenticated after migration")
			}
		})
	}
}

// rawOpens reports whether the master key itself, as the legacy format
// used it, opens k's stored secret.
func rawOpens(master []byte, k *Key) bool {
	block, _ := aes.NewCipher(master)
	gcm, _ := cipher.NewGCM(block)
	n := gcm.NonceSize()
	if len(k.Secret) <= n {
		return false
	}
	_, err := gcm.Open(nil, k.Secret[:n], k.Secret[n:], []byte(k.ID))
	return err == nil
}

// TestPrincipal: a key's principal by id follows the key and its
// organization: unknown, disabled and suspended are the errors
// Authenticate gives.
func TestPrincipal(t *testing.T) {
	master := make([]byte, 32)
	rand.Read(master)
	box, err := seal.New(master)
	if err != nil {
		t.Fatal(err)
	}
	db, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	orgs := org.NewStore(db, nil)
	o, err := orgs.Create("acme", "pro")
	if err != nil {
		t.Fatal(err)
	}
	keys := NewStore(db, box, orgs, nil)
	k, _, err := keys.Create(o.ID, Request{Name: "connector", Grant: perm.Grant{Permissions: []perm.Permission{perm.ImagesCreate}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := keys.Principal(ctx, k.ID)
	if err != nil || p.KeyID != k.ID || p.APIID != k.APIID || p.Org.ID != o.ID || !p.Grant.Has(perm.ImagesCreate) || p.Grant.Has(perm.ImagesRead) {
		t.Fatalf("Principal = %+v, %v", p, err)
	}
	if _, err := keys.Principal(ctx, "no-such-key"); !errors.Is(err, auth.ErrInvalid) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := orgs.SetSuspended(ctx, o.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Principal(ctx, k.ID); !errors.Is(err, auth.ErrSuspended) {
		t.Fatalf("suspended organization: %v", err)
	}
	if _, err := orgs.SetSuspended(ctx, o.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Disable(context.Background(), o.ID, k.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Principal(ctx, k.ID); !errors.Is(err, auth.ErrDisabled) {
		t.Fatalf("disabled key: %v", err)
	}
}
