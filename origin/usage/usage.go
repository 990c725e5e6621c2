package usage

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/org"
)

// LimitError carries the figures of a refused charge.
type LimitError struct {
	Used, Allowed, Wanted int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("you've used %d of your %d image credits for this billing period; this request needs %d", e.Used, e.Allowed, e.Wanted)
}

func (e *LimitError) Unwrap() error { return ErrPlanLimit }

// Bucket sizes kept for GET /v1/usage.
const (
	Hours  = 72
	Days   = 60
	Months = 12
)

// Period is one billing period: monthly from the organization's creation.
type Period struct {
	Start, End time.Time
}

// PeriodAt returns the billing period of o that contains t.
func PeriodAt(o *org.Org, t time.Time) Period {
	created := o.CreatedAt.UTC()
	t = t.UTC()
	months := (t.Year()-created.Year())*12 + int(t.Month()-created.Month())
	if months < 0 {
		months = 0
	}
	// AddDate normalizes (Jan 31 + 1 month is Mar 3), so step back until the
	// period starts at or before t.
	start := created.AddDate(0, months, 0)
	for months > 0 && start.After(t) {
		months--
		start = created.AddDate(0, months, 0)
	}
	return Period{Start: start, End: created.AddDate(0, months+1, 0)}
}

// Keys:
//
//	usage/<org_id>/period/<unix start, 8 bytes big-endian>   credits used (uint64)
//	usage/<org_id>/hour/<2006-01-02T15>                     credits used
//	usage/<org_id>/day/<2006-01-02>                         credits used
//	usage/<org_id>/month/<2006-01>                          credits used
//	usage/<org_id>/owed/<ref>/<charged at, unix ns, hex>     refund owed, not yet applied (JSON; see Owe)
func periodKey(orgID string, start time.Time) []byte {
	k := []byte("usage/" + orgID + "/period/")
	return binary.BigEndian.AppendUint64(k, uint64(start.Unix()))
}

func bucketKey(orgID, kind, label string) []byte {
	return []byte("usage/" + orgID + "/" + kind + "/" + label)
}

