package origin_test

import (
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestProxies drives the proxy API through the whole origin: a create
// answers without the password, a plan without delivery options is
// refused before the rate limit, another organization sees nothing.
func TestProxies(t *testing.T) {
	o := startOrigin(t)
	const password = "pr0xy-pa55word-never-shown"
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies", Creds: &o.Owner, JSON: map[string]any{
		"name": "office", "url": "http://proxy.example.com", "port": 3128,
		"authentication": map[string]any{"username": "bob", "password": password}, "bypass_hosts": []string{"CDN.example.com"}}})
	apitest.WantStatus(t, r, 200)
	if strings.Contains(string(r.Body), password) {
		t.Fatal("the create answer holds the password")
	}
	var p struct {
		ID          string
		Username    string
		BypassHosts []string `json:"bypass_hosts"`
		Enabled     bool
	}
	r.Decode(t, &p)
	if p.ID == "" || p.Username != "bob" || !p.Enabled || len(p.BypassHosts) != 1 || p.BypassHosts[0] != "cdn.example.com" {
		t.Fatalf("created %s", r.Body)
	}
	for _, path := range []string{"/v1/proxies", "/v1/proxies/" + p.ID} {
		r := o.do(t, apitest.Request{Method: "GET", Path: path, Creds: &o.Owner})
		apitest.WantStatus(t, r, 200)
		if strings.Contains(string(r.Body), password) {
			t.Fatalf("GET %s shows the password", path)
		}
	}

	// A free organization's owner holds every permission, and is refused:
	// 403 naming the plan, costing no allowance.
	_, free := o.newOrg(t, "free")
	r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies", Creds: &free})
	apitest.WantMessage(t, apitest.WantError(t, r, 403), "pro plan")
	if r.Header.Get("RateLimit") != "" {
		t.Fatalf("the plan refusal carries RateLimit %q", r.Header.Get("RateLimit"))
	}
	// Another organization on a delivery plan sees nothing of the first's.
	_, other := o.newOrg(t, "pro")
	apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies/" + p.ID, Creds: &other}), 404)

	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/proxies/" + p.ID, Creds: &o.Owner}), 204)
	apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies/" + p.ID, Creds: &o.Owner}), 404)
}
