package ogconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/usage"
)

// Caps on the new images of OG configurations (doc.go, "Caps on new
// images"). A new image is an OG creation that charges credits.
const (
	// DefaultPeriodPercent is a configuration's default cap per billing
	// period: this share of the plan's credits, rounded up.
	DefaultPeriodPercent = 20
	// DefaultDayDivisor and MinDefaultPerDay make the default cap per UTC
	// day: the cap per period over DefaultDayDivisor, rounded up, and at
	// least MinDefaultPerDay.
	DefaultDayDivisor = 10
	MinDefaultPerDay  = 10
	// OrgSharePercent is the most of its plan's credits an organization's
	// OG images spend together in a billing period (rounded down), whatever
	// its configurations' caps say: anonymous visitors never take the
	// rest.
	OrgSharePercent = 50
)

// Reasons a cap refuses a new image (CapError.Reason).
const (
	CapDay      = "day_cap"
	CapPeriod   = "period_cap"
	CapOrgShare = "org_share"
)

// Limits are a configuration's effective caps on new images.
type Limits struct {
	PerDay, PerPeriod int64
}

// EffectiveLimits returns c's caps under a plan of planCredits credits per
// billing period: what c sets, else the defaults (DefaultPeriodPercent of
// the credits per period; per day a tenth of that, at least
// MinDefaultPerDay), neither above the plan's credits (a plan that shrank
// since the configuration was saved bounds it again).
func EffectiveLimits(c *Config, planCredits int64) Limits {
	planCredits = max(planCredits, 0)
	period := ceilDiv(planCredits*DefaultPeriodPercent, 100)
	if c.MaxNewImagesPerPeriod != nil {
		period = *c.MaxNewImagesPerPeriod
	}
	period = min(max(period, 0), planCredits)
	day := max(ceilDiv(period, DefaultDayDivisor), MinDefaultPerDay)
	if c.MaxNewImagesPerDay != nil {
		day = *c.MaxNewImagesPerDay
	}
	day = min(max(day, 0), planCredits)
	return Limits{PerDay: day, PerPeriod: period}
}

// OrgShare returns the most credits an organization's OG images may spend
// in a billing period under a plan of planCredits credits.
func OrgShare(planCredits int64) int64 { return max(planCredits, 0) * OrgSharePercent / 100 }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// CapError is a new image a cap refuses: which cap, and when it frees up
// (the next UTC day, or the end of the billing period).
type CapError struct {
	Reason string
	Until  time.Time
}

func (e *CapError) Error() string {
	return fmt.Sprintf("%v: %s until %s", ErrCapped, e.Reason, e.Until.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrCapped) hold.
func (e *CapError) Is(target error) bool { return target == ErrCapped }

// Keys of the counts (doc.go): one record per configuration and one per
// organization, each holding only its current day and billing period, so
// that they never grow. Both are written under the organization's lock
// (og-config/<org_id>), as the configurations are: a deletion removes its count
// atomically with it.
func countKey(id string) []byte     { return []byte("ogc/n/" + id) }
func shareKey(orgID string) []byte  { return []byte("ogc/s/" + orgID) }
func dayOf(t time.Time) string      { return t.UTC().Format(time.DateOnly) }
func nextDay(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour) }

// newImages is a configuration's count of new images.
type newImages struct {
	Day        string    `json:"day"` // UTC, 2006-01-02
	Today      int64     `json:"today"`
	Period     time.Time `json:"period"` // start of the billing period counted
	ThisPeriod int64     `json:"this_period"`
}

// share is the credits an organization's OG images spent in a billing
// period.
type share struct {
	Period  time.Time `json:"period"`
	Credits int64     `json:"credits"`
}

// getJSON reads a JSON record; found is false when there is none.
func getJSON(ctx context.Context, r kv.Reader, key []byte, v any) (found bool, err error) {
	raw, err := r.Get(ctx, key)
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("decode %s: %w", key, err)
	}
	return true, nil
}

func putJSON(w kv.Writer, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.Put(key, raw)
}

// tally is what the caps counted at a moment: the configuration's count
// and its organization's share, with whatever belongs to an earlier day or
// period dropped.
type tally struct {
	now    time.Time
	period usage.Period
	count  newImages
	share  share
}

func readTally(ctx context.Context, r kv.Reader, c *Config, o *org.Org, now time.Time) (*tally, error) {
	t := &tally{now: now.UTC(), period: usage.PeriodAt(o, now)}
	if _, err := getJSON(ctx, r, countKey(c.ID), &t.count); err != nil {
		return nil, err
	}
	if _, err := getJSON(ctx, r, shareKey(o.ID), &t.share); err != nil {
		return nil, err
	}
	if day := dayOf(now); t.count.Day != day {
		t.count.Day, t.count.Today = day, 0
	}
	if !t.count.Period.Equal(t.period.Start) {
		t.count.Period, t.count.ThisPeriod = t.period.Start, 0
	}
	if !t.share.Period.Equal(t.period.Start) {
		t.share.Period, t.share.Credits = t.period.Start, 0
	}
	return t, nil
}

