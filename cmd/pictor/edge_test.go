package main

import (
	"bufio"
	"bytes"
	"context"
	be "encoding/binary"
	"encoding/json"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/images"
)

const box800 = `<div style="width:400px;height:200px;background:rgb(255,0,0)"></div>`

func createImage(t *testing.T, base string, c apitest.Creds, body map[string]any) (string, string) {
	t.Helper()
	r := apitest.Do(t, base, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &c, JSON: body})
	apitest.WantStatus(t, r, 200)
	var out struct{ URL, ID string }
	r.Decode(t, &out)
	u, err := url.Parse(out.URL)
	if err != nil {
		t.Fatal(err)
	}
	return out.ID, u.Path
}

// pngDensity returns the pixels-per-metre of a PNG's pHYs chunk.
func pngDensity(data []byte) (uint32, bool) {
	for i := 8; i+12 <= len(data); {
		n := int(be.BigEndian.Uint32(data[i:]))
		if string(data[i+4:i+8]) == "pHYs" && n >= 9 {
			return be.BigEndian.Uint32(data[i+8:]), true
		}
		i += 12 + n
	}
	return 0, false
}

func TestEdgeCachesAndTransforms(t *testing.T) {
	s := startServe(t, t.TempDir(), nil)
	id, path := createImage(t, s.URL, s.Owner, map[string]any{"html": box800})

	// A cold URL under 200 parallel GETs: one origin fetch, one render.
	fetches := apitest.Metric(t, s.URL, "pictor_edge_origin_fetches_total")
	renders := apitest.Metric(t, s.OriginURL, `pictor_render_total{outcome="ok"}`)
	var wg sync.WaitGroup
	bodies := make([][]byte, 200)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := apitest.Send(s.URL, apitest.Request{Method: "GET", Path: path}); err == nil && r.Status == 200 {
				bodies[i] = r.Body
			}
		}()
	}
	wg.Wait()
	for i, b := range bodies {
		if b == nil || !bytes.Equal(b, bodies[0]) {
			t.Fatalf("GET %d failed or differs", i)
		}
	}
	if got := apitest.Metric(t, s.URL, "pictor_edge_origin_fetches_total") - fetches; got != 1 {
		t.Fatalf("%v origin fetches for one cold image, want 1", got)
	}
	if got := apitest.Metric(t, s.OriginURL, `pictor_render_total{outcome="ok"}`) - renders; got > 1 {
		t.Fatalf("%v renders for one image", got)
	}

	tests := []struct {
		name, query string
		w, h        int
		ctype       string
	}{
		{"width keeps the ratio", "?width=200", 200, 100, "image/png"},
		{"height keeps the ratio", "?height=50", 100, 50, "image/png"},
		{"both cover the box", "?width=100&height=100", 100, 100, "image/png"},
		{"jpeg resized", ".jpg?width=300", 300, 150, "image/jpeg"},
		{"webp resized", ".webp?width=120", 120, 60, "image/webp"},
		{"centered square", "?aspect_ratio=1_1&crop_height=100%25", 400, 400, "image/png"},
		{"left third", "?x_1=0&crop_width=50%25", 400, 400, "image/png"},
		{"crop then resize", "?x_1=0&x_2=400&width=100", 100, 100, "image/png"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := path + tc.query
			if strings.HasPrefix(tc.query, ".") {
				p = path + tc.query
			}
			r := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: p})
			apitest.WantStatus(t, r, 200)
			if r.Header.Get("Content-Type") != tc.ctype {
				t.Fatalf("Content-Type %q", r.Header.Get("Content-Type"))
			}
			img := apitest.DecodeImage(t, r)
			apitest.WantSize(t, img, tc.w, tc.h)
			apitest.WantPixel(t, img, tc.w/2, tc.h/2, apitest.Pixel(img, 0, 0), 30)
			if r.Header.Get("ETag") == "" || r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
				t.Fatalf("headers %v", r.Header)
			}
		})
	}

	// dpi is metadata: same pixels, a pHYs chunk.
	plain := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: path + "?width=200"})
	dense := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: path + "?width=200&dpi=300"})
	if d, ok := pngDensity(dense.Body); !ok || d != 11811 {
		t.Fatalf("pHYs at dpi=300: %d %v, want 11811 px/m", d, ok)
	}
	a, _ := png.Decode(bytes.NewReader(plain.Body))
	b, _ := png.Decode(bytes.NewReader(dense.Body))
	if a.Bounds() != b.Bounds() || apitest.Pixel(a, 10, 10) != apitest.Pixel(b, 10, 10) {
		t.Fatal("dpi changed pixels")
	}
	dl := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: path + "?dl=1"})
	if got := dl.Header.Get("Content-Disposition"); got != fmt.Sprintf(`attachment; filename="%s.png"`, id) {
		t.Fatalf("Content-Disposition %q", got)
	}

	// Equivalent URLs share one entry: no new origin fetch, same bytes.
	before := apitest.Metric(t, s.URL, "pictor_edge_origin_fetches_total")
	x := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: path + "?width=200&height=100&utm=1"})
	y := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: path + ".png?utm=2&height=100&width=200"})
	if !bytes.Equal(x.Body, y.Body) || x.Header.Get("ETag") != y.Header.Get("ETag") {
		t.Fatal("equivalent URLs differ")
	}
	if got := apitest.Metric(t, s.URL, "pictor_edge_origin_fetches_total") - before; got != 0 {
		t.Fatalf("equivalent URLs fetched the origin %v times", got)
	}

	for _, bad := range []struct{ query, field string }{
		{"?width=6000", "width"}, {"?dpi=20", "dpi"}, {"?aspect_ratio=wide", "aspect_ratio"},
		{"?x_1=10&x_origin=start", "x_origin"},
		{"?x_1=900", "x_1"}, // outside the 800 px wide image: found when applied
	} {
		apitest.WantField(t, apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: path + bad.query}), bad.field)
	}

	// HTTP semantics.
	r := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: path})
	apitest.WantStatus(t, apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: path, Header: map[string]string{"If-None-Match": r.Header.Get("ETag")}}), 304)
	head := apitest.Do(t, s.URL, apitest.Request{Method: "HEAD", Path: path})
	if head.Status != 200 || len(head.Body) != 0 || head.Header.Get("Content-Length") != strconv.Itoa(len(r.Body)) {
		t.Fatalf("HEAD %d len %q", head.Status, head.Header.Get("Content-Length"))
	}
	if r.Header.Get("Last-Modified") == "" {
		t.Fatal("no Last-Modified")
	}
	part := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: path + ".pdf", Header: map[string]string{"Range": "bytes=0-4"}})
	if part.Status != 206 || string(part.Body) != "%PDF-" || !strings.HasPrefix(part.Header.Get("Content-Range"), "bytes 0-4/") {
		t.Fatalf("PDF range: %d %q %q", part.Status, part.Body, part.Header.Get("Content-Range"))
	}
	pdf := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: path + ".pdf"})
	for _, rc := range []struct {
		name   string
		header map[string]string
		status int
	}{
		{"several ranges: the whole body", map[string]string{"Range": "bytes=0-4,10-14"}, 200},
		{"If-Range of another version", map[string]string{"Range": "bytes=0-4", "If-Range": `"other"`}, 200},
		{"If-Range of this version", map[string]string{"Range": "bytes=0-4", "If-Range": pdf.Header.Get("ETag")}, 206},
		{"past the end", map[string]string{"Range": fmt.Sprintf("bytes=%d-", len(pdf.Body))}, 416},
	} {
		r := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: path + ".pdf", Header: rc.header})
		if r.Status != rc.status || (r.Status == 200 && !bytes.Equal(r.Body, pdf.Body)) || (r.Status == 206 && string(r.Body) != "%PDF-") {
			t.Fatalf("%s: %d, %d bytes", rc.name, r.Status, len(r.Body))
		}
	}

	// A delete drops every rendition at the edge before it answers.
	apitest.WantStatus(t, apitest.Do(t, s.URL, apitest.Request{Method: "DELETE", Path: "/v1/image/" + id, Creds: &s.Owner}), 202)
	for _, p := range []string{path, path + ".png", path + ".jpg?width=300", path + ".webp?width=120", path + "?width=200", path + ".pdf"} {
		apitest.WantError(t, apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: p}), 404)
	}
	for _, name := range []string{"pictor_edge_hits_l1_total", "pictor_edge_misses_total", "pictor_edge_served_bytes_total", "pictor_edge_transform_duration_seconds_count"} {
		if apitest.Metric(t, s.URL, name) == 0 {
			t.Fatalf("metric %s is zero", name)
		}
	}
}

