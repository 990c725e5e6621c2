package oauth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/pictorhq/pictor/kv"
)

// unlimitedRegistrations lets a test register as often as it needs: the
// caps on unfinished clients, not the rate limits, are under test.
func unlimitedRegistrations(c *Config) {
	c.RegistrationsPerAddress = Limit{N: 100_000, Per: time.Minute, Burst: 100_000}
	c.Registrations = Limit{N: 100_000, Per: time.Minute, Burst: 100_000}
}

// registered registers a public client from address (as the edge
// relays it) and returns its id.
func (e *env) registered(t *testing.T, address string) string {
	t.Helper()
	a := e.registerFrom(t, address)
	if a.status != http.StatusCreated {
		t.Fatalf("registration from %s: status %d %s", address, a.status, a.body)
	}
	return a.json(t)["client_id"].(string)
}

// wantPending fails unless the store counts n unfinished clients, with as
// many index entries (of all and per address) and client records that
// have never been used.
func wantPending(t *testing.T, store kv.Store, n int) {
	t.Helper()
	count, err := pendingCount(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	unused := 0
	it := store.Iterate(t.Context(), []byte(prefixClient), kv.IterOptions{})
	defer it.Close()
	for it.Next() {
		var c client
		if err := json.Unmarshal(it.Value(), &c); err != nil {
			t.Fatal(err)
		}
		if c.LastUsed.IsZero() {
			unused++
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	all, perAddress := countKeys(t, store, prefixPending), countKeys(t, store, prefixPendingAddr)
	if count != n || all != n || perAddress != n || unused != n {
		t.Fatalf("count %d, index entries %d and %d per address, unused clients %d; want %d of each", count, all, perAddress, unused, n)
	}
}

// evicted is e's count of evictions for limit.
func evicted(e *env, limit string) int {
	var m dto.Metric
	if err := e.srv.evicted.WithLabelValues(limit).Write(&m); err != nil {
		panic(err)
	}
	return int(m.GetCounter().GetValue())
}

// TestHostileRegistrationStorage: unfinished clients (never redeemed a
// code) are capped over the store, which two origins share: past the cap
// a registration removes the oldest unfinished client, never one that
// redeemed a code, however old; the removed client's authorization shows
// the unknown-application page; the count stays exact through a first
// use and a sweep.
func TestHostileRegistrationStorage(t *testing.T) {
	if got := DefaultConfig(); got.MaxUnfinishedClients != 20_000 || got.MaxUnfinishedClientsPerAddress != 100 {
		t.Fatalf("default caps %d and %d per address, want 20,000 and 100", got.MaxUnfinishedClients, got.MaxUnfinishedClientsPerAddress)
	}
	const limit = 6
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) {
			envs := newEnvPair(t, tc.Pair(t), unlimitedRegistrations, func(c *Config) {
				c.MaxUnfinishedClients, c.MaxUnfinishedClientsPerAddress = limit, limit
			})
			store := envs[0].store
			advance := func(d time.Duration) {
				for _, e := range envs {
					e.clock.Advance(d)
				}
			}
			// The oldest registration of all redeems a code.
			used := envs[0].registered(t, "198.51.100.1")
			envs[0].tokens(t, envs[0].approve(t, used, "", perms("images:read"), "images:read"))
			wantPending(t, store, 0)

			// limit unfinished clients from as many addresses, registered
			// in turn on both origins.
			var pending []string
			for i := range limit {
				advance(time.Millisecond)
				pending = append(pending, envs[i%2].registered(t, fmt.Sprintf("203.0.113.%d", i+1)))
			}
			wantPending(t, store, limit)

			// Three more: the three oldest unfinished go, the used client stays.
			for i := range 3 {
				advance(time.Millisecond)
				pending = append(pending, envs[i%2].registered(t, fmt.Sprintf("192.0.2.%d", i+1)))
			}
			wantPending(t, store, limit)
			for _, id := range pending[:3] {
				if _, found := clientRecord(t, store, id); found {
					t.Fatalf("client %s, among the oldest unfinished, is kept", id)
				}
				envs[1].unknownClientPage(t, id)
			}
			for _, id := range append([]string{used}, pending[3:]...) {
				if _, found := clientRecord(t, store, id); !found {
					t.Fatalf("client %s was removed", id)
				}
			}
			if got := evicted(envs[0], "total") + evicted(envs[1], "total"); got != 3 {
				t.Fatalf("%d evictions counted, want 3", got)
			}
			if evicted(envs[0], "address")+evicted(envs[1], "address") != 0 {
				t.Fatal("evictions counted against an address")
			}
			// The used client keeps working.
			envs[1].tokens(t, envs[0].approve(t, used, "", perms("images:read"), "images:read"))

			// An unfinished client that redeems a code leaves the count;
			// the others expire and leave it too.
			envs[1].tokens(t, envs[0].approve(t, pending[len(pending)-1], "", perms("images:read"), "images:read"))
			wantPending(t, store, limit-1)
			advance(envs[0].cfg.UnusedClientTTL)
			if _, err := envs[0].srv.Sweep(t.Context(), envs[0].clock.Now()); err != nil {
				t.Fatal(err)
			}
			wantPending(t, store, 0)
			if got := countKeys(t, store, prefixClient); got != 2 {
				t.Fatalf("%d clients after the sweep, want the two used", got)
			}
		})
	}
}

