package origin_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
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
	_, free := o.newOrg(t.Context(), t, "free")
	r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies", Creds: &free})
	apitest.WantMessage(t, apitest.WantError(t, r, 403), "pro plan")
	if r.Header.Get("RateLimit") != "" {
		t.Fatalf("the plan refusal carries RateLimit %q", r.Header.Get("RateLimit"))
	}
	// Another organization on a delivery plan sees nothing of the first's.
	_, other := o.newOrg(t.Context(), t, "pro")
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
	_, free := o.newOrg(t.Context(), t, "free")
	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &free,
		JSON: map[string]any{"url": site.URL, "proxy_id": good}}), 403)
}

// hitLog records which address each path of a test site was fetched from.
type hitLog struct {
	mu   sync.Mutex
	from map[string][]string // path → remote addresses
}

// serve starts a site on addr answering every path with a 1×1 PNG and
// recording it.
func (l *hitLog) serve(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remote, _, _ := net.SplitHostPort(r.RemoteAddr)
		l.mu.Lock()
		l.from[r.URL.Path] = append(l.from[r.URL.Path], remote)
		l.mu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(onePixelPNG)
	}))
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s.URL
}

// froms returns the addresses path was fetched from.
func (l *hitLog) froms(path string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.from[path]...)
}

// onePixelPNG is a 1×1 opaque white PNG.
var onePixelPNG = func() []byte {
	var b bytes.Buffer
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Pix = []uint8{255, 255, 255, 255}
	png.Encode(&b, img)
	return b.Bytes()
}()

