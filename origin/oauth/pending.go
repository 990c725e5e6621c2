package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/pictorhq/pictor/kv"
)

// Unfinished clients, those that have never redeemed a code, are indexed
// by registration, over the store and per registering address, and
// counted, so that a registration past Config.MaxUnfinishedClients or
// Config.MaxUnfinishedClientsPerAddress removes the oldest. Anyone can
// register: without the caps a flood of addresses at the registration
// ceiling would keep 24 hours of registrations.
const (
	// oauth-pending/<registration unix nanoseconds, 16 hex digits>/<client_id>: the registrant
	prefixPending = "oauth-pending/"
	// oauth-pending-addr/<registrant, path-escaped>/<unix nanoseconds, 16 hex digits>/<client_id>: empty
	prefixPendingAddr = "oauth-pending-addr/"
	// keyPendingCount holds how many oauth-pending/ entries there are, in decimal.
	keyPendingCount = "oauth-meta/pending-clients"
)

// pendingLock guards the index, the count and every unfinished client's
// record: a client record is written under pendingLock until the client's
// first use (LastUsed zero), under its own lock after. So a removal to make
// room never races with the use that would have kept the client.
const pendingLock = "oauth/pending"

// lockOf is the lock that guards c's record.
func lockOf(c *client) string {
	if c.LastUsed.IsZero() {
		return pendingLock
	}
	return clientLock(c.ID)
}

func pendingKey(registered time.Time, id string) []byte {
	return fmt.Appendf(nil, "%s%016x/%s", prefixPending, registered.UnixNano(), id)
}

func pendingAddrPrefix(registrant string) string {
	return prefixPendingAddr + url.PathEscape(registrant) + "/"
}

func pendingAddrKey(registrant string, registered time.Time, id string) []byte {
	return fmt.Appendf(nil, "%s%016x/%s", pendingAddrPrefix(registrant), registered.UnixNano(), id)
}

// pendingCount reads the count of unfinished clients.
func pendingCount(ctx context.Context, r kv.Reader) (int, error) {
	raw, err := r.Get(ctx, []byte(keyPendingCount))
	if errors.Is(err, kv.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", family(keyPendingCount), err)
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("decode %s: %q is not a count", family(keyPendingCount), raw)
	}
	return n, nil
}

func putPendingCount(w kv.Writer, n int) error {
	return w.Put([]byte(keyPendingCount), strconv.AppendInt(nil, int64(n), 10))
}

// evictions are the unfinished clients a registration removed, by the cap
// that was reached.
type evictions struct{ address, total int }

// registerClient stores the new client c, unfinished, from registrant,
// first removing that address's oldest unfinished clients down to one
// below MaxUnfinishedClientsPerAddress, then the oldest of all down to
// one below MaxUnfinishedClients: one transaction under pendingLock, so
// the count stays exact whichever origin registers.
func (s *Server) registerClient(ctx context.Context, c *client) (evictions, error) {
	var ev evictions
	err := s.cfg.Store.Update(ctx, pendingLock, func(txn kv.Txn) error {
		ev = evictions{}
		n, err := pendingCount(ctx, txn)
		if err != nil {
			return err
		}
		prefix := pendingAddrPrefix(c.Registrant)
		mine, err := firstKeys(ctx, txn, prefix, -1)
		if err != nil {
			return err
		}
		for ; len(mine) >= s.cfg.MaxUnfinishedClientsPerAddress; mine = mine[1:] {
			// An address's entry names the entry of all after its prefix.
			removed, err := removePending(ctx, txn, append([]byte(prefixPending), mine[0][len(prefix):]...))
			if err != nil {
				return err
			}
			if !removed { // no entry of all: drop the address's alone
				if err := txn.Delete(mine[0]); err != nil {
					return err
				}
				continue
			}
			n--
			ev.address++
		}
		for n >= s.cfg.MaxUnfinishedClients {
			oldest, err := firstKeys(ctx, txn, prefixPending, 1)
			if err != nil {
				return err
			}
			if len(oldest) == 0 {
				n = 0 // the count cannot exceed the entries: none left
				break
			}
			if _, err := removePending(ctx, txn, oldest[0]); err != nil {
				return err
			}
			n--
			ev.total++
		}
		if err := saveRecord(txn, prefixClient+c.ID, c, c.Expires); err != nil {
			return err
		}
		err = errors.Join(
			txn.Put(pendingKey(c.Registered, c.ID), []byte(c.Registrant)),
			txn.Put(pendingAddrKey(c.Registrant, c.Registered, c.ID), nil),
		)
		if err != nil {
			return err
		}
		return putPendingCount(txn, n+1)
	})
	if err != nil {
		return evictions{}, fmt.Errorf("save client: %w", err)
	}
	return ev, nil
}