// TestHostileRegistrationPerAddress: one address keeps at most
// MaxUnfinishedClientsPerAddress unfinished clients (IPv6: per /64); past
// it, its own oldest go and no one else's.
func TestHostileRegistrationPerAddress(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, unlimitedRegistrations, func(c *Config) {
		c.MaxUnfinishedClients, c.MaxUnfinishedClientsPerAddress, c.Registerer = 100, 3, reg
	})
	other := e.registered(t, "198.51.100.1")
	var mine []string
	for i := range 5 {
		e.clock.Advance(time.Millisecond)
		// Any address of one /64 is the same registrant.
		mine = append(mine, e.registered(t, fmt.Sprintf("2001:db8::%x", i+1)))
	}
	wantPending(t, e.store, 4)
	for _, id := range mine[:2] {
		e.unknownClientPage(t, id)
	}
	for _, id := range append([]string{other}, mine[2:]...) {
		if _, found := clientRecord(t, e.store, id); !found {
			t.Fatalf("client %s was removed", id)
		}
	}
	if got := countKeys(t, e.store, pendingAddrPrefix("2001:db8::/64")); got != 3 {
		t.Fatalf("%d entries of the /64, want 3", got)
	}
	if evicted(e, "address") != 2 || evicted(e, "total") != 0 {
		t.Fatalf("evictions: %d for the address, %d for the total; want 2 and 0", evicted(e, "address"), evicted(e, "total"))
	}
	// The metric is registered.
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "pictor_oauth_unfinished_clients_evicted_total" {
				got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if got["address"] != 2 || got["total"] != 0 || len(got) != 2 {
		t.Fatalf("gathered %v, want address 2, total 0", got)
	}
}

// TestHostileRegistrationConcurrent: two origins registering at once from
// a few addresses never keep more than either cap: the count, the index
// and the clients agree exactly.
func TestHostileRegistrationConcurrent(t *testing.T) {
	const (
		total, perAddress = 20, 5
		addresses         = 6 // 30 allowed by address: the total binds too
		workers, each     = 8, 6
	)
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) {
			envs := newEnvPair(t, tc.Pair(t), unlimitedRegistrations, func(c *Config) {
				c.MaxUnfinishedClients, c.MaxUnfinishedClientsPerAddress = total, perAddress
			})
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := range workers {
				wg.Go(func() {
					<-start
					for i := range each {
						a := envs[w%2].registerFrom(t, fmt.Sprintf("203.0.113.%d", (w*each+i)%addresses+1))
						if a.status != http.StatusCreated {
							t.Errorf("status %d %s", a.status, a.body)
							return
						}
					}
				})
			}
			close(start)
			wg.Wait()
			if t.Failed() {
				return
			}
			store := envs[0].store
			wantPending(t, store, total)
			for i := range addresses {
				if got := countKeys(t, store, pendingAddrPrefix(fmt.Sprintf("203.0.113.%d", i+1))); got > perAddress {
					t.Fatalf("address %d keeps %d unfinished clients, more than %d", i+1, got, perAddress)
				}
			}
			n := 0
			for _, e := range envs {
				n += evicted(e, "total") + evicted(e, "address")
			}
			if n != workers*each-total {
				t.Fatalf("%d evictions counted, want %d", n, workers*each-total)
			}
		})
	}
}

