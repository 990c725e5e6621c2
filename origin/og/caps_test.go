package og

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/rendition"
	"github.com/pictorhq/pictor/origin/usage"
)

func ptr(n int64) *int64 { return &n }

// TestCreateAgainstCaps hammers the creation of new OG images from many
// goroutines, on one origin and on two origins sharing a store (each
// backend): two configurations whose caps allow 30 images together, of a
// free organization whose OG share is 25 credits, with every image asked
// for twice at once (one creation charges, the other finds it made and
// gives its reservation back). Exactly the share is charged, each
// configuration within its caps, and the counts are what was charged.
func TestCreateAgainstCaps(t *testing.T) {
	type setup struct {
		name   string
		stores func(t testing.TB) [2]kv.Store
	}
	cases := []setup{{"one origin", func(t testing.TB) [2]kv.Store {
		db, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return [2]kv.Store{db, db}
	}}}
	for _, b := range sharedStores {
		cases = append(cases, setup{"two origins on " + b.Name, b.Pair})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dbs := tc.stores(t)
			clock := apitest.NewClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
			blobs := t.TempDir()
			origins := [2]*origin{newOrigin(t, dbs[0], clock, true, blobs)}
			if dbs[1] == dbs[0] {
				origins[1] = origins[0]
			} else {
				origins[1] = newOrigin(t, dbs[1], clock, true, blobs)
			}
			ow, err := origins[0].orgs.Create("tiny", "free")
			if err != nil {
				t.Fatal(err)
			}
			a := origins[0].config(t, ow, "https://a.example", nil, nil)         // free defaults: 10 a day, 10 a period
			b := origins[0].config(t, ow, "https://b.example", ptr(20), ptr(20)) // 20, beyond the share with a's 10

			const workers, each = 16, 24
			var refused atomic.Int64
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					o := origins[w%2]
					for i := range each {
						cfg := []*ogconfig.Config{a, b}[i%2]
						// Workers 2k and 2k+1 ask for the same images at once.
						it := item(t, ow, fmt.Sprintf("<p>%s %d %d</p>", cfg.ID, w/2, i), "og\x00"+cfg.ID)
						_, err := o.og.create(ctx, cfg, ow, it)
						var ref *refusal
						switch {
						case err == nil:
						case errors.As(err, &ref) && (ref.reason == reasonDay || ref.reason == reasonPeriod || ref.reason == reasonOrgShare):
							refused.Add(1)
						default:
							t.Errorf("create: %v", err)
						}
					}
				})
			}
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}
			used, err := usage.Used(ctx, dbs[1], ow, clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			ua, err := origins[1].configs.Usage(ctx, a, ow)
			if err != nil {
				t.Fatal(err)
			}
			ub, err := origins[1].configs.Usage(ctx, b, ow)
			if err != nil {
				t.Fatal(err)
			}
			if used != 25 || ua.ThisPeriod+ub.ThisPeriod != used || ub.OrgShareUsed != used {
				t.Fatalf("%d credits charged; counted %d + %d, share %d; want exactly the OG share of 25", used, ua.ThisPeriod, ub.ThisPeriod, ub.OrgShareUsed)
			}
			if ua.ThisPeriod > 10 || ua.Today > 10 || ub.ThisPeriod > 20 {
				t.Fatalf("a configuration passed its caps: %+v, %+v", ua, ub)
			}
			if refused.Load() == 0 {
				t.Fatal("nothing refused: the caps were never reached")
			}
		})
	}
}

