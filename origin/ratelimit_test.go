package origin_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

func TestRateLimitHeaders(t *testing.T) {
	o := startOrigin(t)
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &o.Owner})
	apitest.WantStatus(t, r, 200)
	if got := r.Header.Get("RateLimit-Policy"); got != `"api-key:read";q=100;w=60` {
		t.Fatalf("RateLimit-Policy = %q", got)
	}
	if got := r.Header.Get("RateLimit"); got != `"api-key:read";r=99` {
		t.Fatalf("RateLimit = %q", got)
	}
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &o.Owner, JSON: map[string]any{"permissions": []string{}}})
	if got := r.Header.Get("RateLimit"); got != `"api-key:write";r=19` {
		t.Fatalf("write RateLimit = %q", got)
	}
	// Headers come after the auth and permission checks: none on a 401 or 403.
	r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys"})
	if r.Header.Get("RateLimit") != "" {
		t.Fatal("RateLimit header on an unauthenticated request")
	}
	// Healthz is not a management route.
	if r := o.do(t, apitest.Request{Method: "GET", Path: "/healthz"}); r.Header.Get("RateLimit-Policy") != "" {
		t.Fatal("RateLimit-Policy on /healthz")
	}
}

// TestRateLimitExactUnderConcurrency sends 40 parallel writes from two keys
// of one organization: exactly 20 pass, the rest get 429.
func TestRateLimitExactUnderConcurrency(t *testing.T) {
	o := startOrigin(t)
	second := o.createKey(t, o.Owner, map[string]any{"permissions": []string{}, "all_future_permissions": true})
	o.nextWindow()
	var wg sync.WaitGroup
	results := make([]*apitest.Response, 40)
	errs := make([]error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &o.Owner
			if i%2 == 1 {
				c = second.creds()
			}
			results[i], errs[i] = apitest.Send(o.URL, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: c, JSON: map[string]any{"permissions": []string{}}})
		}()
	}
	wg.Wait()
	ok, limited := 0, 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		switch r.Status {
		case 200:
			ok++
		case 429:
			limited++
			m := apitest.WantError(t, r, http.StatusTooManyRequests)
			apitest.WantMessage(t, m, "api-key:write")
			secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
			if err != nil || secs < 1 || secs > 60 {
				t.Fatalf("Retry-After = %q", r.Header.Get("Retry-After"))
			}
			if got := r.Header.Get("RateLimit"); got != `"api-key:write";r=0` {
				t.Fatalf("RateLimit on 429 = %q", got)
			}
		default:
			t.Fatalf("unexpected status %d: %s", r.Status, r.Body)
		}
	}
	if ok != 20 || limited != 20 {
		t.Fatalf("%d passed and %d limited, want 20 and 20", ok, limited)
	}

	// Reads have their own group; another organization has its own allowance.
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &o.Owner}), 200)
	_, other := o.newOrg(t.Context(), t, "pro")
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &other, JSON: map[string]any{"permissions": []string{}}}), 200)

	// Waiting does help: the window slides.
	o.Clock.Advance(59 * time.Second)
	apitest.WantError(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + second.ID, Creds: &o.Owner}), 429)
	o.Clock.Advance(2 * time.Second)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + second.ID, Creds: &o.Owner}), 204)
}

func TestRateLimitReads(t *testing.T) {
	o := startOrigin(t)
	for i := range 100 {
		r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &o.Owner})
		if r.Status != 200 {
			t.Fatalf("read %d: %d", i, r.Status)
		}
	}
	m := apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys/" + "01a20000-0000-7000-8000-000000000000", Creds: &o.Owner}), 429)
	apitest.WantMessage(t, m, "api-key:read")
	// Writes are a separate group.
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &o.Owner, JSON: map[string]any{"permissions": []string{}}}), 200)
}
