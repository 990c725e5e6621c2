package proxy

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/pictorhq/pictor/origin/seal"
)

func box(t *testing.T, current []byte, previous ...[]byte) *seal.Box {
	t.Helper()
	b, err := seal.New(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func masterKey() []byte {
	m := make([]byte, 32)
	rand.Read(m)
	return m
}

// TestReseal: after a master key rotation, the pass seals every password
// of the old key again under the new one, while the proxies are renamed
// all along (keeping their password): no rename is lost. A password of a
// key the box does not hold fails and stays as it was; a proxy without a
// password is not counted. A second pass finds nothing to do, and a box of
// the new key alone opens every password the pass sealed again.
func TestReseal(t *testing.T) {
	db := openKV(t)
	oldKey, newKey, otherKey := masterKey(), masterKey(), masterKey()
	before := NewStore(db, box(t, oldKey), nil)
	rotated := NewStore(db, box(t, newKey, oldKey), nil)
	ctx := context.Background()
	const n = 30
	var ids []string
	names := map[string]string{} // each proxy's last name: the pass may end before every one is renamed
	for i := range n {
		p, err := before.Create(ctx, fmt.Sprint("org-", i%3), request(fmt.Sprint("proxy ", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
		names[p.ID] = p.Name
	}
	bare := request("no password")
	bare.Username, bare.Password = "", ""
	if _, err := before.Create(ctx, "org-0", bare); err != nil {
		t.Fatal(err)
	}
	foreign, err := NewStore(db, box(t, otherKey), nil).Create(ctx, "org-1", request("foreign"))
	if err != nil {
		t.Fatal(err)
	}

	stop, started := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	var renameErr error
	wg.Go(func() {
		for round := 0; ; round++ {
			for i, id := range ids {
				select {
				case <-stop:
					return
				default:
				}
				req := request(fmt.Sprintf("proxy %d round %d", i, round))
				req.Password, req.RetainPassword = "", true
				if _, err := rotated.Update(ctx, fmt.Sprint("org-", i%3), id, req); err != nil {
					renameErr = err
					return
				}
				names[id] = req.Name
				if round == 0 && i == 0 {
					close(started)
				}
			}
		}
	})
	<-started
	got, err := rotated.Reseal(ctx)
	close(stop)
	wg.Wait()
	if err != nil || renameErr != nil {
		t.Fatalf("Reseal: %v; renames: %v", err, renameErr)
	}
	if want := (seal.ResealCount{Records: n + 1, Resealed: n, Failed: 1}); got != want {
		t.Fatalf("Reseal = %+v, want %+v", got, want)
	}
	newOnly := NewStore(db, box(t, newKey), nil)
	for i, id := range ids {
		p, err := newOnly.Get(ctx, fmt.Sprint("org-", i%3), id)
		if err != nil {
			t.Fatal(err)
		}
		if p.Name != names[id] {
			t.Fatalf("proxy %d is named %q, the last rename made it %q", i, p.Name, names[id])
		}
		if _, pw, err := newOnly.Credentials(p); err != nil || pw != password {
			t.Fatalf("proxy %d under the new key alone: %q, %v", i, pw, err)
		}
	}
	p, err := newOnly.Get(ctx, "org-1", foreign.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := newOnly.Credentials(p); !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("the foreign password: %v, want seal.ErrUnknownKey", err)
	}
	if string(p.SealedPassword) != string(foreign.SealedPassword) {
		t.Fatal("the pass changed a password it could not open")
	}
	again, err := rotated.Reseal(ctx)
	if want := (seal.ResealCount{Records: n + 1, Failed: 1}); err != nil || again != want {
		t.Fatalf("second Reseal = %+v, %v; want %+v", again, err, want)
	}
}

// TestResealStopsWithContext: a canceled pass returns the context's error.
func TestResealStopsWithContext(t *testing.T) {
	db := openKV(t)
	oldKey, newKey := masterKey(), masterKey()
	if _, err := NewStore(db, box(t, oldKey), nil).Create(context.Background(), "org", request("p")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := NewStore(db, box(t, newKey, oldKey), nil).Reseal(ctx)
	if !errors.Is(err, context.Canceled) || got.Resealed != 0 {
		t.Fatalf("Reseal = %+v, %v; want nothing done and context.Canceled", got, err)
	}
}
