package origin_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

func (o *testOrigin) batch(t testing.TB, creds apitest.Creds, body map[string]any) *apitest.Response {
	t.Helper()
	return o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/batch", Creds: &creds, JSON: body})
}

func box(w, h int, color string) string {
	return fmt.Sprintf(`<div style="width:%dpx;height:%dpx;background:%s"></div>`, w, h, color)
}

func TestBatchCreate(t *testing.T) {
	t.Parallel() // a slow test with its own origin: see startOrigin
	o := startOrigin(t)
	r := o.batch(t, o.Owner, map[string]any{
		"default_options": map[string]any{"html": box(10, 10, "red"), "device_scale": 1},
		"variations": []map[string]any{
			{},
			{"html": box(30, 20, "blue")},
			{"device_scale": 2},
			{"html": box(5, 5, "green"), "format": "jpg"},
		},
	})
	apitest.WantStatus(t, r, 200)
	for _, h := range []string{"x-renders-allowed", "x-renders-consumed", "x-renders-used"} {
		if r.Header.Get(h) == "" {
			t.Fatalf("batch answer lacks %s", h)
		}
	}
	if r.Header.Get("x-renders-consumed") != "4" {
		t.Fatalf("x-renders-consumed = %q, want 4", r.Header.Get("x-renders-consumed"))
	}
	var out struct{ Images []struct{ URL, ID string } }
	r.Decode(t, &out)
	want := []struct{ w, h int }{{10, 10}, {30, 20}, {20, 20}, {5, 5}}
	if len(out.Images) != len(want) {
		t.Fatalf("%d images", len(out.Images))
	}
	for i, img := range out.Images {
		if !strings.Contains(img.URL, img.ID) {
			t.Fatalf("image %d: url %s id %s", i, img.URL, img.ID)
		}
		apitest.WantSize(t, apitest.DecodeImage(t, o.get(t, img.URL)), want[i].w, want[i].h)
	}
	if !strings.HasSuffix(out.Images[3].URL, ".jpg") {
		t.Fatalf("format jpg variation url %s", out.Images[3].URL)
	}

	before := o.listIDs(t, o.Owner)
	tests := []struct {
		name string
		body map[string]any
		path string
	}{
		{"26 variations", map[string]any{"variations": slices.Repeat([]map[string]any{{"html": "x"}}, 26)}, "variations"},
		{"no variations", map[string]any{"variations": []map[string]any{}}, "variations"},
		{"missing variations", map[string]any{"default_options": map[string]any{"html": "x"}}, "variations"},
		{"variation not an object", map[string]any{"variations": []any{"x"}}, "variations[0]"},
		{"bad field in one variation", map[string]any{"variations": []map[string]any{{"html": "a"}, {"html": "b"}, {"html": "c"}, {"html": "d", "viewport_width": 0, "viewport_height": 10}}}, "variations[3].viewport_width"},
		{"source missing", map[string]any{"variations": []map[string]any{{"html": "a"}, {"css": "b"}}}, "variations[1].html"},
		{"default_options not an object", map[string]any{"default_options": "x", "variations": []map[string]any{{"html": "a"}}}, "default_options"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			apitest.WantField(t, o.batch(t, o.Owner, tc.body), tc.path)
		})
	}
	// Nothing was created by the refused batches.
	if after := o.listIDs(t, o.Owner); len(after) != len(before) {
		t.Fatalf("refused batches created images: %d → %d", len(before), len(after))
	}
}

// listIDs walks GET /v1/images.
func (o *testOrigin) listIDs(t testing.TB, creds apitest.Creds) []string {
	t.Helper()
	var ids []string
	tok := ""
	for {
		path := "/v1/images?count=50"
		if tok != "" {
			path += "&page_token=" + url.QueryEscape(tok)
		}
		r := o.do(t, apitest.Request{Method: "GET", Path: path, Creds: &creds})
		apitest.WantStatus(t, r, 200)
		var page struct {
			Images []struct {
				ID, URL   string
				CreatedAt string `json:"created_at"`
			}
			NextPageToken *string `json:"next_page_token"`
			HasNextPage   bool    `json:"has_next_page"`
		}
		r.Decode(t, &page)
		for _, img := range page.Images {
			ids = append(ids, img.ID)
		}
		if page.HasNextPage != (page.NextPageToken != nil) {
			t.Fatalf("has_next_page %v with token %v", page.HasNextPage, page.NextPageToken)
		}
		if !page.HasNextPage {
			return ids
		}
		tok = *page.NextPageToken
	}
}

