package ogconfig

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/plan"
)

func ptr(n int64) *int64 { return &n }

// TestEffectiveLimits: the defaults of each plan, what a configuration
// sets, and the plan's credits bounding both.
func TestEffectiveLimits(t *testing.T) {
	credits := func(name string) int64 {
		p, ok := plan.Lookup(name)
		if !ok {
			t.Fatalf("no plan %s", name)
		}
		return p.Credits
	}
	for _, tc := range []struct {
		name        string
		planCredits int64
		day, period *int64
		want        Limits
		share       int64
	}{
		// 20 % of the credits a period; a tenth of that a day, at least 10.
		{name: "free", planCredits: credits("free"), want: Limits{PerDay: 10, PerPeriod: 10}, share: 25},
		{name: "basic", planCredits: credits("basic"), want: Limits{PerDay: 20, PerPeriod: 200}, share: 500},
		{name: "pro", planCredits: credits("pro"), want: Limits{PerDay: 200, PerPeriod: 2000}, share: 5000},
		{name: "scale", planCredits: credits("scale"), want: Limits{PerDay: 2000, PerPeriod: 20000}, share: 50000},
		{name: "rounded up", planCredits: 51, want: Limits{PerDay: 10, PerPeriod: 11}, share: 25},
		{name: "period set: the day's default follows it", planCredits: 1000, period: ptr(450), want: Limits{PerDay: 45, PerPeriod: 450}, share: 500},
		{name: "small period set: at least 10 a day", planCredits: 1000, period: ptr(3), want: Limits{PerDay: 10, PerPeriod: 3}, share: 500},
		{name: "day set", planCredits: 1000, day: ptr(7), want: Limits{PerDay: 7, PerPeriod: 200}, share: 500},
		{name: "zero: only images that exist", planCredits: 1000, day: ptr(0), period: ptr(0), want: Limits{PerDay: 0, PerPeriod: 0}, share: 500},
		{name: "a plan that shrank bounds what was set", planCredits: 50, day: ptr(900), period: ptr(1000), want: Limits{PerDay: 50, PerPeriod: 50}, share: 25},
		{name: "no plan", planCredits: 0, want: Limits{}, share: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{MaxNewImagesPerDay: tc.day, MaxNewImagesPerPeriod: tc.period}
			if got := EffectiveLimits(c, tc.planCredits); got != tc.want {
				t.Fatalf("EffectiveLimits = %+v, want %+v", got, tc.want)
			}
			if got := OrgShare(tc.planCredits); got != tc.share {
				t.Fatalf("OrgShare = %d, want %d", got, tc.share)
			}
		})
	}
}

// caps is a store with a clock and an organization for the cap tests.
type caps struct {
	t     *testing.T
	db    kv.Store
	s     *Store
	clock *apitest.Clock
	org   *org.Org
}

// newCaps opens a store whose organization was created on created, on
// the plan, with the clock at now.
func newCaps(t *testing.T, planName string, created, now time.Time) *caps {
	db := openKV(t)
	clock := apitest.NewClock(now)
	return &caps{t: t, db: db, s: NewStore(db, clock.Now), clock: clock,
		org: &org.Org{ID: "org-" + planName, Plan: planName, CreatedAt: created}}
}

// config creates a configuration with caps (nil: the default).
func (c *caps) config(base string, day, period *int64) *Config {
	c.t.Helper()
	req := request(base, false)
	req.MaxNewImagesPerDay, req.MaxNewImagesPerPeriod = day, period
	cfg, err := c.s.Create(context.Background(), c.org.ID, req)
	if err != nil {
		c.t.Fatal(err)
	}
	return cfg
}

// reserve takes n reservations and fails the test unless all succeed.
func (c *caps) reserve(cfg *Config, n int) []*Reservation {
	c.t.Helper()
	var out []*Reservation
	for i := range n {
		r, err := c.s.Reserve(context.Background(), cfg, c.org, 1)
		if err != nil {
			c.t.Fatalf("reservation %d of %d: %v", i+1, n, err)
		}
		out = append(out, r)
	}
	return out
}

// refused checks that the next reservation, and Room, are refused by the
// cap until when.
func (c *caps) refused(ctx context.Context, cfg *Config, reason string, until time.Time) {
	c.t.Helper()
	for _, err := range []error{c.s.Room(ctx, cfg, c.org, 1), func() error { _, err := c.s.Reserve(context.Background(), cfg, c.org, 1); return err }()} {
		var ce *CapError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCapped) || ce.Reason != reason || !ce.Until.Equal(until) {
			c.t.Fatalf("err = %v, want %s until %s", err, reason, until)
		}
	}
}

