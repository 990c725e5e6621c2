package oauth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/perm"
)

// The organization's view of its connections: the REST API lists them
// and revokes one (the origin's /v1/oauth-grants). Nothing here reveals a
// token or a secret.

// ErrGrantNotFound: no live connection of the organization has the id
// (unknown, another organization's, revoked or expired).
var ErrGrantNotFound = errors.New("oauth: connection not found")

// Grant is a live connection as its organization sees it.
type Grant struct {
	ID         string
	ClientID   string
	ClientName string // "" when the client gave none or was removed
	KeyID      string // the approving key, whose permissions the client acts with
	Scopes     []perm.Permission
	Created    time.Time
	LastUsed   time.Time // zero until the first use written down
}

// grantUseEvery is how often a connection's use is written down at most:
// an access token's check writes nothing more most of the time.
const grantUseEvery = time.Hour

// live reports whether g still gives access at now.
func (g *grant) live(now time.Time) bool { return !g.Revoked && now.Before(g.Expires) }

// Grants lists the live connections of an organization, newest first, up
// to count after the id after ("" from the newest), and whether more
// follow.
func (s *Server) Grants(ctx context.Context, orgID, after string, count int) ([]Grant, bool, error) {
	if orgID == "" || strings.Contains(orgID, "/") || count < 1 {
		return nil, false, nil
	}
	prefix := []byte(prefixGrantOrg + orgID + "/")
	opts := kv.IterOptions{Reverse: true}
	if after != "" {
		opts.After = append(slices.Clone(prefix), after...)
	}
	snap := s.cfg.Store.Snapshot()
	defer snap.Close()
	it := snap.Iterate(ctx, prefix, opts)
	defer it.Close()
	now := s.now()
	names := map[string]string{}
	var out []Grant
	for it.Next() {
		id := string(it.Key()[len(prefix):])
		var g grant
		found, err := getJSON(ctx, snap, grantKey(id), &g)
		if err != nil {
			return nil, false, err
		}
		if !found || g.OrgID != orgID || !g.live(now) {
			continue // revoked or expired: Sweep removes it
		}
		if len(out) == count {
			return out, true, nil
		}
		name, ok := names[g.ClientID]
		if !ok {
			var c client
			if _, err := getJSON(ctx, snap, prefixClient+g.ClientID, &c); err != nil {
				return nil, false, err
			}
			name = c.Name
			names[g.ClientID] = name
		}
		out = append(out, g.public(name))
	}
	if err := it.Err(); err != nil {
		return nil, false, fmt.Errorf("list %s: %w", family(prefixGrantOrg), err)
	}
	return out, false, nil
}

func (g *grant) public(clientName string) Grant {
	return Grant{ID: g.ID, ClientID: g.ClientID, ClientName: clientName, KeyID: g.KeyID,
		Scopes: slices.Clone(g.Scopes), Created: g.Created, LastUsed: g.LastUsed}
}

// RevokeGrant revokes for good the organization's live connection id once
// allow accepts it (allow's error is returned as it is): its access and
// refresh tokens are refused from then on. A connection that is not the
// organization's, or no longer live, is ErrGrantNotFound.
func (s *Server) RevokeGrant(ctx context.Context, orgID, id, reason string, allow func(Grant) error) error {
	if id == "" || strings.Contains(id, "/") {
		return ErrGrantNotFound
	}
	var g grant
	found, err := getJSON(ctx, s.cfg.Store, grantKey(id), &g)
	if err != nil {
		return err
	}
	if !found || g.OrgID != orgID || !g.live(s.now()) {
		return ErrGrantNotFound
	}
	if allow != nil {
		if err := allow(g.public("")); err != nil {
			return err
		}
	}
	return s.revokeGrant(ctx, id, reason)
}

// useGrant writes down that a token of g was used at now, unless it was
// less than grantUseEvery ago. A failure is logged: the use goes on.
func (s *Server) useGrant(ctx context.Context, g *grant, now time.Time) {
	if !g.LastUsed.IsZero() && now.Sub(g.LastUsed) < grantUseEvery {
		return
	}
	err := s.cfg.Store.Update(ctx, grantLock(g.ID), func(txn kv.Txn) error {
		var cur grant
		found, err := getJSON(ctx, txn, grantKey(g.ID), &cur)
		if err != nil || !found || cur.Revoked || (!cur.LastUsed.IsZero() && now.Sub(cur.LastUsed) < grantUseEvery) {
			return err
		}
		cur.LastUsed = now.UTC()
		return putJSON(txn, grantKey(g.ID), &cur) // same expiry: its entry stays
	})
	if err != nil {
		s.log.WarnContext(ctx, "oauth grant use not recorded", "grant_id", g.ID, "error", err)
	}
}