func TestDeleteImages(t *testing.T) {
	o := startOrigin(t)
	_, otherCreds := o.newOrg(t.Context(), t, "pro")
	id, u := o.create(t, o.Owner, map[string]any{"html": redBox})
	for _, ext := range []string{"", ".jpg", ".webp", ".pdf"} {
		apitest.WantStatus(t, o.get(t, u+ext), 200)
	}
	foreignID, foreignURL := o.create(t, otherCreds, map[string]any{"html": redBox})
	apitest.WantStatus(t, o.get(t, foreignURL), 200)

	// Another organization's id is indistinguishable from an unknown one.
	missing := o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/01a20000-0000-7000-8000-000000000000", Creds: &o.Owner})
	apitest.WantError(t, missing, 404)
	foreign := o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/" + foreignID, Creds: &o.Owner})
	if foreign.Status != 404 || string(foreign.Body) != string(missing.Body) {
		t.Fatalf("foreign delete: %d %s", foreign.Status, foreign.Body)
	}
	r := o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/" + id, Creds: &o.Owner})
	apitest.WantStatus(t, r, 202)
	for _, ext := range []string{"", ".png", ".jpg", ".webp", ".pdf"} {
		apitest.WantError(t, o.get(t, u+ext), 404)
	}
	apitest.WantError(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/" + id, Creds: &o.Owner}), 404)
	if slices.Contains(o.listIDs(t, o.Owner), id) {
		t.Fatal("a deleted image is still listed")
	}

	// Batch delete: other organizations' ids are skipped silently.
	var ids []string
	for range 3 {
		id, _ := o.create(t, o.Owner, map[string]any{"html": redBox, "dedupe_duration_s": 0})
		ids = append(ids, id)
	}
	r = o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/batch", Creds: &o.Owner, JSON: map[string]any{"ids": append(ids, foreignID, "01a20000-0000-7000-8000-000000000001")}})
	apitest.WantStatus(t, r, 202)
	for _, id := range ids {
		apitest.WantError(t, o.get(t, "/v1/image/"+id), 404)
	}
	apitest.WantStatus(t, o.get(t, foreignURL), 200)
	apitest.WantField(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/batch", Creds: &o.Owner, JSON: map[string]any{"ids": []string{"nope"}}}), "ids[0]")
	apitest.WantField(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/batch", Creds: &o.Owner, JSON: map[string]any{}}), "ids")
	readOnly := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"images:read"}})
	apitest.WantMessage(t, apitest.WantError(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/" + foreignID, Creds: readOnly.creds()}), 403), "images:delete")
}

func TestListImages(t *testing.T) {
	o := startOrigin(t)
	var existing []string
	for i := range 30 {
		id, _ := o.create(t, o.Owner, map[string]any{"html": fmt.Sprint(i), "dedupe_duration_s": 0})
		existing = append(existing, id)
		o.Clock.Advance(time.Second)
	}
	got := o.listIDs(t, o.Owner)
	if len(got) != 30 || got[0] != existing[29] || got[29] != existing[0] {
		t.Fatalf("list is not newest first: %v", got)
	}
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/images", Creds: &o.Owner})
	var page struct {
		Images []struct {
			ID, URL   string
			CreatedAt string `json:"created_at"`
		}
	}
	r.Decode(t, &page)
	if len(page.Images) != 30 || page.Images[0].URL != o.URL+"/v1/image/"+existing[29] {
		t.Fatalf("default page: %d images, first %+v", len(page.Images), page.Images[0])
	}
	if _, err := time.Parse(time.RFC3339, page.Images[0].CreatedAt); err != nil {
		t.Fatalf("created_at %q", page.Images[0].CreatedAt)
	}

	// Walk in small pages while others create and delete images: every image
	// that exists throughout is seen exactly once.
	deleted := map[string]bool{existing[3]: true, existing[17]: true, existing[25]: true}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 10 {
			apitest.Send(o.URL, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"html": fmt.Sprint("new", i), "dedupe_duration_s": 0}})
		}
		for id := range deleted {
			apitest.Send(o.URL, apitest.Request{Method: "DELETE", Path: "/v1/image/" + id, Creds: &o.Owner})
		}
	}()
	seen := map[string]int{}
	tok := ""
	for {
		path := "/v1/images?count=4"
		if tok != "" {
			path += "&page_token=" + url.QueryEscape(tok)
		}
		r := o.do(t, apitest.Request{Method: "GET", Path: path, Creds: &o.Owner})
		apitest.WantStatus(t, r, 200)
		var page struct {
			Images        []struct{ ID string }
			NextPageToken *string `json:"next_page_token"`
		}
		r.Decode(t, &page)
		for _, img := range page.Images {
			seen[img.ID]++
		}
		if page.NextPageToken == nil {
			break
		}
		tok = *page.NextPageToken
	}
	wg.Wait()
	for id, n := range seen {
		if n > 1 {
			t.Fatalf("%s listed %d times", id, n)
		}
	}
	for _, id := range existing {
		if !deleted[id] && seen[id] != 1 {
			t.Fatalf("%s existed throughout and was listed %d times", id, seen[id])
		}
	}

	_, other := o.newOrg(t.Context(), t, "pro")
	if ids := o.listIDs(t, other); len(ids) != 0 {
		t.Fatalf("another organization sees %d images", len(ids))
	}
	for _, bad := range []struct{ path, field string }{
		{"/v1/images?count=51", "count"}, {"/v1/images?count=0", "count"}, {"/v1/images?page_token=forged", "page_token"},
	} {
		apitest.WantField(t, o.do(t, apitest.Request{Method: "GET", Path: bad.path, Creds: &o.Owner}), bad.field)
	}
}

