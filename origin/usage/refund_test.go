package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin/org"
)

// dump is every usage key of o and its value, as stored.
func dump(t *testing.T, s kv.Store, o *org.Org) map[string]string {
	t.Helper()
	out := map[string]string{}
	it := s.Iterate(t.Context(), []byte("usage/"+o.ID+"/"), kv.IterOptions{})
	for it.Next() {
		out[string(it.Key())] = string(it.Value())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRefund: a refund takes credits off the period and buckets they were
// charged to (not those of the refund's own time), never below zero, and a
// charge followed by its refund leaves the store as it was.
func TestRefund(t *testing.T) {
	s, err := pebblekv.Open("db", pebblekv.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := &org.Org{ID: "o1", Plan: "free", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	apply := func(f func(txn kv.Txn) error) {
		t.Helper()
		if err := s.Update(context.Background(), Lock(o.ID), f); err != nil {
			t.Fatal(err)
		}
	}
	charge := func(at time.Time, n int64) {
		t.Helper()
		apply(func(txn kv.Txn) error { _, err := Charge(t.Context(), txn, o, at, n); return err })
	}
	refund := func(at time.Time, n int64) {
		t.Helper()
		apply(func(txn kv.Txn) error { return Refund(t.Context(), txn, o, at, n) })
	}
	report := func(now time.Time) string {
		t.Helper()
		rep, err := Read(t.Context(), s, o, now)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rep)
		return string(b)
	}

	jan := time.Date(2026, 1, 10, 12, 30, 0, 0, time.UTC)
	feb := time.Date(2026, 2, 3, 9, 0, 0, 0, time.UTC)
	empty := dump(t, s, o)
	charge(jan, 2)
	refund(jan, 2)
	if got := dump(t, s, o); len(got) != len(empty) {
		t.Fatalf("a charge and its refund left %v", got)
	}

	charge(jan, 7)
	charge(feb, 3)
	afterCharges := report(feb)
	charge(jan.Add(time.Minute), 2) // the same hour as the first charge
	// Refunded in February, the January charge comes off January.
	refund(jan.Add(time.Minute), 2)
	if got := report(feb); got != afterCharges {
		t.Fatalf("after a refund:\n%s\nwant\n%s", got, afterCharges)
	}
	if used, err := Used(t.Context(), s, o, feb); err != nil || used != 3 {
		t.Fatalf("February used %d (%v), want 3", used, err)
	}
	if used, err := Used(t.Context(), s, o, jan); err != nil || used != 7 {
		t.Fatalf("January used %d (%v), want 7", used, err)
	}
	// Never below zero, and nothing for nothing.
	refund(feb, 5)
	refund(feb, 0)
	refund(feb, -4)
	if used, err := Used(t.Context(), s, o, feb); err != nil || used != 0 {
		t.Fatalf("February used %d (%v) after refunding more than was charged, want 0", used, err)
	}
	rep, err := Read(t.Context(), s, o, feb)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rep.Data.Day["2026-02-03T00:00:00Z"]; ok {
		t.Fatalf("a bucket refunded to zero is still reported: %v", rep.Data.Day)
	}
	if rep.Data.Day["2026-01-10T00:00:00Z"] != 7 {
		t.Fatalf("January's day bucket %v, want 7", rep.Data.Day)
	}
}

// TestOweAndSettle: a refund owed is applied once, by the next Settle or
// Charge (before its allowance check), to the period it was charged in;
// owing nothing writes nothing, and two charges of one ref at two moments
// are owed apart.
func TestOweAndSettle(t *testing.T) {
	s, err := pebblekv.Open("db", pebblekv.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := &org.Org{ID: "o1", Plan: "free", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	allowed := o.PlanInfo().Credits
	jan := time.Date(2026, 1, 10, 12, 30, 0, 0, time.UTC)
	update := func(lock string, f func(txn kv.Txn) error) {
		t.Helper()
		if err := s.Update(context.Background(), lock, f); err != nil {
			t.Fatal(err)
		}
	}
	update(Lock(o.ID), func(txn kv.Txn) error { _, err := Charge(t.Context(), txn, o, jan, allowed); return err })
	// Owed under another lock (the image's), as images does.
	update("image/a", func(txn kv.Txn) error {
		return errors.Join(Owe(txn, o.ID, "a", jan, 2), Owe(txn, o.ID, "a", jan.Add(time.Second), 1), Owe(txn, o.ID, "b", jan, 0))
	})
	if got := len(dump(t, s, o)); got != 4+2 {
		t.Fatalf("%d usage keys after two refunds owed, want the 4 counters and 2 owed: %v", got, dump(t, s, o))
	}
	// The charge settles first, so the 3 credits owed make room for it.
	var used int64
	update(Lock(o.ID), func(txn kv.Txn) error {
		var err error
		used, err = Charge(t.Context(), txn, o, jan.Add(time.Hour), 3)
		return err
	})
	if used != allowed {
		t.Fatalf("used %d after settling 3 and charging 3, want %d", used, allowed)
	}
	var again int64
	update(Lock(o.ID), func(txn kv.Txn) error {
		var err error
		again, err = Settle(t.Context(), txn, o)
		return err
	})
	if again != 0 || len(dump(t, s, o)) != 5 {
		t.Fatalf("a second settle gave back %d; keys %v", again, dump(t, s, o))
	}
}

// TestChargesHammer: concurrent charges, refunds owed under other locks and
// settles under the credit lock never lose an update: what is used is what was charged minus
// what was given back, and the allowance is never passed.
func TestChargesHammer(t *testing.T) {
	s, err := pebblekv.Open("db", pebblekv.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := &org.Org{ID: "o1", Plan: "free", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	allowed := o.PlanInfo().Credits
	now := time.Date(2026, 1, 10, 12, 30, 0, 0, time.UTC)
	var mu sync.Mutex
	var charged, refunded int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				err := s.Update(context.Background(), Lock(o.ID), func(txn kv.Txn) error {
					_, err := Charge(t.Context(), txn, o, now, 1)
					return err
				})
				if errors.Is(err, ErrPlanLimit) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				charged++
				mu.Unlock()
				if i%3 != 0 {
					continue
				}
				ref := fmt.Sprintf("w%d-%d", w, i)
				if err := s.Update(context.Background(), "image/"+ref, func(txn kv.Txn) error {
					return Owe(txn, o.ID, ref, now, 1)
				}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				refunded++
				mu.Unlock()
				if i%2 == 0 { // else the next charge settles it
					if err := s.Update(context.Background(), Lock(o.ID), func(txn kv.Txn) error {
						_, err := Settle(t.Context(), txn, o)
						return err
					}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := s.Update(context.Background(), Lock(o.ID), func(txn kv.Txn) error {
		_, err := Settle(t.Context(), txn, o)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	used, err := Used(t.Context(), s, o, now)
	if err != nil {
		t.Fatal(err)
	}
	if used != charged-refunded || used > allowed || refunded == 0 || charged <= allowed {
		t.Fatalf("used %d, charged %d, refunded %d, allowed %d", used, charged, refunded, allowed)
	}
}