// TestSeparateEdgesPurge runs one origin and two edges as processes: a
// delete answers only after both dropped the image; an edge that was down
// catches up before serving; with the origin down, cached images are still
// served and misses fail fast.
func TestSeparateEdgesPurge(t *testing.T) {
	dir := t.TempDir()
	creds := orgCreate(t, dir, "acme", "scale")
	token := strings.Repeat("e", 40)
	os.Setenv("PICTOR_EDGE_TOKEN", token)
	defer os.Unsetenv("PICTOR_EDGE_TOKEN")

	origin, originURL := startProcess(t, "origin", "--data-dir", dir, "--addr", "127.0.0.1:0", "--allow-private-urls")
	cacheA, cacheB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	edgeA, a := startProcess(t, "edge", "--origin-url", originURL, "--addr", "127.0.0.1:0", "--cache-dir", cacheA, "--name", "a")
	edgeB, b := startProcess(t, "edge", "--origin-url", originURL, "--addr", "127.0.0.1:0", "--cache-dir", cacheB, "--name", "b")
	_ = edgeA

	id1, p1 := createImage(t, a, creds, map[string]any{"html": box800})
	id2, p2 := createImage(t, a, creds, map[string]any{"html": box800, "device_scale": 1})
	for _, base := range []string{a, b} {
		for _, p := range []string{p1, p1 + "?width=100", p2} {
			apitest.WantStatus(t, apitest.Do(t, base, apitest.Request{Method: "GET", Path: p}), 200)
		}
	}
	apitest.WantStatus(t, apitest.Do(t, originURL, apitest.Request{Method: "DELETE", Path: "/v1/image/" + id1, Creds: &creds}), 202)
	for _, base := range []string{a, b} {
		for _, p := range []string{p1, p1 + "?width=100"} {
			apitest.WantError(t, apitest.Do(t, base, apitest.Request{Method: "GET", Path: p}), 404)
		}
	}

	// B is down during a delete; when it comes back, it purges before serving.
	if err := edgeB.terminate(t); err != nil {
		t.Fatalf("edge b exit: %v", err)
	}
	apitest.WantStatus(t, apitest.Do(t, originURL, apitest.Request{Method: "DELETE", Path: "/v1/image/" + id2, Creds: &creds}), 202)
	_, b2 := startProcess(t, "edge", "--origin-url", originURL, "--addr", "127.0.0.1:0", "--cache-dir", cacheB, "--name", "b")
	apitest.WantError(t, apitest.Do(t, b2, apitest.Request{Method: "GET", Path: p2}), 404)

	// A signed template URL cached by both edges stops working on both
	// once its key is disabled, before the disabling answers.
	var k struct {
		ID     string `json:"id"`
		APIKey string `json:"api_key"`
	}
	r := apitest.Do(t, originURL, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &creds,
		JSON: map[string]any{"permissions": []string{"images:create"}}})
	apitest.WantStatus(t, r, 200)
	r.Decode(t, &k)
	r = apitest.Do(t, originURL, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &creds,
		JSON: map[string]any{"html": `<div style="width:{{w}}px;height:40px;background:rgb(0,0,255)"></div>`, "device_scale": 1}})
	apitest.WantStatus(t, r, 201)
	var tpl struct {
		ID string `json:"template_id"`
	}
	r.Decode(t, &tpl)
	signed := fmt.Sprintf("/v1/image/%s/%s?w=60", tpl.ID, images.Sign(k.APIKey, "w=60"))
	for _, base := range []string{a, b2} {
		for range 2 { // the second GET is the edge's cached entry
			img := apitest.DecodeImage(t, apitest.Do(t, base, apitest.Request{Method: "GET", Path: signed}))
			apitest.WantSize(t, img, 60, 40)
		}
	}
	apitest.WantStatus(t, apitest.Do(t, originURL, apitest.Request{Method: "POST", Path: "/v1/api-keys/" + k.ID, Creds: &creds,
		JSON: map[string]any{"permissions": []string{"images:create"}, "disabled": true}}), 200)
	for _, base := range []string{a, b2} {
		apitest.WantError(t, apitest.Do(t, base, apitest.Request{Method: "GET", Path: signed}), 401)
	}

	// The origin goes down: cached renditions are still served, misses fail
	// fast with the standard body, and a restarted edge keeps its disk cache.
	id3, p3 := createImage(t, a, creds, map[string]any{"html": box800, "device_scale": 0.5})
	_ = id3
	apitest.WantStatus(t, apitest.Do(t, a, apitest.Request{Method: "GET", Path: p3}), 200)
	if err := origin.terminate(t); err != nil {
		t.Fatalf("origin exit: %v", err)
	}
	apitest.WantStatus(t, apitest.Do(t, a, apitest.Request{Method: "GET", Path: p3}), 200)
	start := time.Now()
	miss := apitest.Do(t, a, apitest.Request{Method: "GET", Path: p3 + "?width=10"})
	if miss.Status != 200 && miss.Status != 502 && miss.Status != 503 {
		t.Fatalf("miss with the origin down: %d", miss.Status)
	}
	missing := apitest.Do(t, a, apitest.Request{Method: "GET", Path: "/v1/image/01a20000-0000-7000-8000-000000000000"})
	apitest.WantError(t, missing, 502)
	if time.Since(start) > 20*time.Second {
		t.Fatal("misses hung with the origin down")
	}
	if err := edgeA.terminate(t); err != nil {
		t.Fatalf("edge a exit: %v", err)
	}
	_, a2 := startProcess(t, "edge", "--origin-url", originURL, "--addr", "127.0.0.1:0", "--cache-dir", cacheA, "--name", "a")
	apitest.WantStatus(t, apitest.Do(t, a2, apitest.Request{Method: "GET", Path: p3}), 200)
}