// TestCreditsExactUnderConcurrency: a free organization (50 credits) with 10
// left gets exactly 10 of 50 parallel creations.
func TestCreditsExactUnderConcurrency(t *testing.T) {
	o := startOrigin(t)
	_, free := o.newOrg(t.Context(), t, "free")
	r := o.batch(t, free, map[string]any{"variations": slices.Repeat([]map[string]any{{"html": "x"}}, 25)})
	apitest.WantStatus(t, r, 200)
	r = o.batch(t, free, map[string]any{"variations": slices.Repeat([]map[string]any{{"html": "y"}}, 15)})
	apitest.WantStatus(t, r, 200)
	if r.Header.Get("x-renders-used") != "40" || r.Header.Get("x-renders-allowed") != "50" {
		t.Fatalf("after 40: used %q allowed %q", r.Header.Get("x-renders-used"), r.Header.Get("x-renders-allowed"))
	}
	var wg sync.WaitGroup
	results := make([]*apitest.Response, 50)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = apitest.Send(o.URL, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &free, JSON: map[string]any{"html": fmt.Sprint("p", i), "dedupe_duration_s": 0}})
		}()
	}
	wg.Wait()
	ok := 0
	for _, r := range results {
		switch {
		case r == nil:
			t.Fatal("request failed")
		case r.Status == 200:
			ok++
			if r.Header.Get("x-renders-consumed") != "1" {
				t.Fatalf("x-renders-consumed = %q", r.Header.Get("x-renders-consumed"))
			}
		case r.Status == 429:
			m := apitest.WantError(t, r, 429)
			if m["error"] != "Plan limit exceeded" {
				t.Fatalf("429 error %q", m["error"])
			}
			apitest.WantMessage(t, m, "50 of your 50")
		default:
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	}
	if ok != 10 {
		t.Fatalf("%d creations passed, want exactly 10", ok)
	}
	// Waiting does not help; the next billing period does.
	o.Clock.Advance(10 * time.Minute)
	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &free, JSON: map[string]any{"html": "late"}}), 429)
	apitest.WantError(t, o.batch(t, free, map[string]any{"variations": []map[string]any{{"html": "late"}}}), 429)
	o.Clock.Advance(32 * 24 * time.Hour)
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &free, JSON: map[string]any{"html": "next month"}})
	apitest.WantStatus(t, r, 200)
	if r.Header.Get("x-renders-used") != "1" {
		t.Fatalf("new period x-renders-used = %q", r.Header.Get("x-renders-used"))
	}
	// A jumbo image costs by its size.
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &free, JSON: map[string]any{"html": "big", "jumbo_max_width": 5000, "jumbo_max_height": 10000}})
	apitest.WantStatus(t, r, 200)
	if r.Header.Get("x-renders-consumed") != "5" {
		t.Fatalf("jumbo 5000x10000 consumed %q, want 5", r.Header.Get("x-renders-consumed"))
	}
}