// firstKeys returns up to n keys under prefix (all of them for n < 0),
// in order.
func firstKeys(ctx context.Context, r kv.Reader, prefix string, n int) ([][]byte, error) {
	it := r.Iterate(ctx, []byte(prefix), kv.IterOptions{})
	defer it.Close()
	var out [][]byte
	for n < 0 || len(out) < n {
		if !it.Next() {
			break
		}
		out = append(out, bytes.Clone(it.Key()))
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", family(prefix), err)
	}
	return out, nil
}

// removePending removes the unfinished client of an oauth-pending/ entry:
// its record, expiry entry and index entries. removed is false when the
// entry was not there. The count is the caller's to lower.
func removePending(ctx context.Context, txn kv.Txn, entry []byte) (removed bool, err error) {
	registrant, err := txn.Get(ctx, entry)
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", family(prefixPending), err)
	}
	rest := entry[len(prefixPending):]
	hexNanos, id, ok := bytes.Cut(rest, []byte("/"))
	nanos, perr := strconv.ParseUint(string(hexNanos), 16, 63)
	if !ok || perr != nil {
		return true, txn.Delete(entry) // not ours: drop it
	}
	key := prefixClient + string(id)
	var c client
	found, err := getJSON(ctx, txn, key, &c)
	if err != nil {
		return false, err
	}
	err = errors.Join(
		txn.Delete(entry),
		txn.Delete(pendingAddrKey(string(registrant), time.Unix(0, int64(nanos)), string(id))),
	)
	if found && c.LastUsed.IsZero() {
		err = errors.Join(err, txn.Delete([]byte(key)))
		if !c.Expires.IsZero() {
			err = errors.Join(err, txn.Delete(expiryKey(c.Expires, key)))
		}
	}
	return true, err
}

// finishPending takes c, whose record the transaction holds under
// pendingLock, out of the unfinished clients: its index entries go and
// the count drops. Its record is the caller's to write or delete.
func finishPending(ctx context.Context, txn kv.Txn, c *client) error {
	if c.Registered.IsZero() {
		return nil // registered before clients were indexed
	}
	entry := pendingKey(c.Registered, c.ID)
	if _, err := txn.Get(ctx, entry); errors.Is(err, kv.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("read %s: %w", family(prefixPending), err)
	}
	n, err := pendingCount(ctx, txn)
	if err != nil {
		return err
	}
	return errors.Join(
		txn.Delete(entry),
		txn.Delete(pendingAddrKey(c.Registrant, c.Registered, c.ID)),
		putPendingCount(txn, max(n-1, 0)),
	)
}

// errLockMoved: the client was first used between the read that chose
// its lock and the transaction.
var errLockMoved = errors.New("the client's lock moved")

// updateClient runs fn in one Update under the lock that guards client
// id's record (lockOf), giving fn the record as the transaction reads it
// (found false: there is none). A client is first used at most once, so
// one more try always finds the lock in place.
func (s *Server) updateClient(ctx context.Context, id string, fn func(txn kv.Txn, c *client, found bool) error) error {
	key := prefixClient + id
	for try := 0; ; try++ {
		var c client
		found, err := getJSON(ctx, s.cfg.Store, key, &c)
		if err != nil {
			return err
		}
		lock := clientLock(id)
		if found {
			lock = lockOf(&c)
		}
		err = s.cfg.Store.Update(ctx, lock, func(txn kv.Txn) error {
			var cur client
			found, err := getJSON(ctx, txn, key, &cur)
			if err != nil {
				return err
			}
			if found && lockOf(&cur) != lock {
				return errLockMoved
			}
			return fn(txn, &cur, found)
		})
		if !errors.Is(err, errLockMoved) || try == 2 {
			return err
		}
	}
}