// TestServeRefusals: what an anonymous visitor gets when the organization
// has no credits left, when a cap refuses and when its address asked for
// too many new pages: the same 429, never kept, with the time to wait and
// nothing of the organization's usage; the reason is counted.
func TestServeRefusals(t *testing.T) {
	ctx := context.Background()
	db, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clock := apitest.NewClock(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	o := newOrigin(t, db, clock, false, t.TempDir())
	base := o.serve(t)
	ow, err := o.orgs.Create("tiny", "free") // its billing period ends in 31 days
	if err != nil {
		t.Fatal(err)
	}
	periodLeft := strconv.Itoa(int(usage.PeriodAt(ow, clock.Now()).End.Sub(clock.Now()) / time.Second))
	get := func(domain, path, forwardedFor string) *apitest.Response {
		t.Helper()
		return apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/v1/og/" + domain + path,
			Header: map[string]string{"X-Forwarded-For": forwardedFor, "User-Agent": "Twitterbot/1.0"}})
	}

	t.Run("credits", func(t *testing.T) {
		cfg := o.config(t, ow, site(t).URL, nil, nil)
		// The organization spends its 50 credits itself.
		for i := range 50 {
			if _, _, err := o.images.Create(ctx, ow, []rendition.Item{item(t, ow, fmt.Sprint("api ", i), "")}); err != nil {
				t.Fatal(err)
			}
		}
		wantLimited(t, get(cfg.DomainID, "/x-1", "198.51.100.1"), periodLeft)
		if n := o.refused(t, reasonCredits); n != 1 {
			t.Fatalf("%v refusals for credits counted, want 1", n)
		}
		if u, err := o.configs.Usage(ctx, cfg, ow); err != nil || u.ThisPeriod != 0 || u.OrgShareUsed != 0 {
			t.Fatalf("the refused creation kept its reservation: %+v, %v", u, err)
		}
	})

	t.Run("client", func(t *testing.T) {
		cfg := o.config(t, ow, site(t).URL, nil, ptr(0)) // only images that exist: no page is read
		for i := range DefaultClientBurst {
			wantLimited(t, get(cfg.DomainID, fmt.Sprint("/x-", i), "198.51.100.7"), periodLeft)
		}
		if n, c := o.refused(t, reasonPeriod), o.refused(t, reasonClient); n != DefaultClientBurst || c != 0 {
			t.Fatalf("%v refused by the period cap, %v by the client limit; want %d and 0", n, c, DefaultClientBurst)
		}
		// The address's allowance is spent, whatever it claims before the
		// edge's entry; another address has its own; an IPv6 /64 is one
		// client.
		wantLimited(t, get(cfg.DomainID, "/next", "198.51.100.7"), "2")
		wantLimited(t, get(cfg.DomainID, "/next", "203.0.113.9, 198.51.100.7"), "2")
		if c := o.refused(t, reasonClient); c != 2 {
			t.Fatalf("%v refused by the client limit, want 2", c)
		}
		wantLimited(t, get(cfg.DomainID, "/next", "198.51.100.8"), periodLeft)
		for i := range DefaultClientBurst {
			get(cfg.DomainID, fmt.Sprint("/y-", i), fmt.Sprintf("2001:db8:1:2::%x", i+1))
		}
		wantLimited(t, get(cfg.DomainID, "/next", "2001:db8:1:2:ffff::1"), "2")
		if c := o.refused(t, reasonClient); c != 3 {
			t.Fatalf("%v refused by the client limit, want 3 (one IPv6 /64 is one client)", c)
		}
		// A minute gives the address its allowance back.
		clock.Advance(time.Minute)
		wantLimited(t, get(cfg.DomainID, "/later", "198.51.100.7"), strconv.Itoa(int(usage.PeriodAt(ow, clock.Now()).End.Sub(clock.Now())/time.Second)))
		if c := o.refused(t, reasonClient); c != 3 {
			t.Fatalf("refused by the client limit after a minute: %v in all", c)
		}
	})
}

// wantLimited checks a refusal's answer: 429, Retry-After, never kept, the
// one generic message.
func wantLimited(t *testing.T, r *apitest.Response, retryAfter string) {
	t.Helper()
	if r.Status != 429 || r.Header.Get("Retry-After") != retryAfter || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d, Retry-After %q, Cache-Control %q; want 429, %s, no-store: %s", r.Status, r.Header.Get("Retry-After"),
			r.Header.Get("Cache-Control"), retryAfter, r.Body)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body) != 3 || body["error"] != "Too Many Requests" || body["message"] != LimitedMessage || body["statusCode"] != 429.0 {
		t.Fatalf("body %s, want only the generic message", r.Body)
	}
}
