package console

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
)

// TestSessionsStoreNoCookie: a session is kept under the SHA-256 of its
// id, so what the store holds cannot be sent back as a cookie; a
// malformed or unknown id is no session; idle and old sessions end and
// their records go.
func TestSessionsStoreNoCookie(t *testing.T) {
	store := openStore(t)
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	s := &sessions{store: store, now: func() time.Time { return now }, idle: time.Hour, lifetime: 3 * time.Hour, touch: time.Minute}

	se, err := s.create(t.Context(), "key-1", "org-1")
	if err != nil {
		t.Fatal(err)
	}
	it := store.Iterate(t.Context(), []byte(sessionPrefix), kv.IterOptions{})
	n := 0
	for it.Next() {
		n++
		if strings.Contains(string(it.Key()), se.id) || strings.Contains(string(it.Value()), se.id) {
			t.Errorf("the store holds the session id: %q", it.Key())
		}
	}
	it.Close()
	if n != 1 {
		t.Fatalf("%d session records, want 1", n)
	}
	for _, id := range []string{"", "short", se.id[:42], se.id + "x", strings.Repeat("A", 43)} {
		if _, err := s.load(t.Context(), id); !errors.Is(err, errNoSession) {
			t.Errorf("load(%q) = %v, want errNoSession", id, err)
		}
	}
	got, err := s.load(t.Context(), se.id)
	if err != nil || got.KeyID != "key-1" || got.OrgID != "org-1" || got.CSRF != se.CSRF || !got.checkCSRF(se.CSRF) || got.checkCSRF("") {
		t.Fatalf("load: %+v, %v", got, err)
	}

	for range 5 { // used every 50 minutes: alive until 3 hours old
		now = now.Add(50 * time.Minute)
		if _, err := s.load(t.Context(), se.id); now.Sub(se.Created) <= 3*time.Hour && err != nil {
			t.Fatalf("at %v: %v", now.Sub(se.Created), err)
		} else if now.Sub(se.Created) > 3*time.Hour && !errors.Is(err, errNoSession) {
			t.Fatalf("at %v (past the lifetime): %v", now.Sub(se.Created), err)
		}
	}
	idle, _ := s.create(t.Context(), "key-2", "org-1")
	now = now.Add(61 * time.Minute)
	if _, err := s.load(t.Context(), idle.id); !errors.Is(err, errNoSession) {
		t.Errorf("after 61 idle minutes: %v", err)
	}
	if _, err := store.Get(t.Context(), sessionKey(idle.id)); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("an expired session's record stays: %v", err)
	}
}

// TestDailyChart: one bar a day from the period's start to today, each
// as tall as its share of the busiest day.
func TestDailyChart(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	c := dailyChart(map[string]int64{
		"2026-11-27T00:00:00Z": 4, "2026-11-29T00:00:00Z": 2, "2026-10-01T00:00:00Z": 9, "junk": 7,
	}, "2026-11-20T13:00:00Z", now)
	if len(c.Bars) != 10 || c.From != "2026-11-20" || c.To != "2026-11-29" {
		t.Fatalf("%d bars from %s to %s, want 10 from 2026-11-20 to 2026-11-29", len(c.Bars), c.From, c.To)
	}
	if c.Total != 6 || c.Max != 4 || c.Bars[7].H != c.Height || c.Bars[9].H != c.Height/2 || c.Bars[0].H != 0 || c.Bars[9].Y != c.Height/2 {
		t.Errorf("bars %+v, total %d, max %d", c.Bars, c.Total, c.Max)
	}
	if c := dailyChart(nil, "", now); len(c.Bars) != chartDays || c.Max != 0 {
		t.Errorf("no period: %d bars, max %d", len(c.Bars), c.Max)
	}
}

// TestSessionsSwept: sessions nobody presents again are removed by a
// later sign-in once their lifetime ended; live ones and their index
// entries stay, and ending a session removes its index entry too.
func TestSessionsSwept(t *testing.T) {
	store := openStore(t)
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	s := &sessions{store: store, now: func() time.Time { return now }, idle: time.Hour, lifetime: 3 * time.Hour, touch: time.Minute}
	count := func(prefix string) int {
		it := store.Iterate(t.Context(), []byte(prefix), kv.IterOptions{})
		defer it.Close()
		n := 0
		for it.Next() {
			n++
		}
		return n
	}
	for range 3 {
		if _, err := s.create(t.Context(), "old", "org"); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Hour)
	young, _ := s.create(t.Context(), "young", "org")
	ended, _ := s.create(t.Context(), "ended", "org")
	if err := s.end(ended); err != nil {
		t.Fatal(err)
	}
	if n, e := count(sessionPrefix), count(endPrefix); n != 4 || e != 4 {
		t.Fatalf("%d sessions, %d index entries; want 4 and 4", n, e)
	}
	now = now.Add(time.Hour + time.Second) // the first three are past their 3 hours
	latest, err := s.create(t.Context(), "latest", "org")
	if err != nil {
		t.Fatal(err)
	}
	if n, e := count(sessionPrefix), count(endPrefix); n != 2 || e != 2 {
		t.Errorf("after the sweep: %d sessions, %d index entries; want 2 and 2", n, e)
	}
	for _, se := range []*session{young, latest} {
		if _, err := store.Get(t.Context(), sessionKey(se.id)); err != nil {
			t.Errorf("a live session was swept: %v", err)
		}
	}
}

// openStore opens a pebble store in a temporary directory.
func openStore(t *testing.T) kv.Store {
	t.Helper()
	store, err := pebblekv.Open(filepath.Join(t.TempDir(), "kv"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}
