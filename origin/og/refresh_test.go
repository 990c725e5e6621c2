package og

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestStoreKeepsTheLaterRead: two origins on one store. A read that began
// before the record in the store was read (a refresh, another origin's
// recheck) does not replace it: it only adds the variants it made for the
// same inputs. A read that began after it replaces it; a read under an
// older revision of the configuration never does.
func TestStoreKeepsTheLaterRead(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	rec := func(rev int64, request string, checked time.Time, images map[string]string) *page {
		return &page{ConfigID: "cfg", Path: "/a", Revision: rev, CheckedAt: checked,
			Request: json.RawMessage(request), Extra: "x", Images: images}
	}
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) {
			dbs := tc.Pair(t)
			a, b := &Service{cfg: Config{Store: dbs[0]}}, &Service{cfg: Config{Store: dbs[1]}}
			ctx := context.Background()
			load := func() *page {
				t.Helper()
				p, err := loadPage(ctx, dbs[1], "cfg", "/a")
				if err != nil || p == nil {
					t.Fatalf("page: %v, %v", p, err)
				}
				return p
			}
			// A refresh on a, read at 20 s: the new content.
			if _, err := a.store(ctx, rec(1, `{"v":2}`, at(20), map[string]string{"": "new"}), time.Time{}); err != nil {
				t.Fatal(err)
			}
			// A recheck on b that began at 10 s and read the old content.
			got, err := b.store(ctx, rec(1, `{"v":1}`, at(25), map[string]string{"": "old"}), at(10))
			if err != nil {
				t.Fatal(err)
			}
			if p := load(); string(p.Request) != `{"v":2}` || p.Images[""] != "new" || got.Images[""] != "new" {
				t.Fatalf("an earlier read replaced the later one: stored %s %v, returned %v", p.Request, p.Images, got.Images)
			}
			// Of the same inputs: its variant joins the record.
			if _, err := b.store(ctx, rec(1, `{"v":2}`, at(26), map[string]string{"twitter": "new-t"}), at(10)); err != nil {
				t.Fatal(err)
			}
			if p := load(); p.Images[""] != "new" || p.Images["twitter"] != "new-t" || !p.CheckedAt.Equal(at(20)) {
				t.Fatalf("variants %v checked at %v, want both, as read at 20 s", p.Images, p.CheckedAt)
			}
			// A read that began after: it replaces the record.
			if _, err := b.store(ctx, rec(1, `{"v":3}`, at(40), map[string]string{"": "newer"}), at(30)); err != nil {
				t.Fatal(err)
			}
			if p := load(); string(p.Request) != `{"v":3}` || p.Images[""] != "newer" {
				t.Fatalf("a later read was refused: %s %v", p.Request, p.Images)
			}
			// A later revision stays, even against a refresh of an older one.
			if _, err := a.store(ctx, rec(2, `{"v":4}`, at(50), map[string]string{"": "rev2"}), time.Time{}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.store(ctx, rec(1, `{"v":5}`, at(60), map[string]string{"": "rev1"}), time.Time{}); err != nil {
				t.Fatal(err)
			}
			if p := load(); p.Revision != 2 || p.Images[""] != "rev2" {
				t.Fatalf("an older revision replaced a later one: revision %d, %v", p.Revision, p.Images)
			}
		})
	}
}
