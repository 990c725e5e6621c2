package usage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin/org"
)

func TestPeriodAt(t *testing.T) {
	o := &org.Org{CreatedAt: time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)}
	tests := []struct {
		name       string
		at         time.Time
		start, end string
	}{
		{"first instant", o.CreatedAt, "2026-01-31T10:00:00Z", "2026-03-03T10:00:00Z"},
		{"just before the end", time.Date(2026, 3, 3, 9, 59, 0, 0, time.UTC), "2026-01-31T10:00:00Z", "2026-03-03T10:00:00Z"},
		{"second period", time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC), "2026-03-03T10:00:00Z", "2026-03-31T10:00:00Z"},
		{"a year on", time.Date(2027, 2, 15, 0, 0, 0, 0, time.UTC), "2027-01-31T10:00:00Z", "2027-03-03T10:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := PeriodAt(o, tc.at)
			if p.Start.Format(time.RFC3339) != tc.start || p.End.Format(time.RFC3339) != tc.end {
				t.Fatalf("period %v – %v, want %s – %s", p.Start, p.End, tc.start, tc.end)
			}
			if tc.at.Before(p.Start) || !tc.at.Before(p.End) {
				t.Fatalf("%v outside its period", tc.at)
			}
		})
	}
}

func TestChargeAndRead(t *testing.T) {
	s, err := pebblekv.Open("db", pebblekv.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := &org.Org{ID: "o1", Plan: "free", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	charge := func(at time.Time, n int64) (int64, error) {
		var used int64
		err := s.Update(context.Background(), Lock(o.ID), func(txn kv.Txn) error {
			var err error
			used, err = Charge(t.Context(), txn, o, at, n)
			return err
		})
		return used, err
	}
	t0 := time.Date(2026, 1, 10, 12, 30, 0, 0, time.UTC)
	if used, err := charge(t0, 30); err != nil || used != 30 {
		t.Fatalf("charge 30: %d %v", used, err)
	}
	if used, err := charge(t0.Add(time.Hour), 20); err != nil || used != 50 {
		t.Fatalf("charge 20: %d %v", used, err)
	}
	var le *LimitError
	if _, err := charge(t0.Add(2*time.Hour), 1); !errors.As(err, &le) || le.Used != 50 || le.Allowed != 50 || !errors.Is(err, ErrPlanLimit) {
		t.Fatalf("over the limit: %v", err)
	}
	// The next billing period starts afresh.
	feb := time.Date(2026, 2, 3, 0, 0, 0, 0, time.UTC)
	if used, err := charge(feb, 5); err != nil || used != 5 {
		t.Fatalf("next period: %d %v", used, err)
	}
	rep, err := Read(t.Context(), s, o, feb.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.PerBillingPeriod) != 2 || rep.PerBillingPeriod[0].TotalImages != 50 || rep.PerBillingPeriod[0].End == nil ||
		rep.PerBillingPeriod[1].TotalImages != 5 || rep.PerBillingPeriod[1].End != nil {
		t.Fatalf("periods %+v", rep.PerBillingPeriod)
	}
	if rep.Data.Day["2026-01-10T00:00:00Z"] != 50 || rep.Data.Day["2026-02-03T00:00:00Z"] != 5 {
		t.Fatalf("days %v", rep.Data.Day)
	}
	if rep.Data.Month["2026-01-01T00:00:00Z"] != 50 || rep.Data.Month["2026-02-01T00:00:00Z"] != 5 {
		t.Fatalf("months %v", rep.Data.Month)
	}
	// Hours older than 72 are left out.
	if len(rep.Data.Hour) != 1 || rep.Data.Hour["2026-02-03T00:00:00Z"] != 5 {
		t.Fatalf("hours %v", rep.Data.Hour)
	}
}