func TestUsageReport(t *testing.T) {
	o := startOrigin(t)
	orgID, pro := o.newOrg(t.Context(), t, "pro")
	_ = orgID
	o.batch(t, pro, map[string]any{"variations": slices.Repeat([]map[string]any{{"html": "a"}}, 3)})
	o.Clock.Advance(2 * time.Hour)
	o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &pro, JSON: map[string]any{"html": "b"}})
	o.Clock.Advance(40 * 24 * time.Hour)
	o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &pro, JSON: map[string]any{"html": "c"}})
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &pro})
	apitest.WantStatus(t, r, 200)
	var rep struct {
		Data struct {
			Hour, Day, Month map[string]int
		}
		PerBillingPeriod []struct {
			TotalImages int     `json:"total_images"`
			Start       string  `json:"start"`
			End         *string `json:"end"`
		} `json:"per_billing_period"`
	}
	r.Decode(t, &rep)
	sum := func(m map[string]int) (n int) {
		for k, v := range m {
			if _, err := time.Parse(time.RFC3339, k); err != nil {
				t.Fatalf("bucket key %q", k)
			}
			n += v
		}
		return n
	}
	if sum(rep.Data.Day) != 5 || sum(rep.Data.Month) != 5 {
		t.Fatalf("days %v months %v", rep.Data.Day, rep.Data.Month)
	}
	if sum(rep.Data.Hour) != 1 { // the first four are older than 72 hours
		t.Fatalf("hours %v", rep.Data.Hour)
	}
	if len(rep.PerBillingPeriod) != 2 || rep.PerBillingPeriod[0].TotalImages != 4 || rep.PerBillingPeriod[0].End == nil ||
		rep.PerBillingPeriod[1].TotalImages != 1 || rep.PerBillingPeriod[1].End != nil {
		t.Fatalf("periods %+v", rep.PerBillingPeriod)
	}
	noUsage := o.createKey(t, pro, map[string]any{"permissions": []string{"images:create"}})
	apitest.WantMessage(t, apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: noUsage.creds()}), 403), "usage:read")
	// Usage is never rate limited.
	for range 120 {
		apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &pro}), 200)
	}
}

func TestDedupe(t *testing.T) {
	o := startOrigin(t)
	_, free := o.newOrg(t.Context(), t, "free")
	_, pro := o.newOrg(t.Context(), t, "pro")
	create := func(c apitest.Creds, body map[string]any) (string, string) {
		t.Helper()
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &c, JSON: body})
		apitest.WantStatus(t, r, 200)
		var out struct{ ID string }
		r.Decode(t, &out)
		return out.ID, r.Header.Get("x-renders-consumed")
	}
	first, consumed := create(o.Owner, map[string]any{"html": redBox})
	if consumed != "1" {
		t.Fatalf("first consumed %q", consumed)
	}
	again, consumed := create(o.Owner, map[string]any{"html": redBox, "dedupe_duration_s": 31536000})
	if again != first || consumed != "0" {
		t.Fatalf("dedupe hit: id %s (want %s), consumed %q", again, first, consumed)
	}
	if id, _ := create(o.Owner, map[string]any{"html": redBox, "dedupe_duration_s": 0}); id == first {
		t.Fatal("dedupe_duration_s 0 reused an image")
	}
	if id, _ := create(o.Owner, map[string]any{"html": redBox, "device_scale": 1}); id == first {
		t.Fatal("different parameters reused an image")
	}
	// The window is a lookback: old images are not reused.
	o.Clock.Advance(61 * time.Second)
	if id, _ := create(o.Owner, map[string]any{"html": redBox, "dedupe_duration_s": 60}); id == first {
		t.Fatal("an image older than the window was reused")
	}
	// URL renders do not dedupe by default.
	site := newSite(t, map[string]string{"/": doc("x")})
	u1, _ := create(o.Owner, map[string]any{"url": site.URL + "/"})
	u2, _ := create(o.Owner, map[string]any{"url": site.URL + "/"})
	if u1 == u2 {
		t.Fatal("url renders deduplicated without dedupe_duration_s")
	}
	// A deleted image is never returned.
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/" + first, Creds: &o.Owner}), 202)
	if id, _ := create(o.Owner, map[string]any{"html": redBox}); id == first {
		t.Fatal("a deleted image was returned by dedupe")
	}
	// Another organization never shares an image.
	if id, _ := create(pro, map[string]any{"html": redBox}); id == first {
		t.Fatal("dedupe crossed organizations")
	}
	// Plan rules.
	for _, tc := range []struct {
		creds apitest.Creds
		value int
		ok    bool
	}{
		{free, 2592000, true}, {free, 0, true}, {free, 100, false}, {pro, 100, true}, {pro, 15552000, true}, {pro, 15552001, false},
		{o.Owner, 31536000, true},
	} {
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &tc.creds, JSON: map[string]any{"html": "plan", "dedupe_duration_s": tc.value}})
		if tc.ok {
			apitest.WantStatus(t, r, 200)
		} else {
			apitest.WantField(t, r, "dedupe_duration_s")
		}
	}
}

