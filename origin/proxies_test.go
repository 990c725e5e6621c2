package origin_test

import (
	"bytes"
	"fmt"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/egress/tinyproxytest"
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

// TestRenderThroughProxy renders a URL through a real tinyproxy named by
// proxy_id: the site sees tinyproxy's address and tinyproxy logged the
// request, while a render without proxy_id reaches the site directly; a
// proxy that refuses the credentials fails the GET with 502 naming the
// proxy, never its password.
func TestRenderThroughProxy(t *testing.T) {
	tp := tinyproxytest.Start(t)
	var mu sync.Mutex
	seen := map[string][]string{} // path → remote addresses
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remote, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		seen[r.URL.Path] = append(seen[r.URL.Path], remote)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><body style="margin:0;background:rgb(0,0,255)"><div style="width:200px;height:100px"></div></body></html>`)
	}))
	defer site.Close()
	o := startOrigin(t)
	newProxy := func(password string) string {
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies", Creds: &o.Owner, JSON: map[string]any{
			"name": "tiny", "url": "http://127.0.0.1", "port": tp.Port,
			"authentication": map[string]any{"username": tinyproxytest.User, "password": password}}})
		apitest.WantStatus(t, r, 200)
		var p struct{ ID string }
		r.Decode(t, &p)
		return p.ID
	}
	good, bad := newProxy(tinyproxytest.Password), newProxy("wrong-password-123")

	_, proxied := o.create(t, o.Owner, map[string]any{"url": site.URL + "/proxied", "proxy_id": good})
	_, direct := o.create(t, o.Owner, map[string]any{"url": site.URL + "/direct"})
	for _, u := range []string{proxied, direct} {
		r := apitest.Do(t, u, apitest.Request{Method: "GET"})
		apitest.WantStatus(t, r, 200)
		if _, err := png.Decode(bytes.NewReader(r.Body)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	p, d := seen["/proxied"], seen["/direct"]
	mu.Unlock()
	if len(p) == 0 || len(d) == 0 {
		t.Fatalf("site saw proxied %v, direct %v", p, d)
	}
	for _, a := range p {
		if a != tinyproxytest.Out {
			t.Fatalf("the proxied render reached the site from %s, not through tinyproxy (%s)", a, tinyproxytest.Out)
		}
	}
	for _, a := range d {
		if a == tinyproxytest.Out {
			t.Fatal("the render without proxy_id went through tinyproxy")
		}
	}
	log := strings.Join(tp.Requests(t), "\n")
	if !strings.Contains(log, "/proxied") || strings.Contains(log, "/direct") {
		t.Fatalf("tinyproxy's log:\n%s", log)
	}

	// Wrong credentials: 502 naming the proxy, not the password. (Over
	// https: tinyproxy answers a plain-http request with bad credentials
	// 401, which cannot be told from the site's own 401; its refusal of a
	// CONNECT can.)
	_, refused := o.create(t, o.Owner, map[string]any{"url": "https://site.example/refused", "proxy_id": bad})
	r := apitest.Do(t, refused, apitest.Request{Method: "GET"})
	m := apitest.WantError(t, r, 502)
	apitest.WantMessage(t, m, "proxy 127.0.0.1:")
	if strings.Contains(string(r.Body), "wrong-password-123") {
		t.Fatal("the answer holds the proxy's password")
	}

	// An unknown proxy at creation: 404; a free plan: 403.
	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner,
		JSON: map[string]any{"url": site.URL, "proxy_id": "01a20000-0000-7000-8000-000000000000"}}), 404)
	_, free := o.newOrg(t, "free")
	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &free,
		JSON: map[string]any{"url": site.URL, "proxy_id": good}}), 403)
}
