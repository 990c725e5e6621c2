package oauth

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
)

func countKeys(t *testing.T, s kv.Store, prefix string) int {
	t.Helper()
	it := s.Iterate([]byte(prefix), kv.IterOptions{})
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

	if n, err := e.srv.Sweep(e.clock.Now()); err != nil || n != 0 {
		t.Fatalf("Sweep at once = %d, %v; nothing has expired", n, err)
	}
	// Codes expire; the revoked grant goes once its access tokens have expired.
	e.clock.Advance(e.cfg.AccessTTL)
	n, err := e.srv.Sweep(e.clock.Now())
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
	if n, err := e.srv.Sweep(e.clock.Now()); err != nil || n != 5 {
		t.Fatalf("Sweep after RefreshTTL = %d, %v; want 4 refresh tokens and the grant", n, err)
	}
	for _, prefix := range []string{prefixCode, prefixGrant, prefixRefresh, prefixGrantKey, prefixGrantOrg, prefixExpiry} {
		if got := countKeys(t, e.store, prefix); got != 0 {
			t.Errorf("%s: %d records left", prefix, got)
		}
	}
	if got := countKeys(t, e.store, prefixClient); got != 1 {
		t.Errorf("clients: %d, want 1", got)
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
	n, err := e.srv.Sweep(t0.Add(300 * time.Millisecond))
	if err != nil || n != 301 {
		t.Fatalf("Sweep = %d, %v; want 301 (0 to 300 ms)", n, err)
	}
	n, err = e.srv.Sweep(t0.Add(time.Second))
	if err != nil || n != 299 || countKeys(t, e.store, prefixExpiry) != 0 {
		t.Fatalf("Sweep = %d, %v; want 299 and no expiry left", n, err)
	}
}