// orgCreate creates an organization on plan with `pictor admin org
// create` in the data directory dir and returns its key.
func orgCreate(t *testing.T, dir, name, plan string) apitest.Creds {
	t.Helper()
	out, err := runCmd(t, nil, "admin", "org", "create", "--data-dir", dir, "--name", name, "--plan", plan)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Key struct {
			APIID  string `json:"api_id"`
			APIKey string `json:"api_key"`
		} `json:"key"`
	}
	decodeJSON(t, out, &created)
	return apitest.Creds{APIID: created.Key.APIID, APIKey: created.Key.APIKey}
}

func decodeJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
}

// TestSignedURLsAtTheEdge: signed URLs are cached at the edge like any
// image, and what a signed URL produced there is dropped when its key can
// no longer sign, or when its template changes, before the change answers.
func TestSignedURLsAtTheEdge(t *testing.T) {
	s := startServe(t, t.TempDir(), nil)
	var k struct {
		ID     string `json:"id"`
		APIID  string `json:"api_id"`
		APIKey string `json:"api_key"`
	}
	r := apitest.Do(t, s.URL, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &s.Owner,
		JSON: map[string]any{"permissions": []string{"images:create"}}})
	apitest.WantStatus(t, r, 200)
	r.Decode(t, &k)
	r = apitest.Do(t, s.URL, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &s.Owner,
		JSON: map[string]any{"html": `<div style="width:{{w}}px;height:40px;background:rgb(0,0,255)"></div>`, "device_scale": 1}})
	apitest.WantStatus(t, r, 201)
	var tpl struct {
		ID string `json:"template_id"`
	}
	r.Decode(t, &tpl)

	const values = "w=60"
	byKey := fmt.Sprintf("/v1/image/%s/%s?%s", tpl.ID, images.Sign(k.APIKey, values), values)
	byOwner := fmt.Sprintf("/v1/image/%s/%s/png?%s", tpl.ID, images.Sign(s.Owner.APIKey, values), values)
	query := "html=" + url.QueryEscape(box800) + "&device_scale=1"
	direct := fmt.Sprintf("/v1/image/create-and-render/%s/%s?%s", k.APIID, images.Sign(k.APIKey, query), query)

	fetches := func() float64 { return apitest.Metric(t, s.URL, "pictor_edge_origin_fetches_total") }
	// get answers p, and reports whether the edge fetched it from the origin.
	get := func(p string, w, h int, want color.NRGBA) bool {
		t.Helper()
		before := fetches()
		img := apitest.DecodeImage(t, apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: p}))
		apitest.WantSize(t, img, w, h)
		apitest.WantPixel(t, img, w/2, h/2, want, 10)
		return fetches() != before
	}
	blue, red := color.NRGBA{0, 0, 255, 255}, color.NRGBA{255, 0, 0, 255}
	for _, p := range []string{byKey, byOwner} {
		if !get(p, 60, 40, blue) {
			t.Fatalf("%s: first GET not fetched from the origin", p)
		}
		if get(p, 60, 40, blue) {
			t.Fatalf("%s: second GET fetched again", p)
		}
	}
	get(direct, 400, 200, red)
	if get(direct, 400, 200, red) {
		t.Fatal("signed create-and-render URL not cached")
	}

	// A new template version: both template URLs render it.
	r = apitest.Do(t, s.URL, apitest.Request{Method: "POST", Path: "/v1/template/" + tpl.ID, Creds: &s.Owner,
		JSON: map[string]any{"html": `<div style="width:{{w}}px;height:40px;background:rgb(255,0,0)"></div>`, "device_scale": 1}})
	apitest.WantStatus(t, r, 200)
	for _, p := range []string{byKey, byOwner} {
		if !get(p, 60, 40, red) {
			t.Fatalf("%s: the old version's entry survived the change", p)
		}
	}

	// The key loses images:create: every URL it signed stops working at
	// once, cached or not; the owner's URL is still served from the cache.
	r = apitest.Do(t, s.URL, apitest.Request{Method: "POST", Path: "/v1/api-keys/" + k.ID, Creds: &s.Owner,
		JSON: map[string]any{"permissions": []string{"images:read"}}})
	apitest.WantStatus(t, r, 200)
	apitest.WantMessage(t, apitest.WantError(t, apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: byKey}), 401), "Invalid token")
	apitest.WantError(t, apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: direct}), 403)
	if get(byOwner, 60, 40, red) {
		t.Fatal("another key's signed URL was purged")
	}
}

