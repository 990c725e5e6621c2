package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/og"
)

// TestHostileOGFlood: issue 27, defect 1. A site that answers 200 for
// every path, of a free organization (50 credits), is flooded through the
// edge with distinct made-up paths from 40 client addresses at once. The
// OG images spend exactly the configuration's cap (10 new images a period
// on the free plan), every other answer is the generic 429 with
// Retry-After and nothing of the organization's usage, the cards made
// keep being served, and the organization's own POST /v1/image still
// succeeds. The origin limits new pages per client address, which it
// learns from the edge (X-Forwarded-For): the flood's 6 paths an address
// stay under it, one address asking for 31 is refused.
func TestHostileOGFlood(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><head><title>App</title></head><body style="margin:0;background:rgb(0,128,255)"></body></html>`)
	}))
	defer site.Close()
	dir := t.TempDir()
	s := startServe(t, dir, nil)
	tiny := orgCreate(t, dir, "tiny", "free")
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: &tiny, JSON: map[string]any{"config_type": "html_css", "base_url": site.URL}})
	apitest.WantStatus(t, r, 200)
	var cfg struct {
		DomainID string `json:"domain_id"`
		Limits   struct {
			PerPeriod int `json:"new_images_per_period"`
		} `json:"limits"`
	}
	r.Decode(t, &cfg)
	if cfg.Limits.PerPeriod != 10 {
		t.Fatalf("a free configuration may make %d new images a period, want 10", cfg.Limits.PerPeriod)
	}
	path := func(p string) string { return "/v1/og/" + cfg.DomainID + p }
	get := func(from, p string) (*apitest.Response, error) { return floodGetFrom(s.URL, from, path(p)) }

	// A card made before the flood.
	kept, err := get("127.0.0.2", "/kept")
	if err != nil {
		t.Fatal(err)
	}
	apitest.WantStatus(t, kept, 200)

	// The flood: 40 addresses, 6 made-up paths each, all at once.
	const addresses, each = 40, 6
	type answer struct {
		path string
		r    *apitest.Response
	}
	answers := make(chan answer, addresses*each)
	var wg sync.WaitGroup
	for a := range addresses {
		from := fmt.Sprintf("127.0.0.%d", 10+a)
		for i := range each {
			wg.Go(func() {
				p := fmt.Sprintf("/x-%d-%d", a, i)
				r, err := get(from, p)
				if err != nil {
					t.Error(err)
					return
				}
				answers <- answer{p, r}
			})
		}
	}
	wg.Wait()
	close(answers)
	if t.Failed() {
		t.FailNow()
	}
	var cards []string
	for a := range answers {
		switch a.r.Status {
		case 200:
			cards = append(cards, a.path)
		case 429:
			floodWantRefusal(t, a.r)
		default:
			t.Fatalf("%s: %d %s", a.path, a.r.Status, a.r.Body)
		}
	}
	if len(cards) != 9 {
		t.Fatalf("the flood made %d cards, want the 9 the cap had left", len(cards))
	}
	if used := floodCreditsUsed(t, s, tiny); used != 10 {
		t.Fatalf("%d credits spent, want exactly the cap of 10", used)
	}
	if n := apitest.Metric(t, s.OriginURL, `pictor_og_refused_total{reason="client"}`); n != 0 {
		t.Fatalf("%v flood requests refused by the per-address limit: the origin did not tell the addresses apart", n)
	}

	// One address asking for 31 new pages: the 31st is refused by its
	// own limit (its first 30 by the spent cap), in the same words.
	for i := range 31 {
		r, err := get("127.0.0.200", fmt.Sprintf("/y-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		floodWantRefusal(t, r)
		if i == 30 && r.Header.Get("Retry-After") != "2" {
			t.Fatalf("the address's refusal says Retry-After %q, want 2 (30 a minute)", r.Header.Get("Retry-After"))
		}
	}
	if n := apitest.Metric(t, s.OriginURL, `pictor_og_refused_total{reason="client"}`); n != 1 {
		t.Fatalf("%v requests refused by the per-address limit, want 1", n)
	}

	// The cards made keep being served, through the edge and by the
	// origin itself; nothing more was spent.
	for _, p := range []string{"/kept", cards[0]} {
		r, err := get("127.0.0.3", p)
		if err != nil {
			t.Fatal(err)
		}
		apitest.WantStatus(t, r, 200)
		apitest.WantStatus(t, apitest.Do(t, s.OriginURL, apitest.Request{Method: "GET", Path: path(p)}), 200)
	}
	if used := floodCreditsUsed(t, s, tiny); used != 10 {
		t.Fatalf("%d credits spent after the flood, want 10", used)
	}
	// The organization's own images are not held up.
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &tiny, JSON: map[string]any{"html": "<p>mine</p>"}}), 200)
}

// floodGetFrom asks base for path over a connection from a loopback source
// address.
func floodGetFrom(base, from, path string) (*apitest.Response, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// floodWantRefusal: a 429 that is never kept, says when to come back,
// and says nothing but the generic message (no usage, no reason).
func floodWantRefusal(t *testing.T, r *apitest.Response) {
	t.Helper()
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if r.Status != 429 || err != nil || secs < 1 || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d, Retry-After %q, Cache-Control %q: %s", r.Status, r.Header.Get("Retry-After"), r.Header.Get("Cache-Control"), r.Body)
	}
	want, _ := json.Marshal(map[string]any{"error": "Too Many Requests", "message": og.LimitedMessage, "statusCode": 429})
	var got, wantMap map[string]any
	json.Unmarshal(want, &wantMap)
	if json.Unmarshal(r.Body, &got) != nil || fmt.Sprint(got) != fmt.Sprint(wantMap) {
		t.Fatalf("refusal body %s, want only %s", r.Body, want)
	}
}

// floodCreditsUsed is what the organization spent in its current billing
// period (GET /v1/usage).
func floodCreditsUsed(t *testing.T, s *server, c apitest.Creds) int {
	t.Helper()
	r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &c})
	apitest.WantStatus(t, r, 200)
	var rep struct {
		PerBillingPeriod []struct {
			TotalImages int `json:"total_images"`
		} `json:"per_billing_period"`
	}
	r.Decode(t, &rep)
	if len(rep.PerBillingPeriod) == 0 {
		return 0
	}
	return rep.PerBillingPeriod[len(rep.PerBillingPeriod)-1].TotalImages
}
