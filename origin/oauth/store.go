package oauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/perm"
)

// Key families. Codes and refresh tokens are stored under the SHA-256 of the
// token, never the token itself.
const (
	prefixClient   = "oauth-client/"    // oauth-client/<client_id>: client
	prefixCode     = "oauth-code/"      // oauth-code/<sha256 hex>: authCode
	prefixRefresh  = "oauth-refresh/"   // oauth-refresh/<sha256 hex>: refreshToken
	prefixGrant    = "oauth-grant/"     // oauth-grant/<grant_id>: grant
	prefixGrantKey = "oauth-grant-key/" // oauth-grant-key/<key_id>/<grant_id>: empty
	prefixGrantOrg = "oauth-grant-org/" // oauth-grant-org/<org_id>/<grant_id>: empty
	prefixExpiry   = "oauth-expiry/"    // oauth-expiry/<unix seconds, 16 hex digits>/<record key>: empty
	// keyClientsExpire marks that every client has an expiry (clients
	// registered before clients expired got one from Sweep).
	keyClientsExpire = "oauth-meta/clients-expire"
)

// client is a registered client.
type client struct {
	ID            string   `json:"client_id"`
	Name          string   `json:"client_name,omitempty"`
	RedirectURIs  []string `json:"redirect_uris"`
	AuthMethod    string   `json:"token_endpoint_auth_method"`
	GrantTypes    []string `json:"grant_types"`
	ResponseTypes []string `json:"response_types"`
	Scope         string   `json:"scope,omitempty"`
	SecretHash    string   `json:"secret_sha256,omitempty"`
	IssuedAt      int64    `json:"client_id_issued_at"`
	// LastUsed is the last redemption of a code or refresh token, written
	// down at most every clientUseEvery; zero until the first.
	LastUsed time.Time `json:"last_used,omitzero"`
	// Expires is when Sweep removes the client: UnusedClientTTL after its
	// registration until it is used, then IdleClientTTL after LastUsed.
	Expires time.Time `json:"expires,omitzero"`
	// Registered (to the nanosecond) and Registrant (the registering
	// address, contract.ClientKey) place a client that has not been used
	// yet among the unfinished ones (pending.go); zero for a client
	// registered before they were.
	Registered time.Time `json:"registered,omitzero"`
	Registrant string    `json:"registrant,omitempty"`
}

// clientUseEvery is how often a client's use is written down at most: a
// token request writes nothing more most of the time.
const clientUseEvery = time.Hour

func (c *client) public() bool { return c.AuthMethod == "none" }

func (c *client) allows(grantType string) bool {
	for _, g := range c.GrantTypes {
		if g == grantType {
			return true
		}
	}
	return false
}

// authCode is an authorization code. A redeemed code is kept, marked used
// and naming its grant, until it expires, so that a second redemption can
// revoke that grant.
type authCode struct {
	ClientID    string `json:"client_id"`
	RedirectURI string `json:"redirect_uri"`
	Challenge   string `json:"code_challenge"`
	approval
	Expires time.Time `json:"expires"`
	Used    bool      `json:"used,omitempty"`
	GrantID string    `json:"grant_id,omitempty"`
}

// approval is what a key's owner approved on the consent page: a code
// carries it, and the grant the code is redeemed for keeps it. Its fields
// are stored as the code's and the grant's own.
type approval struct {
	OrgID    string            `json:"org_id"`
	KeyID    string            `json:"key_id"`
	Resource string            `json:"resource"`
	Scopes   []perm.Permission `json:"scopes"`
}