// TestEdgeWithoutToken runs an edge process without an edge token (no
// purge channel) beside one with it: both answer a transformed rendition
// with the transformed image, never the master; the edge without a token
// keeps nothing, so a delete shows at once, and a signed or plain master
// is the origin's own answer.
func TestEdgeWithoutToken(t *testing.T) {
	dir := t.TempDir()
	creds := orgCreate(t, dir, "acme", "scale")
	token := strings.Repeat("t", 40)

	_, originURL := startProcess(t, "origin", "--data-dir", dir, "--addr", "127.0.0.1:0", "--allow-private-urls", "--edge-token", token)
	_, bare := startProcess(t, "edge", "--origin-url", originURL, "--addr", "127.0.0.1:0", "--cache-dir", filepath.Join(t.TempDir(), "bare"))
	_, synced := startProcess(t, "edge", "--origin-url", originURL, "--addr", "127.0.0.1:0", "--cache-dir", filepath.Join(t.TempDir(), "synced"), "--edge-token", token)

	id, path := createImage(t, originURL, creds, map[string]any{"html": box800})
	for _, tc := range []struct {
		name, query string
		w, h        int
	}{
		{"master", "", 800, 400},
		{"width", "?width=300", 300, 150},
		{"height", "?height=100", 200, 100},
		{"crop", "?crop_width=80&crop_height=40", 80, 40},
	} {
		for name, base := range map[string]string{"without token": bare, "with token": synced} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				for range 2 { // a miss, then what a cache would answer
					r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: path + tc.query})
					apitest.WantStatus(t, r, 200)
					img, err := png.Decode(bytes.NewReader(r.Body))
					if err != nil {
						t.Fatalf("decode: %v", err)
					}
					if b := img.Bounds(); b.Dx() != tc.w || b.Dy() != tc.h {
						t.Fatalf("GET %s%s: %d×%d, want %d×%d", path, tc.query, b.Dx(), b.Dy(), tc.w, tc.h)
					}
					if c := color.RGBAModel.Convert(img.At(tc.w/2, tc.h/2)).(color.RGBA); c.R < 250 || c.G > 5 || c.B > 5 {
						t.Fatalf("GET %s%s: centre %v, want red", path, tc.query, c)
					}
				}
			})
		}
	}
	if hits := apitest.Metric(t, bare, "pictor_edge_hits_l1_total") + apitest.Metric(t, bare, "pictor_edge_hits_l2_total"); hits != 0 {
		t.Fatalf("the edge without a token answered %v requests from its cache", hits)
	}
	if hits := apitest.Metric(t, synced, "pictor_edge_hits_l1_total"); hits == 0 {
		t.Fatal("the edge with a token cached nothing")
	}

	// Bad transformation parameters are refused at the edge either way.
	for _, base := range []string{bare, synced} {
		apitest.WantError(t, apitest.Do(t, base, apitest.Request{Method: "GET", Path: path + "?width=abc"}), 400)
	}
	// A delete shows at once on both: one kept nothing, the other was purged.
	apitest.WantStatus(t, apitest.Do(t, originURL, apitest.Request{Method: "DELETE", Path: "/v1/image/" + id, Creds: &creds}), 202)
	for _, base := range []string{bare, synced} {
		for _, q := range []string{"", "?width=300"} {
			apitest.WantError(t, apitest.Do(t, base, apitest.Request{Method: "GET", Path: path + q}), 404)
		}
	}
}