func (c *caps) usage(ctx context.Context, cfg *Config) Usage {
	c.t.Helper()
	u, err := c.s.Usage(ctx, cfg, c.org)
	if err != nil {
		c.t.Fatal(err)
	}
	return u
}

// TestCapsDayRollover: a configuration's day cap refuses the next image
// until the next UTC day, which starts counting again; the period keeps
// counting.
func TestCapsDayRollover(t *testing.T) {
	created := time.Date(2026, 3, 10, 8, 0, 0, 0, time.UTC)
	c := newCaps(t, "pro", created, time.Date(2026, 3, 14, 23, 0, 0, 0, time.UTC))
	cfg := c.config("https://a.example", ptr(3), nil)
	if err := c.s.Room(t.Context(), cfg, c.org, 1); err != nil {
		t.Fatalf("room before any image: %v", err)
	}
	c.reserve(cfg, 3)
	c.refused(t.Context(), cfg, CapDay, time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC))
	if u := c.usage(t.Context(), cfg); u.Today != 3 || u.ThisPeriod != 3 || u.OrgShareUsed != 3 || u.PerDay != 3 || u.PerPeriod != 2000 {
		t.Fatalf("usage %+v", u)
	}
	c.clock.Advance(59 * time.Minute) // 23:59: still that day
	c.refused(t.Context(), cfg, CapDay, time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC))
	c.clock.Advance(time.Minute) // midnight UTC
	c.reserve(cfg, 3)
	c.refused(t.Context(), cfg, CapDay, time.Date(2026, 3, 16, 0, 0, 0, 0, time.UTC))
	if u := c.usage(t.Context(), cfg); u.Today != 3 || u.ThisPeriod != 6 {
		t.Fatalf("usage the next day %+v, want 3 today and 6 in the period", u)
	}
}

// TestCapsPeriodRollover: the period cap refuses until the organization's
// billing period ends (not a calendar month), then counts again, as does
// the organization's share.
func TestCapsPeriodRollover(t *testing.T) {
	created := time.Date(2026, 1, 20, 9, 30, 0, 0, time.UTC)
	c := newCaps(t, "free", created, time.Date(2026, 3, 19, 12, 0, 0, 0, time.UTC))
	cfg := c.config("https://a.example", nil, nil) // free: 10 a day, 10 a period
	c.reserve(cfg, 10)
	periodEnd := time.Date(2026, 3, 20, 9, 30, 0, 0, time.UTC)
	c.refused(t.Context(), cfg, CapPeriod, periodEnd)
	// The next day: the day has room, the period has none.
	c.clock.Advance(12*time.Hour + time.Minute)
	c.refused(t.Context(), cfg, CapPeriod, periodEnd)
	if u := c.usage(t.Context(), cfg); u.Today != 0 || u.ThisPeriod != 10 {
		t.Fatalf("usage %+v", u)
	}
	c.clock.Advance(periodEnd.Sub(c.clock.Now()))
	if u := c.usage(t.Context(), cfg); u.Today != 0 || u.ThisPeriod != 0 || u.OrgShareUsed != 0 {
		t.Fatalf("usage of the new period %+v", u)
	}
	c.reserve(cfg, 10)
	c.refused(t.Context(), cfg, CapPeriod, time.Date(2026, 4, 20, 9, 30, 0, 0, time.UTC))
}

// TestCapsRelease: a reservation given back (a creation that failed or
// charged nothing) frees its place; one of a day or period that is over
// takes nothing from the new ones; a deleted configuration's count is
// gone with it and its reservations are refused.
func TestCapsRelease(t *testing.T) {
	ctx := context.Background()
	c := newCaps(t, "pro", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	cfg := c.config("https://a.example", ptr(2), nil)
	res := c.reserve(cfg, 2)
	c.refused(ctx, cfg, CapDay, time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC))
	if err := c.s.Release(ctx, res[0]); err != nil {
		t.Fatal(err)
	}
	if u := c.usage(ctx, cfg); u.Today != 1 || u.ThisPeriod != 1 || u.OrgShareUsed != 1 {
		t.Fatalf("usage after a release %+v", u)
	}
	res = append(res[1:], c.reserve(cfg, 1)...)

	// Yesterday's reservation given back today: today's count keeps its
	// own, the period (the same) loses it.
	c.clock.Advance(24 * time.Hour)
	today := c.reserve(cfg, 1)
	if err := c.s.Release(ctx, res[0]); err != nil {
		t.Fatal(err)
	}
	if u := c.usage(ctx, cfg); u.Today != 1 || u.ThisPeriod != 2 || u.OrgShareUsed != 2 {
		t.Fatalf("usage after yesterday's release %+v, want today 1, period 2", u)
	}
	// A release never goes below zero, nor twice below what was counted.
	for range 3 {
		if err := c.s.Release(ctx, today[0]); err != nil {
			t.Fatal(err)
		}
	}
	if u := c.usage(ctx, cfg); u.Today != 0 || u.ThisPeriod != 0 || u.OrgShareUsed != 0 {
		t.Fatalf("usage after repeated releases %+v", u)
	}

	// Deleted: its count goes with it; a reservation for it is not found,
	// and giving one back writes nothing of it again.
	last := c.reserve(cfg, 1)
	if _, err := c.s.Delete(ctx, c.org.ID, cfg.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.s.Reserve(ctx, cfg, c.org, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("reservation for a deleted configuration: %v", err)
	}
	if err := c.s.Release(ctx, last[0]); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, c.db); len(got) != 1 || got[0] != "ogc/s/"+c.org.ID {
		t.Fatalf("keys after the deletion: %q, want the organization's share only", got)
	}
}