// grant is one approved connection: what a key's owner let a client do.
type grant struct {
	ID       string `json:"id"`
	ClientID string `json:"client_id"`
	approval
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires"` // no token of the grant outlives it
	Revoked   bool      `json:"revoked,omitempty"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	Reason    string    `json:"reason,omitempty"`
	// LastUsed is the last use of one of its tokens (an access token
	// accepted, a refresh token redeemed), written down at most every
	// grantUseEvery; zero until the first.
	LastUsed time.Time `json:"last_used,omitzero"`
}

// refreshToken is one refresh token of a grant. A rotated one is kept,
// marked used, until it expires, so that its reuse can revoke the grant.
type refreshToken struct {
	GrantID  string            `json:"grant_id"`
	ClientID string            `json:"client_id"`
	Scopes   []perm.Permission `json:"scopes"`
	Expires  time.Time         `json:"expires"`
	Used     bool              `json:"used,omitempty"`
}

// Every read-modify-write runs in one kv.Update holding the lock of what it
// changes, which every process sharing the store takes: a code's own lock,
// or its grant's for a grant and its refresh tokens (a rotation spends the
// token and extends the grant in one transaction). So a code or a refresh
// token is spent once whichever origin redeems it.
func codeLock(hash string) string { return "oauth/code/" + hash }
func grantLock(id string) string  { return "oauth/grant/" + id }
func clientLock(id string) string { return "oauth/client/" + id }

// newSecret returns 256 random bits, base64url.
func newSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashSecret is the stored form of a code, refresh token or client secret:
// each is 256 random bits, so a plain SHA-256 cannot be reversed.
func hashSecret(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func expiryKey(t time.Time, record string) []byte {
	return fmt.Appendf(nil, "%s%016x/%s", prefixExpiry, t.Unix(), record)
}

func grantKey(id string) string { return prefixGrant + id }

func grantIndexKeys(g *grant) [2][]byte {
	return [2][]byte{
		[]byte(prefixGrantKey + g.KeyID + "/" + g.ID),
		[]byte(prefixGrantOrg + g.OrgID + "/" + g.ID),
	}
}

// getJSON reads key into v; found is false for a missing key.
func getJSON(ctx context.Context, r kv.Reader, key string, v any) (found bool, err error) {
	raw, err := r.Get(ctx, []byte(key))
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", family(key), err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("decode %s: %w", family(key), err)
	}
	return true, nil
}

// putJSON stores v as JSON without HTML escapes: a client's redirect URI
// of 2 KiB of '&' stays 2 KiB rather than 12.
func putJSON(w kv.Writer, key string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return w.Put([]byte(key), bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// family names a key's family for errors, without the secret-derived part.
func family(key string) string {
	f, _, _ := strings.Cut(key, "/")
	return f
}

// client returns a registered client, nil for an unknown one or one due
// for removal (Sweep removes it).
func (s *Server) client(ctx context.Context, id string) (*client, error) {
	if id == "" || len(id) > 64 {
		return nil, nil
	}
	var c client
	found, err := getJSON(ctx, s.cfg.Store, prefixClient+id, &c)
	if !found || err != nil {
		return nil, err
	}
	if !c.Expires.IsZero() && !s.now().Before(c.Expires) {
		return nil, nil
	}
	return &c, nil
}

// errClientGone: the client was removed after it was read.
var errClientGone = errors.New("client removed")

// useClient writes down that c redeemed a code or a refresh token at now,
// unless it was written down less than clientUseEvery ago: the client is
// then kept IdleClientTTL from now. A client removed meanwhile is
// errClientGone.
func (s *Server) useClient(ctx context.Context, c *client, now time.Time) error {
	if !c.LastUsed.IsZero() && now.Sub(c.LastUsed) < clientUseEvery {
		return nil
	}
	key := prefixClient + c.ID
	err := s.updateClient(ctx, c.ID, func(txn kv.Txn, cur *client, found bool) error {
		switch {
		case !found:
			return errClientGone
		case !cur.LastUsed.IsZero() && now.Sub(cur.LastUsed) < clientUseEvery:
			return nil
		case cur.LastUsed.IsZero():
			// The first use: the client is no longer unfinished.
			if err := finishPending(ctx, txn, cur); err != nil {
				return err
			}
			cur.Registered, cur.Registrant = time.Time{}, ""
		}
		if !cur.Expires.IsZero() {
			if err := txn.Delete(expiryKey(cur.Expires, key)); err != nil {
				return err
			}
		}
		cur.LastUsed = now.UTC()
		cur.Expires = now.Add(s.cfg.IdleClientTTL).UTC()
		return saveRecord(txn, key, cur, cur.Expires)
	})
	if err != nil && !errors.Is(err, errClientGone) {
		return fmt.Errorf("record the use of client %s: %w", c.ID, err)
	}
	return err
}

// saveRecord writes a record and its expiry entry.
func saveRecord(w kv.Writer, key string, v any, expires time.Time) error {
	if err := putJSON(w, key, v); err != nil {
		return err
	}
	return w.Put(expiryKey(expires, key), nil)
}

// deleteRecord removes a record and its expiry entry.
func (s *Server) deleteRecord(key string, expires time.Time) error {
	b := s.cfg.Store.NewBatch()
	defer b.Close()
	b.Delete([]byte(key))
	b.Delete(expiryKey(expires, key))
	if err := b.Commit(); err != nil {
		return fmt.Errorf("delete %s: %w", family(key), err)
	}
	return nil
}

// revokeGrant marks a grant revoked for good; revoking a revoked or unknown
// grant does nothing. The record stays until every access token it issued
// has expired, then Sweep removes it.
func (s *Server) revokeGrant(ctx context.Context, id, reason string) error {
	var g grant
	revoked := false
	err := s.cfg.Store.Update(ctx, grantLock(id), func(txn kv.Txn) error {
		found, err := getJSON(ctx, txn, grantKey(id), &g)
		if err != nil || !found || g.Revoked {
			return err
		}
		now := s.now()
		g.Revoked, g.RevokedAt, g.Reason = true, now.UTC(), reason
		if last := now.Add(s.cfg.AccessTTL); last.Before(g.Expires) {
			if err := txn.Delete(expiryKey(g.Expires, grantKey(id))); err != nil {
				return err
			}
			g.Expires = last
		}
		revoked = true
		return saveRecord(txn, grantKey(id), &g, g.Expires)
	})
	if err != nil {
		return fmt.Errorf("revoke grant %s: %w", id, err)
	}
	if revoked {
		s.log.InfoContext(ctx, "oauth grant revoked", "grant_id", id, "client_id", g.ClientID, "key_id", g.KeyID, "reason", reason)
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// revokeIndexed revokes every grant listed under an index prefix.
func (s *Server) revokeIndexed(ctx context.Context, prefix, reason string) error {
	var after []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ids, last, err := s.scanIDs(ctx, prefix, after, 256)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := s.revokeGrant(ctx, id, reason); err != nil {
				return err
			}
		}
		if len(ids) < 256 {
			return nil
		}
		after = last
	}
}

// scanIDs returns up to n last path elements of the keys under prefix after
// the key after, and the last key read.
func (s *Server) scanIDs(ctx context.Context, prefix string, after []byte, n int) (ids []string, last []byte, err error) {
	it := s.cfg.Store.Iterate(ctx, []byte(prefix), kv.IterOptions{After: after})
	defer it.Close()
	for len(ids) < n && it.Next() {
		last = bytes.Clone(it.Key())
		ids = append(ids, string(last[len(prefix):]))
	}
	if err := it.Err(); err != nil {
		return nil, nil, fmt.Errorf("list %s: %w", family(prefix), err)
	}
	return ids, last, nil
}

// Sweep removes the codes, refresh tokens, grants and clients that expired
// by now and reports how many. The origin runs it now and then; codes and
// refresh tokens met after their expiry are also removed as they are met,
// and a client due for removal is unknown already.
func (s *Server) Sweep(ctx context.Context, now time.Time) (int, error) {
	if err := s.expireOldClients(ctx, now); err != nil {
		return 0, err
	}
	removed := 0
	var after []byte
	for {
		entries, err := s.dueEntries(ctx, now, after, 256)
		if err != nil {
			return removed, err
		}
		for _, e := range entries {
			n, err := s.sweepEntry(ctx, e, now)
			removed += n
			if err != nil {
				return removed, err
			}
		}
		if len(entries) < 256 {
			return removed, nil
		}
		after = entries[len(entries)-1]
	}
}

// dueEntries returns up to n expiry entries, after the key after, whose
// second is not later than now's.
func (s *Server) dueEntries(ctx context.Context, now time.Time, after []byte, n int) ([][]byte, error) {
	it := s.cfg.Store.Iterate(ctx, []byte(prefixExpiry), kv.IterOptions{After: after})
	defer it.Close()
	var out [][]byte
	for len(out) < n && it.Next() {
		sec, _, ok := parseExpiry(it.Key())
		if !ok {
			out = append(out, bytes.Clone(it.Key())) // not ours to keep: sweepEntry drops it
			continue
		}
		if sec > now.Unix() {
			break
		}
		out = append(out, bytes.Clone(it.Key()))
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("list expiries: %w", err)
	}
	return out, nil
}

func parseExpiry(key []byte) (sec int64, record string, ok bool) {
	rest, found := bytes.CutPrefix(key, []byte(prefixExpiry))
	if !found {
		return 0, "", false
	}
	hexSec, rec, found := bytes.Cut(rest, []byte("/"))
	if !found {
		return 0, "", false
	}
	u, err := strconv.ParseUint(string(hexSec), 16, 63)
	if err != nil {
		return 0, "", false
	}
	return int64(u), string(rec), true
}

// sweepEntry removes the record of an expiry entry if it has expired by now
// (under the record's lock, so a concurrent rotation or revocation is never
// undone) and drops entries that no longer match their record.
func (s *Server) sweepEntry(ctx context.Context, entry []byte, now time.Time) (int, error) {
	_, record, ok := parseExpiry(entry)
	if !ok {
		return 0, s.cfg.Store.Delete(entry)
	}
	var lock string
	switch {
	case strings.HasPrefix(record, prefixGrant):
		lock = grantLock(strings.TrimPrefix(record, prefixGrant))
	case strings.HasPrefix(record, prefixCode):
		lock = codeLock(strings.TrimPrefix(record, prefixCode))
	case strings.HasPrefix(record, prefixClient):
		return s.sweepClient(ctx, entry, record, now)
	case strings.HasPrefix(record, prefixRefresh):
		// A refresh token changes under its grant's lock.
		var rt refreshToken
		found, err := getJSON(ctx, s.cfg.Store, record, &rt)
		if err != nil {
			return 0, err
		}
		if !found {
			// A token's hash is never used again: its entry is stale for good.
			return 0, s.cfg.Store.Delete(entry)
		}
		lock = grantLock(rt.GrantID)
	default:
		return 0, s.cfg.Store.Delete(entry)
	}
	removed := 0
	ctx = context.WithoutCancel(ctx) // a sweep's removal runs to its end
	err := s.cfg.Store.Update(ctx, lock, func(txn kv.Txn) error {
		removed = 0
		// Every family has "expires"; grants also name their key and
		// organization.
		var rec struct {
			Expires time.Time `json:"expires"`
			ID      string    `json:"id"`
			KeyID   string    `json:"key_id"`
			OrgID   string    `json:"org_id"`
		}
		found, err := getJSON(ctx, txn, record, &rec)
		if err != nil {
			return err
		}
		if !found || !bytes.Equal(expiryKey(rec.Expires, record), entry) {
			return txn.Delete(entry) // stale entry
		}
		if now.Before(rec.Expires) {
			return nil
		}
		err = errors.Join(txn.Delete([]byte(record)), txn.Delete(entry))
		if strings.HasPrefix(record, prefixGrant) {
			for _, k := range grantIndexKeys(&grant{ID: rec.ID, approval: approval{KeyID: rec.KeyID, OrgID: rec.OrgID}}) {
				err = errors.Join(err, txn.Delete(k))
			}
		}
		removed = 1
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sweep %s: %w", family(record), err)
	}
	return removed, nil
}

// sweepClient is sweepEntry for a client, under the lock that guards it
// (lockOf): an unfinished client also leaves the index and the count. A
// client that has redeemed no code has no grant; one idle for
// IdleClientTTL holds none alive any more: each grant expires RefreshTTL
// after its last refresh, which the client's use, written down within
// clientUseEvery, is not older than.
func (s *Server) sweepClient(ctx context.Context, entry []byte, record string, now time.Time) (int, error) {
	removed := 0
	err := s.updateClient(context.Background(), strings.TrimPrefix(record, prefixClient), func(txn kv.Txn, c *client, found bool) error {
		removed = 0
		if !found || !bytes.Equal(expiryKey(c.Expires, record), entry) {
			return txn.Delete(entry) // stale entry
		}
		if now.Before(c.Expires) {
			return nil
		}
		if c.LastUsed.IsZero() {
			if err := finishPending(ctx, txn, c); err != nil {
				return err
			}
		}
		removed = 1
		return errors.Join(txn.Delete([]byte(record)), txn.Delete(entry))
	})
	if err != nil {
		return 0, fmt.Errorf("sweep %s: %w", family(record), err)
	}
	return removed, nil
}

// expireOldClients gives the clients registered before clients expired
// (no expiry) IdleClientTTL from now, as if just used: whether they ever
// completed an authorization is not known. It runs until it has done so
// once for the store.
func (s *Server) expireOldClients(ctx context.Context, now time.Time) error {
	if _, err := s.cfg.Store.Get(ctx, []byte(keyClientsExpire)); err == nil {
		return nil
	} else if !errors.Is(err, kv.ErrNotFound) {
		return fmt.Errorf("read %s: %w", family(keyClientsExpire), err)
	}
	var after []byte
	for {
		ids, last, err := s.scanIDs(ctx, prefixClient, after, 256)
		if err != nil {
			return err
		}
		for _, id := range ids {
			key := prefixClient + id
			var c client
			if found, err := getJSON(ctx, s.cfg.Store, key, &c); err != nil {
				return err
			} else if !found || !c.Expires.IsZero() {
				continue
			}
			err := s.updateClient(context.Background(), id, func(txn kv.Txn, c *client, found bool) error {
				if !found || !c.Expires.IsZero() {
					return nil
				}
				c.Expires = now.Add(s.cfg.IdleClientTTL).UTC()
				return saveRecord(txn, key, c, c.Expires)
			})
			if err != nil {
				return fmt.Errorf("expire client %s: %w", id, err)
			}
		}
		if len(ids) < 256 {
			return s.cfg.Store.Put([]byte(keyClientsExpire), nil)
		}
		after = last
	}
}
