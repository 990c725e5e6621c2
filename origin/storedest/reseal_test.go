package storedest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/seal"
	"github.com/pictorhq/pictor/origin/storage"
)

// TestReseal: after a master key rotation, the pass seals every secret of
// the old key again under the new one, revision and updated_at unchanged,
// while the destinations are renamed all along: no rename is lost. A
// secret of a key the box does not hold fails and stays as it was; an
// aws_s3 destination (no secret) is not counted. A second pass finds
// nothing to do; the new key alone opens every secret.
func TestReseal(t *testing.T) {
	db := openKV(t)
	oldKey, newKey, otherKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
	mustBox := func(current []byte, previous ...[]byte) *seal.Box {
		b, err := seal.New(current, previous...)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	clock := apitest.NewClock(storeEpoch)
	before := NewStore(db, mustBox(oldKey), clock.Now)
	rotated := NewStore(db, mustBox(newKey, oldKey), clock.Now)
	ctx := context.Background()
	const n = 20
	var made []*Destination
	for i := range n {
		d, err := before.Create(ctx, fmt.Sprint("org-", i%2), wasabiInput(fmt.Sprint("dest ", i), fmt.Sprint("secret-", i)))
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, d)
	}
	aws := Input{Name: "aws", Connection: storage.Connection{Provider: storage.AWSS3, Bucket: "renders", Region: "us-east-1",
		RoleARN: "arn:aws:iam::123456789012:role/x"}}
	if _, err := before.Create(ctx, "org-0", aws); err != nil {
		t.Fatal(err)
	}
	foreign, err := NewStore(db, mustBox(otherKey), clock.Now).Create(ctx, "org-1", wasabiInput("foreign", "foreign-secret"))
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(1)

	// Renames, through a store of the old key alone: they keep the
	// secret as stored, so the pass has every one to seal again.
	renamer := NewStore(db, mustBox(oldKey), clock.Now)
	names := map[string]string{} // each destination's last name: the pass may end before every one is renamed
	for _, d := range made {
		names[d.ID] = d.Name
	}
	stop, started := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	var renameErr error
	wg.Go(func() {
		for round := 0; ; round++ {
			for i, d := range made {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("dest %d round %d", i, round)
				err := renamer.rs.Txn(ctx, d.OrgID, func(txn kv.Txn) error {
					cur, err := renamer.rs.Load(ctx, txn, d.ID)
					if err != nil {
						return err
					}
					cur.Name = name
					return renamer.rs.Put(txn, cur)
				})
				if err != nil {
					renameErr = err
					return
				}
				names[d.ID] = name
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
	newOnly := NewStore(db, mustBox(newKey), clock.Now)
	for i, d := range made {
		cur, err := newOnly.Get(ctx, d.OrgID, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.Name != names[d.ID] || cur.Revision != d.Revision || !cur.UpdatedAt.Equal(d.UpdatedAt) {
			t.Fatalf("destination %d: name %q revision %d updated %v; want %q, %d, %v", i, cur.Name, cur.Revision, cur.UpdatedAt, names[d.ID], d.Revision, d.UpdatedAt)
		}
		if c, err := newOnly.Connection(cur); err != nil || c.SecretAccessKey != fmt.Sprint("secret-", i) {
			t.Fatalf("destination %d under the new key alone: %v", i, err)
		}
	}
	f, err := newOnly.Get(ctx, "org-1", foreign.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newOnly.Connection(f); !errors.Is(err, ErrSecret) || !errors.Is(err, seal.ErrUnknownKey) {
		t.Fatalf("the foreign secret: %v, want ErrSecret and seal.ErrUnknownKey", err)
	}
	if !bytes.Equal(f.sealed, foreign.sealed) {
		t.Fatal("the pass changed a secret it could not open")
	}
	again, err := rotated.Reseal(ctx)
	if want := (seal.ResealCount{Records: n + 1, Failed: 1}); err != nil || again != want {
		t.Fatalf("second Reseal = %+v, %v; want %+v", again, err, want)
	}
}
