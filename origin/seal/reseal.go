package seal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/pictorhq/pictor/kv"
)

// ResealCount is what a pass that seals stored values again under the
// current master key (the Reseal method of a store of sealed values) did
// with one kind of record.
type ResealCount struct {
	// Records is how many records holding a sealed value the pass read.
	Records int `json:"records"`
	// Resealed is how many of them it sealed again under the current key:
	// they were under a previous key, or in an older format.
	Resealed int `json:"resealed"`
	// Failed is how many it left as they were because no key of the box
	// opens them (or the record does not decode): a value sealed under a
	// key the process was not given, or damaged. Each is logged by record
	// id.
	Failed int `json:"failed"`
}

// Add adds o's counts to c.
func (c *ResealCount) Add(o ResealCount) {
	c.Records += o.Records
	c.Resealed += o.Resealed
	c.Failed += o.Failed
}

// Kind is one kind of record holding a value sealed under the record's id
// (an API key's secret, a proxy's password, ...), as Reseal walks it.
type Kind struct {
	// Name names the kind in errors and logs ("API key").
	Name string
	// Prefix is the key prefix of the records.
	Prefix []byte
	// Scan decodes a record as iterated: its id, its organization and
	// its sealed value (nil when it holds none).
	Scan func(raw []byte) (Sealed, error)
	// Lock names the lock every writer of an organization's records of
	// the kind takes.
	Lock func(orgID string) string
	// Reload reads record id again inside that lock: its sealed value
	// (nil when the record is gone or holds none), and how to write the
	// record back with upgraded in its place.
	Reload func(txn kv.Txn, id string) (value []byte, put func(upgraded []byte) error, err error)
}

// Sealed is a record's sealed value, with what identifies it.
type Sealed struct {
	ID, OrgID string
	Value     []byte
}

// Reseal seals again under box's current master key every value of the
// kind in store that is not (sealed under a previous key, or in an older
// format): the full pass of a master key rotation, which may run while
// origins serve. Each value is rewritten in a transaction holding the
// kind's lock that reads the record again, as every writer does, so a
// concurrent write is never lost. Records counts the records holding a
// value; a value no key of box opens, or a record that does not decode,
// is counted as Failed, logged, and left as it is. The pass stops at
// ctx's end or at the first store error, returning the counts so far.
func Reseal(ctx context.Context, store kv.Store, box *Box, k Kind) (ResealCount, error) {
	var c ResealCount
	var todo []Sealed
	it := store.Iterate(ctx, k.Prefix, kv.IterOptions{})
	for it.Next() {
		s, err := k.Scan(it.Value())
		if err != nil {
			c.Records++
			c.Failed++
			slog.WarnContext(ctx, "sealed value not sealed again: its record does not decode", "kind", k.Name, "record", string(it.Key()), "error", err)
			continue
		}
		if s.Value == nil {
			continue
		}
		c.Records++
		_, upgraded, err := box.OpenUpgrade(s.Value, []byte(s.ID))
		switch {
		case err != nil:
			c.Failed++
			slog.WarnContext(ctx, "sealed value not sealed again: no master key of this process opens it", "kind", k.Name, "id", s.ID, "error", err)
		case upgraded != nil:
			todo = append(todo, s)
		}
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return c, fmt.Errorf("read %s records: %w", k.Name, err)
	}
	for _, s := range todo {
		if err := ctx.Err(); err != nil {
			return c, err
		}
		resealed, failed := false, false
		err := store.Update(ctx, k.Lock(s.OrgID), func(txn kv.Txn) error {
			resealed, failed = false, false
			value, put, err := k.Reload(txn, s.ID)
			if err != nil || value == nil {
				return err
			}
			_, upgraded, err := box.OpenUpgrade(value, []byte(s.ID))
			if err != nil {
				failed = true
				return nil
			}
			if upgraded == nil { // sealed again meanwhile
				return nil
			}
			resealed = true
			return put(upgraded)
		})
		if err != nil {
			return c, fmt.Errorf("store %s %s: %w", k.Name, s.ID, err)
		}
		if resealed {
			c.Resealed++
		}
		if failed {
			c.Failed++
			slog.WarnContext(ctx, "sealed value not sealed again: no master key of this process opens it", "kind", k.Name, "id", s.ID)
		}
	}
	return c, nil
}