// TestCapsOrgShare: two configurations whose own caps allow more never
// spend more than half the plan's credits together; what one gives back
// the other may take.
func TestCapsOrgShare(t *testing.T) {
	ctx := context.Background()
	c := newCaps(t, "free", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	a := c.config("https://a.example", ptr(50), ptr(50))
	b := c.config("https://b.example", ptr(50), ptr(50))
	resA := c.reserve(a, 15)
	c.reserve(b, 10)
	periodEnd := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	c.refused(ctx, a, CapOrgShare, periodEnd)
	c.refused(ctx, b, CapOrgShare, periodEnd)
	// A new image of more credits than are left is refused too.
	if err := c.s.Release(ctx, resA[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.s.Reserve(ctx, b, c.org, 2); !errors.Is(err, ErrCapped) {
		t.Fatalf("2 credits with 1 left: %v", err)
	}
	c.reserve(b, 1)
	if ua, ub := c.usage(ctx, a), c.usage(ctx, b); ua.ThisPeriod != 14 || ub.ThisPeriod != 11 || ua.OrgShareUsed != 25 || ub.OrgShare != 25 {
		t.Fatalf("usage a %+v, b %+v", ua, ub)
	}
}

// TestCapsAcrossProcesses: reservations from many goroutines over two
// handles of one store (two origins) never pass a cap: exactly the cap
// succeed, and what they counted is what they took.
func TestCapsAcrossProcesses(t *testing.T) {
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) {
			dbs := tc.Pair(t)
			clock := apitest.NewClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
			stores := [2]*Store{NewStore(dbs[0], clock.Now), NewStore(dbs[1], clock.Now)}
			o := &org.Org{ID: "org-shared", Plan: "basic", CreatedAt: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)} // share 500
			var cfgs []*Config
			for i := range 3 {
				req := request(fmt.Sprintf("https://%d.example", i), false)
				req.MaxNewImagesPerDay = ptr(200) // 3 × 200 > the share
				cfg, err := stores[0].Create(context.Background(), o.ID, req)
				if err != nil {
					t.Fatal(err)
				}
				cfgs = append(cfgs, cfg)
			}
			const workers, each = 24, 40
			var mu sync.Mutex
			granted := map[string]int64{}
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := range each {
						cfg := cfgs[(w+i)%len(cfgs)]
						r, err := stores[w%2].Reserve(context.Background(), cfg, o, 1)
						if errors.Is(err, ErrCapped) {
							continue
						}
						if err != nil {
							t.Error(err)
							return
						}
						if i%5 == 0 { // a creation that failed: given back
							if err := stores[(w+1)%2].Release(context.Background(), r); err != nil {
								t.Error(err)
							}
							continue
						}
						mu.Lock()
						granted[cfg.ID]++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			var total, shareUsed int64
			for _, cfg := range cfgs {
				u, err := stores[1].Usage(t.Context(), cfg, o)
				if err != nil {
					t.Fatal(err)
				}
				if u.ThisPeriod != granted[cfg.ID] || u.Today != granted[cfg.ID] || u.ThisPeriod > 200 {
					t.Fatalf("%s counted %+v, kept %d", cfg.ID, u, granted[cfg.ID])
				}
				total += granted[cfg.ID]
				shareUsed = u.OrgShareUsed
			}
			if total != 500 || shareUsed != total {
				t.Fatalf("%d kept in all, share counted %d; want exactly the organization's share of 500", total, shareUsed)
			}
		})
	}
}