// TestRegisterSizeLimits: what a client record holds is bounded: ten
// redirect URIs of 1 KiB each at most and 2 KiB together, a name of 200
// characters; the largest registration the limits allow is stored in
// at most 6.5 KiB, escapes included.
func TestRegisterSizeLimits(t *testing.T) {
	e := newEnv(t, unlimitedRegistrations)
	uri := func(n int, fill string) string {
		head := "https://app.example/cb?"
		return head + strings.Repeat(fill, (n-len(head))/len(fill))
	}
	uris := func(uris ...string) string {
		b, _ := json.Marshal(uris)
		return string(b)
	}
	tests := []struct {
		name     string
		body     string
		status   int
		code     string
		describe string // in error_description
	}{
		{"a URI of 1024 bytes", `{"redirect_uris":` + uris(uri(1024, "a")) + `}`, 201, "", ""},
		{"a URI of 1025 bytes", `{"redirect_uris":` + uris(uri(1025, "a")) + `}`, 400, "invalid_redirect_uri", "redirect_uris[0] must be at most 1024 bytes"},
		{"the second URI too long", `{"redirect_uris":` + uris("https://app.example/cb", uri(1025, "a")) + `}`, 400, "invalid_redirect_uri", "redirect_uris[1]"},
		{"ten URIs of 204 bytes", `{"redirect_uris":` + uris(uri(204, "a"), uri(204, "b"), uri(204, "c"), uri(204, "d"), uri(204, "e"), uri(204, "f"), uri(204, "g"), uri(204, "h"), uri(204, "i"), uri(204, "j")) + `}`, 201, "", ""},
		{"two URIs of 1024 bytes", `{"redirect_uris":` + uris(uri(1024, "a"), uri(1024, "b")) + `}`, 201, "", ""},
		{"three URIs of 700 bytes", `{"redirect_uris":` + uris(uri(700, "a"), uri(700, "b"), uri(700, "c")) + `}`, 400, "invalid_redirect_uri", "redirect_uris must be at most 2048 bytes together"},
		{"eleven URIs", `{"redirect_uris":` + uris("https://a/1", "https://a/2", "https://a/3", "https://a/4", "https://a/5", "https://a/6", "https://a/7", "https://a/8", "https://a/9", "https://a/10", "https://a/11") + `}`, 400, "invalid_redirect_uri", "at most 10 redirect_uris"},
		{"a name of 200 characters", `{"redirect_uris":["https://app.example/cb"],"client_name":"` + strings.Repeat("😀", 200) + `"}`, 201, "", ""},
		{"a name of 201 characters", `{"redirect_uris":["https://app.example/cb"],"client_name":"` + strings.Repeat("n", 201) + `"}`, 400, "invalid_client_metadata", "client_name must be at most 200 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := e.postJSON(t, "/oauth/register", tt.body)
			if tt.status == http.StatusCreated {
				if a.status != http.StatusCreated {
					t.Fatalf("status %d %s", a.status, a.body)
				}
				return
			}
			wantOAuthError(t, a, tt.status, tt.code)
			if got, _ := a.json(t)["error_description"].(string); !strings.Contains(got, tt.describe) {
				t.Fatalf("error_description %q, want it to say %q", got, tt.describe)
			}
		})
	}

	// What JSON escapes most: quotes and backslashes (doubled), HTML
	// characters (six bytes each if escaped), U+2028 in the name (three
	// bytes written as six); every scope there is.
	var scopes []string
	for _, p := range e.cfg.Scopes {
		scopes = append(scopes, string(p))
	}
	for _, fill := range []string{`"`, `\`, `&`, `<`} {
		t.Run("the largest record, URIs of "+fill, func(t *testing.T) {
			var big []string
			for range maxRedirectURIs {
				big = append(big, uri(maxRedirectURIsBytes/maxRedirectURIs, fill))
			}
			body, _ := json.Marshal(map[string]any{
				"redirect_uris": big, "client_name": strings.Repeat("\u2028", maxClientName),
				"scope": strings.Join(scopes, " "), "token_endpoint_auth_method": "client_secret_post",
			})
			a := e.postJSON(t, "/oauth/register", string(body))
			if a.status != http.StatusCreated {
				t.Fatalf("status %d %s", a.status, a.body)
			}
			raw, found := clientRecord(t, e.store, a.json(t)["client_id"].(string))
			if !found {
				t.Fatal("not stored")
			}
			if len(raw) > 6656 {
				t.Fatalf("the client is stored in %d bytes, more than 6.5 KiB", len(raw))
			}
			t.Logf("stored in %d bytes", len(raw))
		})
	}
}
