package usage

import (
	"encoding/json"
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
	it := s.Iterate([]byte("usage/"+o.ID+"/"), kv.IterOptions{})
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
	apply := func(f func(b kv.Batch) error) {
		t.Helper()
		b := s.NewBatch()
		defer b.Close()
		if err := f(b); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	charge := func(at time.Time, n int64) {
		t.Helper()
		apply(func(b kv.Batch) error { _, err := Charge(s, b, o, at, n); return err })
	}
	refund := func(at time.Time, n int64) {
		t.Helper()
		apply(func(b kv.Batch) error { return Refund(s, b, o, at, n) })
	}
	report := func(now time.Time) string {
		t.Helper()
		rep, err := Read(s, o, now)
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
	if used, err := Used(s, o, feb); err != nil || used != 3 {
		t.Fatalf("February used %d (%v), want 3", used, err)
	}
	if used, err := Used(s, o, jan); err != nil || used != 7 {
		t.Fatalf("January used %d (%v), want 7", used, err)
	}
	// Never below zero, and nothing for nothing.
	refund(feb, 5)
	refund(feb, 0)
	refund(feb, -4)
	if used, err := Used(s, o, feb); err != nil || used != 0 {
		t.Fatalf("February used %d (%v) after refunding more than was charged, want 0", used, err)
	}
	rep, err := Read(s, o, feb)
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
