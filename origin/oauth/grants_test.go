package oauth

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestGrants: an organization's live connections, newest first, a page at
// a time; revoked and expired ones are skipped without cutting a page
// short or announcing a page that has nothing; RevokeGrant revokes only
// the organization's live ones, once allow accepts.
func TestGrants(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	clientID := e.publicClient(t)
	var keys []string // the connections' keys, oldest first
	for range 5 {
		c := e.approve(t, clientID, "", perms("images:read"), "images:read")
		e.tokens(t, c)
		keys = append(keys, c.keyID)
	}
	page := func(after string, count int) (ids, keyIDs []string, more bool) {
		t.Helper()
		gs, more, err := e.srv.Grants(ctx, "org-1", after, count)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			if g.ClientID != clientID || !slices.Equal(g.Scopes, perms("images:read")) || !g.Created.Equal(t0) || !g.LastUsed.IsZero() {
				t.Errorf("grant %+v", g)
			}
			ids, keyIDs = append(ids, g.ID), append(keyIDs, g.KeyID)
		}
		return ids, keyIDs, more
	}
	ids, got, more := page("", 10)
	if want := []string{keys[4], keys[3], keys[2], keys[1], keys[0]}; !slices.Equal(got, want) || more {
		t.Fatalf("all: keys %v more %v, want %v", got, more, want)
	}
	byKey := map[string]string{}
	for i, k := range got {
		byKey[k] = ids[i]
	}

	refuse := errors.New("refused")
	if err := e.srv.RevokeGrant(ctx, "org-1", byKey[keys[3]], "test", func(Grant) error { return refuse }); !errors.Is(err, refuse) {
		t.Fatalf("RevokeGrant refused by allow = %v", err)
	}
	if err := e.srv.RevokeGrant(ctx, "org-2", byKey[keys[3]], "test", nil); !errors.Is(err, ErrGrantNotFound) {
		t.Fatalf("RevokeGrant of another organization = %v", err)
	}
	if _, got, _ := page("", 10); len(got) != 5 {
		t.Fatalf("refused revocations revoked: %v", got)
	}
	for _, k := range []string{keys[3], keys[0]} {
		if err := e.srv.RevokeGrant(ctx, "org-1", byKey[k], "test", nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.srv.RevokeGrant(ctx, "org-1", byKey[keys[3]], "test", nil); !errors.Is(err, ErrGrantNotFound) {
		t.Fatalf("RevokeGrant again = %v", err)
	}
	first, got, more := page("", 2)
	if want := []string{keys[4], keys[2]}; !slices.Equal(got, want) || !more {
		t.Fatalf("first page: %v more %v, want %v and more", got, more, want)
	}
	if _, got, more := page(first[1], 2); !slices.Equal(got, []string{keys[1]}) || more {
		t.Fatalf("second page: %v more %v, want only %s (the oldest is revoked)", got, more, keys[1])
	}
	if _, got, more := page("", 3); len(got) != 3 || more {
		t.Fatalf("a page of the last live ones: %v more %v, want 3 and no more (only a revoked one follows)", got, more)
	}
	for _, org := range []string{"org-2", "", "org-1/x"} {
		if gs, more, err := e.srv.Grants(ctx, org, "", 10); len(gs) != 0 || more || err != nil {
			t.Errorf("Grants(%q) = %v %v %v", org, gs, more, err)
		}
	}

	// Past its last refresh token's lifetime a connection is gone.
	e.clock.Advance(e.cfg.RefreshTTL + time.Second)
	if _, got, _ := page("", 10); len(got) != 0 {
		t.Fatalf("expired connections listed: %v", got)
	}
	if err := e.srv.RevokeGrant(ctx, "org-1", byKey[keys[4]], "test", nil); !errors.Is(err, ErrGrantNotFound) {
		t.Fatalf("RevokeGrant of an expired connection = %v", err)
	}
}
