package oauth

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
)

func countKeys(t *testing.T, s kv.Store, prefix string) int {
	t.Helper()
	it := s.Iterate(t.Context(), []byte(prefix), kv.IterOptions{})
	defer it.Close()
	n := 0
	for it.Next() {
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSweep(t *testing.T) {
	e := newEnv(t)
	clientID := e.publicClient(t)
	ctx := context.Background()
	keyPerms := perms("images:read")

	// An unredeemed code, a live grant with a rotated refresh token, and a
	// revoked grant.
	e.approve(t, clientID, "", keyPerms, "images:read")
	live := e.approve(t, clientID, "", keyPerms, "images:read")
	_, refresh := e.tokens(t, live)
	a := e.refresh(t, clientID, refresh)
	if a.status != http.StatusOK {
		t.Fatal(a.body)
	}
	refresh = a.json(t)["refresh_token"].(string)
	revoked := e.approve(t, clientID, "", keyPerms, "images:read")
	revokedAccess, _ := e.tokens(t, revoked)
	if err := e.srv.RevokeKey(ctx, revoked.keyID); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{prefixCode: 3, prefixGrant: 2, prefixRefresh: 3, prefixGrantKey: 2, prefixGrantOrg: 2}
	for prefix, n := range want {
		if got := countKeys(t, e.store, prefix); got != n {
			t.Fatalf("%s: %d records, want %d", prefix, got, n)
		}
	}

	if n, err := e.srv.Sweep(ctx, e.clock.Now()); err != nil || n != 0 {
		t.Fatalf("Sweep at once = %d, %v; nothing has expired", n, err)
	}
	// Codes expire; the revoked grant goes once its access tokens have expired.
	e.clock.Advance(e.cfg.AccessTTL)
	n, err := e.srv.Sweep(ctx, e.clock.Now())
	if err != nil || n != 4 {
		t.Fatalf("Sweep after AccessTTL = %d, %v; want 3 codes and the revoked grant", n, err)
	}
	if _, err := e.srv.Verify(ctx, revokedAccess); !isInvalid(err, "token expired") {
		t.Fatalf("Verify: %v", err)
	}
	want = map[string]int{prefixCode: 0, prefixGrant: 1, prefixRefresh: 3, prefixGrantKey: 1, prefixGrantOrg: 1}
	for prefix, n := range want {
		if got := countKeys(t, e.store, prefix); got != n {
			t.Fatalf("%s: %d records, want %d", prefix, got, n)
		}
	}
	// The live grant keeps working, then everything expires.
	a = e.refresh(t, clientID, refresh)
	if a.status != http.StatusOK {
		t.Fatal(a.body)
	}
	e.clock.Advance(e.cfg.RefreshTTL + time.Second)
	if n, err := e.srv.Sweep(ctx, e.clock.Now()); err != nil || n != 5 {
		t.Fatalf("Sweep after RefreshTTL = %d, %v; want 4 refresh tokens and the grant", n, err)
	}
	for _, prefix := range []string{prefixCode, prefixGrant, prefixRefresh, prefixGrantKey, prefixGrantOrg} {
		if got := countKeys(t, e.store, prefix); got != 0 {
			t.Errorf("%s: %d records left", prefix, got)
		}
	}
	// The client stays, used a month ago, with its expiry entry.
	if got := countKeys(t, e.store, prefixClient); got != 1 {
		t.Errorf("clients: %d, want 1", got)
	}
	if got := countKeys(t, e.store, prefixExpiry); got != 1 {
		t.Errorf("expiry entries: %d, want the client's", got)
	}
}

func TestSweepMany(t *testing.T) {
	e := newEnv(t)
	// More expiring records than one sweep batch.
	b := e.store.NewBatch()
	for i := range 600 {
		rec := &authCode{ClientID: "c", Expires: t0.Add(time.Duration(i) * time.Millisecond)}
		if err := saveRecord(b, prefixCode+hashSecret(newSecret()), rec, rec.Expires); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	n, err := e.srv.Sweep(t.Context(), t0.Add(300*time.Millisecond))
	if err != nil || n != 301 {
		t.Fatalf("Sweep = %d, %v; want 301 (0 to 300 ms)", n, err)
	}
	n, err = e.srv.Sweep(t.Context(), t0.Add(time.Second))
	if err != nil || n != 299 || countKeys(t, e.store, prefixExpiry) != 0 {
		t.Fatalf("Sweep = %d, %v; want 299 and no expiry left", n, err)
	}
}

// unknownClientPage fails unless the authorization request of clientID
// shows the unknown-application page.
func (e *env) unknownClientPage(t *testing.T, clientID string) {
	t.Helper()
	_, challenge := pkce()
	a := e.get(t, e.browser(t), "/oauth/authorize?"+authorizeQuery(clientID, testRedirect, challenge, "").Encode())
	if a.status != http.StatusBadRequest || !strings.Contains(parsePage(t, a.body).text, "Unknown application") {
		t.Fatalf("authorize of client %s: status %d, page %q", clientID, a.status, parsePage(t, a.body).text)
	}
}

func clientRecord(t *testing.T, store kv.Store, id string) (raw []byte, found bool) {
	t.Helper()
	raw, err := store.Get(t.Context(), []byte(prefixClient+id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return raw, true
}

// TestHostileUnfinishedClients: a client that never redeemed a code is
// removed UnusedClientTTL after its registration; one that did stays
// until it has been idle IdleClientTTL, its use written down at most once
// an hour; a removed client's authorization request shows the
// unknown-application page.
func TestHostileUnfinishedClients(t *testing.T) {
	e := newEnv(t)
	unused := e.publicClient(t)
	used := e.publicClient(t)
	_, refresh := e.tokens(t, e.approve(t, used, "", perms("images:read"), "images:read"))

	e.clock.Advance(e.cfg.UnusedClientTTL - time.Second)
	if _, err := e.srv.Sweep(t.Context(), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, found := clientRecord(t, e.store, unused); !found {
		t.Fatal("the unused client was removed a second early")
	}
	e.clock.Advance(time.Second)
	if _, err := e.srv.Sweep(t.Context(), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, found := clientRecord(t, e.store, unused); found {
		t.Fatal("the unused client is kept after UnusedClientTTL")
	}
	e.unknownClientPage(t, unused)
	if _, found := clientRecord(t, e.store, used); !found {
		t.Fatal("the client that redeemed a code was removed")
	}

	// A refresh writes the use down; another within the hour does not.
	a := e.refresh(t, used, refresh)
	if a.status != http.StatusOK {
		t.Fatalf("refresh: %d %s", a.status, a.body)
	}
	lastUse := e.clock.Now()
	before, _ := clientRecord(t, e.store, used)
	e.clock.Advance(clientUseEvery - time.Second)
	if a = e.refresh(t, used, a.json(t)["refresh_token"].(string)); a.status != http.StatusOK {
		t.Fatalf("second refresh: %d %s", a.status, a.body)
	}
	if after, _ := clientRecord(t, e.store, used); !bytes.Equal(before, after) {
		t.Fatalf("a refresh within the hour rewrote the client: %s, then %s", before, after)
	}

	// Idle for IdleClientTTL after the use written down: removed, with
	// its grant long expired.
	e.clock.Advance(lastUse.Add(e.cfg.IdleClientTTL - time.Second).Sub(e.clock.Now()))
	if _, err := e.srv.Sweep(t.Context(), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, found := clientRecord(t, e.store, used); !found {
		t.Fatal("the idle client was removed a second early")
	}
	e.clock.Advance(time.Second)
	if _, err := e.srv.Sweep(t.Context(), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, found := clientRecord(t, e.store, used); found {
		t.Fatal("the idle client is kept after IdleClientTTL")
	}
	e.unknownClientPage(t, used)
	for _, prefix := range []string{prefixClient, prefixCode, prefixGrant, prefixRefresh, prefixGrantKey, prefixGrantOrg, prefixExpiry} {
		if got := countKeys(t, e.store, prefix); got != 0 {
			t.Errorf("%s: %d records left", prefix, got)
		}
	}
}

// TestSweepOldClients: a client stored before clients expired gets
// IdleClientTTL from the first sweep, then goes like any other.
func TestSweepOldClients(t *testing.T) {
	e := newEnv(t)
	old := &client{ID: "0b8e8f2e-0000-4000-8000-0000000000c1", RedirectURIs: []string{testRedirect}, AuthMethod: "none",
		GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"}, IssuedAt: t0.Add(-400 * 24 * time.Hour).Unix()}
	if err := putJSON(e.store, prefixClient+old.ID, old); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second sweep finds the work done
		if _, err := e.srv.Sweep(t.Context(), e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	var c client
	if found, err := getJSON(t.Context(), e.store, prefixClient+old.ID, &c); err != nil || !found || !c.Expires.Equal(t0.Add(e.cfg.IdleClientTTL)) {
		t.Fatalf("the old client: found %v, %v, expires %v", found, err, c.Expires)
	}
	if got := countKeys(t, e.store, prefixExpiry); got != 1 {
		t.Fatalf("%d expiry entries, want the old client's", got)
	}
	e.clock.Advance(e.cfg.IdleClientTTL)
	if n, err := e.srv.Sweep(t.Context(), e.clock.Now()); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want the old client", n, err)
	}
	e.unknownClientPage(t, old.ID)
}