func sign(secret, query string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(query))
	return hex.EncodeToString(m.Sum(nil))
}

func TestSignedURLs(t *testing.T) {
	o := startOrigin(t)
	_, pro := o.newOrg(t.Context(), t, "pro")
	query := "html=" + url.QueryEscape(redBox) + "&device_scale=1"
	signed := func(c apitest.Creds, q, format string) string {
		p := "/v1/image/create-and-render/" + c.APIID + "/" + sign(c.APIKey, q)
		if format != "" {
			p += "/" + format
		}
		return p + "?" + q
	}
	usedBefore := o.usage(t, pro)
	r := o.get(t, signed(pro, query, ""))
	apitest.WantStatus(t, r, 200)
	apitest.WantSize(t, apitest.DecodeImage(t, r), 400, 200)
	r2 := o.get(t, signed(pro, query, ""))
	apitest.WantStatus(t, r2, 200)
	// The same image: the stored master may have been recompressed since,
	// so compare pixels, not bytes.
	a, b := apitest.DecodeImage(t, r), apitest.DecodeImage(t, r2)
	if a.Bounds() != b.Bounds() || apitest.Pixel(a, 10, 10) != apitest.Pixel(b, 10, 10) {
		t.Fatal("the same signed URL gave different images")
	}
	jpg := o.get(t, signed(pro, query, "jpg"))
	apitest.WantSize(t, apitest.DecodeImage(t, jpg), 400, 200)
	if got := o.usage(t, pro) - usedBefore; got != 1 {
		t.Fatalf("the same signed image consumed %d credits, want 1", got)
	}
	other := "html=" + url.QueryEscape(redBox) + "&device_scale=2"
	apitest.WantSize(t, apitest.DecodeImage(t, o.get(t, signed(pro, other, "png"))), 800, 400)
	if got := o.usage(t, pro) - usedBefore; got != 2 {
		t.Fatalf("two distinct signed images consumed %d credits", got)
	}

	invalid := func(path string) {
		t.Helper()
		r := o.get(t, path)
		if r.Status != 401 || strings.TrimSpace(string(r.Body)) != `{"error":"Unauthorized","message":"Invalid token","statusCode":401}` {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
	}
	invalid("/v1/image/create-and-render/" + pro.APIID + "/" + strings.Repeat("0", 64) + "?" + query)
	invalid("/v1/image/create-and-render/" + pro.APIID + "/" + sign(pro.APIKey, query) + "?" + query + "&device_scale=3")
	invalid("/v1/image/create-and-render/" + pro.APIID + "/" + sign(o.Owner.APIKey, query) + "?" + query)
	invalid("/v1/image/create-and-render/unknown-api-id/" + sign(pro.APIKey, query) + "?" + query)

	// A disabled key's URLs stop working.
	k := o.createKey(t, pro, map[string]any{"permissions": []string{"images:create"}})
	kc := apitest.Creds{APIID: k.APIID, APIKey: k.APIKey}
	apitest.WantStatus(t, o.get(t, signed(kc, query, "")), 200)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + k.ID, Creds: &pro}), 204)
	invalid(signed(kc, query, ""))
	// Bad parameters inside a valid signature are a 400.
	bad := "html=x&viewport_width=10"
	apitest.WantField(t, o.get(t, signed(pro, bad, "")), "viewport_height")
}

// usage returns the credits used in the current period.
func (o *testOrigin) usage(t *testing.T, c apitest.Creds) int {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &c})
	var rep struct {
		PerBillingPeriod []struct {
			TotalImages int `json:"total_images"`
		} `json:"per_billing_period"`
	}
	r.Decode(t, &rep)
	return rep.PerBillingPeriod[len(rep.PerBillingPeriod)-1].TotalImages
}

func TestSuspendedOrganizationImages(t *testing.T) {
	o := startOrigin(t)
	orgID, creds := o.newOrg(t.Context(), t, "pro")
	_, u := o.create(t, creds, map[string]any{"html": redBox})
	apitest.WantStatus(t, o.get(t, u), 200)
	c, _ := admin.Dial(o.DataDir)
	if _, err := c.SetSuspended(t.Context(), orgID, true); err != nil {
		t.Fatal(err)
	}
	apitest.WantError(t, o.get(t, u), 404)
	apitest.WantError(t, o.get(t, u+".jpg"), 404)
	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &creds, JSON: map[string]any{"html": "x"}}), 401)
	if _, err := c.SetSuspended(t.Context(), orgID, false); err != nil {
		t.Fatal(err)
	}
	apitest.WantStatus(t, o.get(t, u), 200)
}