// TestEdgeOriginURLs: --origin-url may be repeated and hold several URLs
// separated by commas, as PICTOR_ORIGIN_URL does; the edge then checks and
// uses every origin named. A bad URL is refused before the edge starts,
// naming the flag and each bad URL; so is an origin given twice.
func TestEdgeOriginURLs(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        []string
		err         bool
	}{
		{"one", "http://a:1", []string{"http://a:1"}, false},
		{"several", "http://a:1,https://b/base/", []string{"http://a:1", "https://b/base/"}, false},
		{"spaces around", " http://a:1 , http://b:2 ", []string{"http://a:1", "http://b:2"}, false},
		{"empty item", "http://a:1,,http://b:2", nil, true},
		{"trailing comma", "http://a:1,", nil, true},
	} {
		t.Run("value/"+tc.name, func(t *testing.T) {
			var l urlList
			err := l.Set(tc.value)
			if (err != nil) != tc.err || (!tc.err && !slices.Equal(l, tc.want)) {
				t.Fatalf("Set(%q) = %q, %v", tc.value, l, err)
			}
		})
	}
	var l urlList
	l.Set("http://a:1,http://b:2")
	l.Set("http://c:3")
	if l.String() != "http://a:1,http://b:2,http://c:3" {
		t.Fatalf("repeated: %q", l.String())
	}

	for _, tc := range []struct {
		name    string
		environ map[string]string
		args    []string
		want    []string
		notWant string
	}{
		{"bad URLs named", nil, []string{"--origin-url", "ftp://x,http://127.0.0.1:1", "--origin-url", "localhost:8081"},
			[]string{"--origin-url", `"ftp://x"`, `"localhost:8081"`}, `"http://127.0.0.1:1"`},
		{"an origin twice", nil, []string{"--origin-url", "http://127.0.0.1:1", "--origin-url", "http://127.0.0.1:1/"},
			[]string{"--origin-url", "twice"}, ""},
		{"bad URL from the environment", map[string]string{"PICTOR_ORIGIN_URL": "http://127.0.0.1:1,nope"}, nil,
			[]string{"--origin-url", `"nope"`}, ""},
		{"empty item in the environment", map[string]string{"PICTOR_ORIGIN_URL": "http://127.0.0.1:1,,http://127.0.0.1:2"}, nil,
			[]string{"PICTOR_ORIGIN_URL"}, ""},
		{"none", nil, nil, []string{"--origin-url is required"}, ""},
	} {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, logs apitest.Buffer
			args := append([]string{"edge", "--addr", "127.0.0.1:0", "--cache-dir", t.TempDir()}, tc.args...)
			err := run(ctx, args, env{stdout: &out, stderr: &logs, getenv: func(k string) string { return tc.environ[k] }})
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v, want it to name %s", err, w)
				}
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Fatalf("err = %v names the valid %s", err, tc.notWant)
			}
		})
	}

	// Three origins, from repeated flags with commas, and from the
	// environment: the edge reports each one's health.
	var origins []string
	for range 3 {
		o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"status":"ok"}`)) }))
		t.Cleanup(o.Close)
		origins = append(origins, o.URL)
	}
	for _, tc := range []struct {
		name    string
		environ map[string]string
		args    []string
	}{
		{"flags", nil, []string{"--origin-url", origins[0] + "," + origins[1], "--origin-url", origins[2]}},
		{"environment", map[string]string{"PICTOR_ORIGIN_URL": strings.Join(origins, ",")}, nil},
	} {
		t.Run("started/"+tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			var logs apitest.Buffer
			args := append([]string{"edge", "--addr", "127.0.0.1:0", "--cache-dir", t.TempDir(), "--origin-check-interval", "10ms"}, tc.args...)
			go func() {
				err := run(ctx, args, env{stdout: pw, stderr: &logs, getenv: func(k string) string { return tc.environ[k] }})
				pw.Close()
				done <- err
			}()
			defer func() {
				apitest.Client.CloseIdleConnections()
				cancel()
				if err := <-done; err != nil {
					t.Errorf("edge stopped with error: %v", err)
				}
			}()
			line, err := bufio.NewReader(pr).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "Pictor edge is listening on ") {
				t.Fatalf("announce %q (%v)\nlogs:\n%s", line, err, logs.String())
			}
			go io.Copy(io.Discard, pr)
			base := strings.TrimSpace(strings.TrimPrefix(line, "Pictor edge is listening on "))
			for _, o := range origins {
				if up := apitest.Metric(t, base, `pictor_edge_origin_up{origin="`+o+`"}`); up != 1 {
					t.Errorf("origin %s: up %v", o, up)
				}
			}
		})
	}
}