// TestProxyRoutesEveryRender: proxy_id routes every kind of render
// through a real tinyproxy — HTML whose assets load through it, a batch
// variation, a template that names the proxy (created by POST and through a
// signed URL) — while its bypass host goes direct and renders without it,
// running at the same time, never touch it. A proxy nothing listens on
// fails the GET with 502 naming it.
func TestProxyRoutesEveryRender(t *testing.T) {
	tp := tinyproxytest.Start(t)
	hits := &hitLog{from: map[string][]string{}}
	site := hits.serve(t, "127.0.0.1:0")
	bypassed := hits.serve(t, "127.0.0.3:0") // any 127/8 address is loopback
	o := startOrigin(t)
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies", Creds: &o.Owner, JSON: map[string]any{
		"name": "tiny", "url": "http://127.0.0.1", "port": tp.Port, "bypass_hosts": []string{"127.0.0.3"},
		"authentication": map[string]any{"username": tinyproxytest.User, "password": tinyproxytest.Password}}})
	apitest.WantStatus(t, r, 200)
	var proxy struct{ ID string }
	r.Decode(t, &proxy)
	page := func(paths ...string) string {
		var b strings.Builder
		for _, p := range paths {
			fmt.Fprintf(&b, `<img src="%s" width="10" height="10">`, p)
		}
		return b.String()
	}

	// Every kind of render, proxied and not, made at once.
	var urls []string
	_, u := o.create(t, o.Owner, map[string]any{"html": page(site+"/html-via", bypassed+"/html-bypass"), "proxy_id": proxy.ID})
	urls = append(urls, u)
	for i := range 3 {
		_, u := o.create(t, o.Owner, map[string]any{"html": page(fmt.Sprintf("%s/concurrent-direct-%d", site, i))})
		urls = append(urls, u)
	}
	r = o.batch(t, o.Owner, map[string]any{"variations": []any{
		map[string]any{"html": page(site + "/batch-via"), "proxy_id": proxy.ID},
		map[string]any{"html": page(site + "/batch-direct")},
	}})
	apitest.WantStatus(t, r, 200)
	var batch struct{ Images []struct{ URL string } }
	r.Decode(t, &batch)
	for _, img := range batch.Images {
		urls = append(urls, img.URL)
	}
	tpl, _ := o.saveTemplate(t, o.Owner, map[string]any{"html": page(site + "/tpl-{{n}}"), "proxy_id": proxy.ID})
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/image/" + tpl, Creds: &o.Owner,
		JSON: map[string]any{"template_values": map[string]any{"n": "posted"}}})
	apitest.WantStatus(t, r, 200)
	var posted struct{ URL string }
	r.Decode(t, &posted)
	urls = append(urls, posted.URL, fmt.Sprintf("/v1/image/%s/%s?n=signed", tpl, sign(o.Owner.APIKey, "n=signed")))

	var wg sync.WaitGroup
	for _, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := apitest.Send(o.URL, apitest.Request{Method: "GET", Path: strings.TrimPrefix(u, o.URL)})
			if err != nil {
				t.Errorf("GET %s: %v", u, err)
				return
			}
			if r.Status != 200 {
				t.Errorf("GET %s: %d %s", u, r.Status, r.Body)
				return
			}
			if _, err := png.Decode(bytes.NewReader(r.Body)); err != nil {
				t.Errorf("GET %s: %v", u, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	via := []string{"/html-via", "/batch-via", "/tpl-posted", "/tpl-signed"}
	direct := []string{"/html-bypass", "/batch-direct", "/concurrent-direct-0", "/concurrent-direct-1", "/concurrent-direct-2"}
	for _, p := range via {
		from := hits.froms(p)
		if len(from) == 0 || slices.ContainsFunc(from, func(a string) bool { return a != tinyproxytest.Out }) {
			t.Errorf("%s was fetched from %v, want only through tinyproxy (%s)", p, from, tinyproxytest.Out)
		}
	}
	for _, p := range direct {
		from := hits.froms(p)
		if len(from) == 0 || slices.Contains(from, tinyproxytest.Out) {
			t.Errorf("%s was fetched from %v, want only directly", p, from)
		}
	}
	log := strings.Join(tp.Requests(t), "\n")
	for _, p := range via {
		if !strings.Contains(log, p) {
			t.Errorf("tinyproxy did not log %s", p)
		}
	}
	for _, p := range direct {
		if strings.Contains(log, p) {
			t.Errorf("tinyproxy logged %s, which was to go direct", p)
		}
	}

	// Disabled, then deleted: new images cannot name the proxy (400, then
	// 404), images already made keep serving.
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies/" + proxy.ID, Creds: &o.Owner, JSON: map[string]any{
		"name": "tiny", "url": "http://127.0.0.1", "port": tp.Port, "disabled": true,
		"authentication": map[string]any{"username": tinyproxytest.User, "retain_password": true}}})
	apitest.WantStatus(t, r, 200)
	newImage := map[string]any{"html": page(site + "/after"), "proxy_id": proxy.ID}
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: newImage})
	apitest.WantMessage(t, apitest.WantError(t, r, 400), "disabled")
	apitest.WantField(t, r, "proxy_id")
	apitest.WantStatus(t, o.get(t, urls[0]), 200)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/proxies/" + proxy.ID, Creds: &o.Owner}), 204)
	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: newImage}), 404)
	for _, u := range urls {
		if r := o.get(t, u); r.Status != 200 {
			t.Fatalf("GET %s after the proxy's deletion: %d %s", u, r.Status, r.Body)
		}
	}
	// A signed URL of an image not made yet names the deleted proxy.
	apitest.WantError(t, o.get(t, fmt.Sprintf("/v1/image/%s/%s?n=new", tpl, sign(o.Owner.APIKey, "n=new"))), 404)

	// A proxy that refuses the connection: 502 naming it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies", Creds: &o.Owner, JSON: map[string]any{
		"name": "gone", "url": "http://127.0.0.1", "port": closed}})
	apitest.WantStatus(t, r, 200)
	r.Decode(t, &proxy)
	_, u = o.create(t, o.Owner, map[string]any{"html": page(site + "/never"), "proxy_id": proxy.ID})
	m := apitest.WantError(t, o.get(t, u), 502)
	apitest.WantMessage(t, m, fmt.Sprintf("proxy 127.0.0.1:%d", closed))
	apitest.WantMessage(t, m, "refused the connection")
	if len(hits.froms("/never")) != 0 {
		t.Fatal("the render reached the site without its proxy")
	}
}