func read(ctx context.Context, r kv.Reader, key []byte) (int64, error) {
	v, err := r.Get(ctx, key)
	if errors.Is(err, kv.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("usage counter %q is corrupt", key)
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

func encode(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// Used returns the credits o used in the period containing now.
func Used(ctx context.Context, r kv.Reader, o *org.Org, now time.Time) (int64, error) {
	return read(ctx, r, periodKey(o.ID, PeriodAt(o, now).Start))
}

// Charge adds credits to o's period and buckets in txn, after settling
// the refunds o is owed (Owe) and checking the allowance. txn is an
// Update holding the organization's credit lock (Lock), so that concurrent
// charges, in this process or another, see each other. It returns the
// credits used after the charge.
func Charge(ctx context.Context, txn kv.Txn, o *org.Org, now time.Time, credits int64) (int64, error) {
	if _, err := Settle(ctx, txn, o); err != nil {
		return 0, err
	}
	allowed := o.PlanInfo().Credits
	pk := periodKey(o.ID, PeriodAt(o, now).Start)
	used, err := read(ctx, txn, pk)
	if err != nil {
		return 0, err
	}
	if credits == 0 {
		return used, nil
	}
	if used+credits > allowed {
		return used, &LimitError{Used: used, Allowed: allowed, Wanted: credits}
	}
	now = now.UTC()
	for _, k := range [][]byte{
		bucketKey(o.ID, "hour", now.Format("2006-01-02T15")),
		bucketKey(o.ID, "day", now.Format("2006-01-02")),
		bucketKey(o.ID, "month", now.Format("2006-01")),
	} {
		n, err := read(ctx, txn, k)
		if err != nil {
			return 0, err
		}
		if err := txn.Put(k, encode(n+credits)); err != nil {
			return 0, err
		}
	}
	if err := txn.Put(pk, encode(used+credits)); err != nil {
		return 0, err
	}
	return used + credits, nil
}

// Lock is the name of the Update lock that guards o's usage counters
// (kv.Store.Update): Charge, Refund and Settle run under it.
func Lock(orgID string) string { return "credits/" + orgID }

// Refund gives back credits that Charge added at chargedAt: it takes them
// off that moment's period and its hour, day and month buckets in txn. A
// counter it brings to zero is removed, so a charge and its refund leave
// the store as it was. txn holds the organization's credit lock (Lock),
// as for Charge.
func Refund(ctx context.Context, txn kv.Txn, o *org.Org, chargedAt time.Time, credits int64) error {
	if credits <= 0 {
		return nil
	}
	chargedAt = chargedAt.UTC()
	for _, k := range [][]byte{
		periodKey(o.ID, PeriodAt(o, chargedAt).Start),
		bucketKey(o.ID, "hour", chargedAt.Format("2006-01-02T15")),
		bucketKey(o.ID, "day", chargedAt.Format("2006-01-02")),
		bucketKey(o.ID, "month", chargedAt.Format("2006-01")),
	} {
		n, err := read(ctx, txn, k)
		if err != nil {
			return err
		}
		if n <= credits {
			err = txn.Delete(k)
		} else {
			err = txn.Put(k, encode(n-credits))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// owedKey names a refund owed for the charge of ref (an image id) made at
// chargedAt.
func owedKey(orgID, ref string, chargedAt time.Time) []byte {
	return []byte(fmt.Sprintf("usage/%s/owed/%s/%016x", orgID, ref, uint64(chargedAt.UnixNano())))
}

// owed is the value of an owed refund.
type owed struct {
	Credits   int64     `json:"credits"`
	ChargedAt time.Time `json:"charged_at"`
}

// Owe records in w that the charge of credits made at chargedAt for ref
// (an image id) is to be given back. It needs no credit lock: it is
// written with what decides the refund (under the lock of ref), and the
// next Settle of the organization (Charge settles first) applies it
// exactly once. A charge and its refund are therefore two transactions
// under two locks that never nest, and no charge ever sees the refund
// decided but not applied.
func Owe(w kv.Writer, orgID, ref string, chargedAt time.Time, credits int64) error {
	if credits <= 0 {
		return nil
	}
	raw, err := json.Marshal(owed{Credits: credits, ChargedAt: chargedAt.UTC()})
	if err != nil {
		return err
	}
	return w.Put(owedKey(orgID, ref, chargedAt), raw)
}

// Settle applies the refunds o is owed (Owe) in txn, which holds o's
// credit lock (Lock), and removes them. It returns the credits given back.
func Settle(ctx context.Context, txn kv.Txn, o *org.Org) (int64, error) {
	prefix := []byte("usage/" + o.ID + "/owed/")
	type due struct {
		key []byte
		owed
	}
	var dues []due
	it := txn.Iterate(ctx, prefix, kv.IterOptions{})
	for it.Next() {
		var d due
		if err := json.Unmarshal(it.Value(), &d.owed); err != nil {
			it.Close()
			return 0, fmt.Errorf("owed refund %q: %w", it.Key(), err)
		}
		d.key = bytes.Clone(it.Key())
		dues = append(dues, d)
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return 0, err
	}
	var total int64
	for _, d := range dues {
		if err := Refund(ctx, txn, o, d.ChargedAt, d.Credits); err != nil {
			return 0, err
		}
		if err := txn.Delete(d.key); err != nil {
			return 0, err
		}
		total += d.Credits
	}
	return total, nil
}

// Report is the body of GET /v1/usage.
type Report struct {
	Data             Buckets        `json:"data"`
	PerBillingPeriod []PeriodReport `json:"per_billing_period"`
}

// Buckets map RFC 3339 bucket starts to credits used.
type Buckets struct {
	Hour  map[string]int64 `json:"hour"`
	Day   map[string]int64 `json:"day"`
	Month map[string]int64 `json:"month"`
}

// PeriodReport is one billing period; End is null for the current one.
type PeriodReport struct {
	TotalImages int64   `json:"total_images"`
	Start       string  `json:"start"`
	End         *string `json:"end"`
}

// Read builds the report of o as of now: the last 72 hours, 60 days and 12
// months that have usage, and every billing period oldest first.
func Read(ctx context.Context, r kv.Reader, o *org.Org, now time.Time) (*Report, error) {
	now = now.UTC()
	rep := &Report{Data: Buckets{Hour: map[string]int64{}, Day: map[string]int64{}, Month: map[string]int64{}}}
	windows := []struct {
		kind, layout string
		into         map[string]int64
		since        time.Time
	}{
		{"hour", "2006-01-02T15", rep.Data.Hour, now.Truncate(time.Hour).Add(-(Hours - 1) * time.Hour)},
		{"day", "2006-01-02", rep.Data.Day, time.Date(now.Year(), now.Month(), now.Day()-(Days-1), 0, 0, 0, 0, time.UTC)},
		{"month", "2006-01", rep.Data.Month, time.Date(now.Year(), now.Month()-(Months-1), 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, w := range windows {
		prefix := bucketKey(o.ID, w.kind, "")
		it := r.Iterate(ctx, prefix, kv.IterOptions{})
		for it.Next() {
			label := string(it.Key()[len(prefix):])
			start, err := time.Parse(w.layout, label)
			if err != nil || start.Before(w.since) || start.After(now) {
				continue
			}
			if len(it.Value()) == 8 {
				w.into[start.Format(time.RFC3339)] = int64(binary.BigEndian.Uint64(it.Value()))
			}
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	current := PeriodAt(o, now)
	used := map[int64]int64{}
	prefix := []byte("usage/" + o.ID + "/period/")
	it := r.Iterate(ctx, prefix, kv.IterOptions{})
	for it.Next() {
		k := it.Key()[len(prefix):]
		if len(k) == 8 && len(it.Value()) == 8 {
			used[int64(binary.BigEndian.Uint64(k))] = int64(binary.BigEndian.Uint64(it.Value()))
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	for p := PeriodAt(o, o.CreatedAt); !p.Start.After(current.Start); p = PeriodAt(o, p.End) {
		pr := PeriodReport{TotalImages: used[p.Start.Unix()], Start: p.Start.Format(time.RFC3339)}
		if p.Start.Before(current.Start) {
			end := p.End.Format(time.RFC3339)
			pr.End = &end
		}
		rep.PerBillingPeriod = append(rep.PerBillingPeriod, pr)
	}
	sort.SliceStable(rep.PerBillingPeriod, func(i, j int) bool {
		return strings.Compare(rep.PerBillingPeriod[i].Start, rep.PerBillingPeriod[j].Start) < 0
	})
	return rep, nil
}