// refusal is the cap a new image of credits would pass, nil when none:
// the period's first (it frees up last), then the day's, then the
// organization's share.
func (t *tally) refusal(c *Config, o *org.Org, credits int64) error {
	planCredits := o.PlanInfo().Credits
	lim := EffectiveLimits(c, planCredits)
	switch {
	case t.count.ThisPeriod+1 > lim.PerPeriod:
		return &CapError{Reason: CapPeriod, Until: t.period.End}
	case t.count.Today+1 > lim.PerDay:
		return &CapError{Reason: CapDay, Until: nextDay(t.now)}
	case t.share.Credits+credits > OrgShare(planCredits):
		return &CapError{Reason: CapOrgShare, Until: t.period.End}
	}
	return nil
}

// Room reports whether the caps leave room now for a new image of c that
// costs credits: nil, or a *CapError. It reads what is committed and takes
// nothing (Reserve decides); the serving path asks it before reading a
// page, so that a spent cap costs a visitor's request no page read.
func (s *Store) Room(ctx context.Context, c *Config, o *org.Org, credits int64) error {
	t, err := readTally(ctx, s.rs.KV(), c, o, s.now())
	if err != nil {
		return err
	}
	return t.refusal(c, o, credits)
}

// Reservation is a new image counted against the caps; Release gives it
// back.
type Reservation struct {
	configID, orgID string
	day             string
	period          time.Time
	credits         int64
}

// Reserve counts a new image of c that costs credits against c's caps and
// its organization's share, or refuses it with a *CapError; a
// configuration deleted meanwhile is ErrNotFound. It is one kv.Update
// under the organization's lock, so caps hold exactly across the origins
// sharing the store. Reserve before creating the image; Release when the
// creation fails or charges nothing (the image existed).
func (s *Store) Reserve(ctx context.Context, c *Config, o *org.Org, credits int64) (*Reservation, error) {
	var res *Reservation
	err := s.rs.Txn(ctx, o.ID, func(txn kv.Txn) error {
		if _, err := txn.Get(ctx, s.rs.RecordKey(c.ID)); errors.Is(err, kv.ErrNotFound) {
			return ErrNotFound
		} else if err != nil {
			return fmt.Errorf("read OG configuration %s: %w", c.ID, err)
		}
		t, err := readTally(ctx, txn, c, o, s.now())
		if err != nil {
			return err
		}
		if err := t.refusal(c, o, credits); err != nil {
			return err
		}
		t.count.Today++
		t.count.ThisPeriod++
		t.share.Credits += credits
		if err := errors.Join(putJSON(txn, countKey(c.ID), t.count), putJSON(txn, shareKey(o.ID), t.share)); err != nil {
			return fmt.Errorf("count a new OG image of %s: %w", c.ID, err)
		}
		res = &Reservation{configID: c.ID, orgID: o.ID, day: t.count.Day, period: t.period.Start, credits: credits}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Release gives a reservation back: its configuration's day and period
// counts and its organization's share lose it, unless that day or period
// is over (its counts are gone) or the configuration was deleted.
func (s *Store) Release(ctx context.Context, r *Reservation) error {
	err := s.rs.Txn(ctx, r.orgID, func(txn kv.Txn) error {
		var count newImages
		found, err := getJSON(ctx, txn, countKey(r.configID), &count)
		if err != nil {
			return err
		}
		if found {
			if count.Day == r.day {
				count.Today = max(count.Today-1, 0)
			}
			if count.Period.Equal(r.period) {
				count.ThisPeriod = max(count.ThisPeriod-1, 0)
			}
			if err := putJSON(txn, countKey(r.configID), count); err != nil {
				return err
			}
		}
		var sh share
		found, err = getJSON(ctx, txn, shareKey(r.orgID), &sh)
		if err != nil || !found || !sh.Period.Equal(r.period) {
			return err
		}
		sh.Credits = max(sh.Credits-r.credits, 0)
		return putJSON(txn, shareKey(r.orgID), sh)
	})
	if err != nil {
		return fmt.Errorf("give back a new OG image of %s: %w", r.configID, err)
	}
	return nil
}

// Usage is a configuration's caps and counts now.
type Usage struct {
	Limits
	// Today and ThisPeriod are the new images of the configuration in
	// the current UTC day and billing period.
	Today, ThisPeriod int64
	// OrgShare is what the organization's OG images may spend in a
	// billing period, OrgShareUsed what they spent in this one.
	OrgShare, OrgShareUsed int64
}

// Usage returns c's effective caps and what was counted against them now.
func (s *Store) Usage(ctx context.Context, c *Config, o *org.Org) (Usage, error) {
	t, err := readTally(ctx, s.rs.KV(), c, o, s.now())
	if err != nil {
		return Usage{}, err
	}
	planCredits := o.PlanInfo().Credits
	return Usage{Limits: EffectiveLimits(c, planCredits), Today: t.count.Today, ThisPeriod: t.count.ThisPeriod,
		OrgShare: OrgShare(planCredits), OrgShareUsed: t.share.Credits}, nil
}
