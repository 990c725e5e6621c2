package origin_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

var (
	red   = color.NRGBA{255, 0, 0, 255}
	green = color.NRGBA{0, 128, 0, 255}
	blue  = color.NRGBA{0, 0, 255, 255}
	white = color.NRGBA{255, 255, 255, 255}
)

// create makes an image and returns its id and URL.
func (o *testOrigin) create(t testing.TB, creds apitest.Creds, body map[string]any) (string, string) {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &creds, JSON: body})
	apitest.WantStatus(t, r, 200)
	var c struct{ URL, ID string }
	r.Decode(t, &c)
	if c.ID == "" || !strings.HasPrefix(c.URL, o.URL+"/v1/image/"+c.ID) {
		t.Fatalf("create answer %s", r.Body)
	}
	return c.ID, c.URL
}

// get fetches a URL the API returned (absolute) or a path.
func (o *testOrigin) get(t testing.TB, u string, header ...map[string]string) *apitest.Response {
	t.Helper()
	req := apitest.Request{Method: "GET", Path: strings.TrimPrefix(u, o.URL)}
	if len(header) > 0 {
		req.Header = header[0]
	}
	return o.do(t, req)
}

// render creates an image with body and returns the decoded PNG.
func (o *testOrigin) render(t testing.TB, body map[string]any) image.Image {
	t.Helper()
	_, u := o.create(t, o.Owner, body)
	r := o.get(t, u)
	apitest.WantStatus(t, r, 200)
	return apitest.DecodeImage(t, r)
}

// site serves test pages and records every request it receives.
type site struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
}

func newSite(t testing.TB, pages map[string]string) *site {
	t.Helper()
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Clone(r.Context()))
		s.mu.Unlock()
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		ct := "text/html; charset=utf-8"
		switch {
		case strings.HasSuffix(r.URL.Path, ".css"):
			ct = "text/css"
		case strings.HasSuffix(r.URL.Path, ".svg"):
			ct = "image/svg+xml"
		}
		w.Header().Set("Content-Type", ct)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) seen(path string) []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*http.Request
	for _, r := range s.requests {
		if r.URL.Path == path {
			out = append(out, r)
		}
	}
	return out
}

const redBox = `<div style="width:400px;height:200px;background:rgb(255,0,0)"></div>`

func TestImageCreateAndServe(t *testing.T) {
	o := startOrigin(t)
	id, u := o.create(t, o.Owner, map[string]any{"html": redBox})
	if u != o.URL+"/v1/image/"+id {
		t.Fatalf("url %q: png needs no extension", u)
	}
	r := o.get(t, u)
	apitest.WantStatus(t, r, 200)
	img := apitest.DecodeImage(t, r)
	apitest.WantSize(t, img, 800, 400) // the snippet's box at the default scale 2
	apitest.WantPixel(t, img, 0, 0, red, 0)
	apitest.WantPixel(t, img, 799, 399, red, 0)
	etag := r.Header.Get("ETag")
	tests := []struct{ name, got, want string }{
		{"content type", r.Header.Get("Content-Type"), "image/png"},
		{"content length", r.Header.Get("Content-Length"), fmt.Sprint(len(r.Body))},
		{"cache control", r.Header.Get("Cache-Control"), "public, max-age=31536000, immutable"},
		{"strong etag", fmt.Sprint(regexp.MustCompile(`^"[0-9a-f]{16,}"$`).MatchString(etag)), "true"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	again := o.get(t, u+".png")
	if !bytes.Equal(again.Body, r.Body) && again.Header.Get("ETag") == etag {
		t.Fatal(".png differs from no extension under the same ETag")
	}
	notModified := o.get(t, u, map[string]string{"If-None-Match": again.Header.Get("ETag")})
	apitest.WantStatus(t, notModified, 304)
	head := o.do(t, apitest.Request{Method: "HEAD", Path: strings.TrimPrefix(u, o.URL)})
	if head.Status != 200 || len(head.Body) != 0 || head.Header.Get("Content-Length") != again.Header.Get("Content-Length") {
		t.Fatalf("HEAD: %d, %d body bytes, length %q", head.Status, len(head.Body), head.Header.Get("Content-Length"))
	}

	for _, ext := range []string{"jpg", "webp"} {
		r := o.get(t, u+"."+ext)
		apitest.WantStatus(t, r, 200)
		img := apitest.DecodeImage(t, r)
		apitest.WantSize(t, img, 800, 400)
		// x/image/webp reads limited-range YCbCr as full range: a few
		// levels off, so the tolerance is wider than JPEG needs.
		apitest.WantPixel(t, img, 400, 200, red, 24)
		if r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || r.Header.Get("ETag") == etag {
			t.Fatalf(".%s headers %v", ext, r.Header)
		}
	}
	pdf := o.get(t, u+".pdf")
	apitest.WantStatus(t, pdf, 200)
	if pdf.Header.Get("Content-Type") != "application/pdf" || !bytes.HasPrefix(pdf.Body, []byte("%PDF-")) {
		t.Fatalf("pdf: %q %.20q", pdf.Header.Get("Content-Type"), pdf.Body)
	}
	part := o.get(t, u+".pdf", map[string]string{"Range": "bytes=0-4"})
	if part.Status != 206 || string(part.Body) != "%PDF-" {
		t.Fatalf("range: %d %q", part.Status, part.Body)
	}

	for _, path := range []string{"/v1/image/01a20000-0000-7000-8000-000000000000", "/v1/image/" + id + ".gif", "/v1/image/nope", "/v1/image/" + id + "x"} {
		apitest.WantError(t, o.get(t, path), 404)
	}
}

func TestImageFormatExtension(t *testing.T) {
	o := startOrigin(t)
	for _, f := range []string{"png", "jpg", "webp", "pdf"} {
		id, u := o.create(t, o.Owner, map[string]any{"html": redBox, "format": f})
		if u != o.URL+"/v1/image/"+id+"."+f {
			t.Fatalf("format %s: url %s", f, u)
		}
	}
}

func TestImageCreateFromForms(t *testing.T) {
	o := startOrigin(t)
	form := url.Values{"html": {redBox}, "viewport_width": {"100"}, "viewport_height": {"50"}, "device_scale": {"1"}, "transparent_background": {"false"}}
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, Raw: form.Encode(), ContentType: "application/x-www-form-urlencoded"})
	apitest.WantStatus(t, r, 200)
	var c struct{ URL string }
	r.Decode(t, &c)
	apitest.WantSize(t, apitest.DecodeImage(t, o.get(t, c.URL)), 100, 50)

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, v := range map[string]string{"html": redBox, "viewport_width": "60", "viewport_height": "30", "device_scale": "2", "metadata": `{"k":"v"}`} {
		mw.WriteField(k, v)
	}
	mw.Close()
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, Raw: body.String(), ContentType: mw.FormDataContentType()})
	apitest.WantStatus(t, r, 200)
	r.Decode(t, &c)
	apitest.WantSize(t, apitest.DecodeImage(t, o.get(t, c.URL)), 120, 60)

	bad := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner,
		Raw: url.Values{"html": {redBox}, "viewport_width": {"wide"}, "viewport_height": {"10"}}.Encode(), ContentType: "application/x-www-form-urlencoded"})
	apitest.WantField(t, bad, "viewport_width")
}

func TestImageCreateValidation(t *testing.T) {
	o := startOrigin(t)
	_, free := o.newOrg(t.Context(), t, "free")
	tests := []struct {
		name  string
		creds apitest.Creds
		body  map[string]any
		path  string
	}{
		{"nothing to render", o.Owner, map[string]any{"css": "x"}, "html"},
		{"viewport pair", o.Owner, map[string]any{"html": "x", "viewport_width": 100}, "viewport_height"},
		{"device scale range", o.Owner, map[string]any{"html": "x", "device_scale": 3.5}, "device_scale"},
		{"relative url", o.Owner, map[string]any{"url": "/page"}, "url"},
		{"ftp url", o.Owner, map[string]any{"url": "ftp://example.com/"}, "url"},
		{"max wait above the free plan", free, map[string]any{"html": "x", "max_wait_ms": 6000}, "max_wait_ms"},
		{"timezone", o.Owner, map[string]any{"html": "x", "timezone": "Mars/Olympus"}, "timezone"},
		{"media type", o.Owner, map[string]any{"html": "x", "media_type": "tv"}, "media_type"},
		{"header name", o.Owner, map[string]any{"url": "https://example.com/", "headers": map[string]string{"Bad Name": "x"}}, "headers.Bad Name"},
		{"too big without jumbo", o.Owner, map[string]any{"html": "x", "viewport_width": 6000, "viewport_height": 100, "device_scale": 3}, "viewport_width"},
		{"more than 64 megapixels", o.Owner, map[string]any{"html": "x", "viewport_width": 5000, "viewport_height": 5000, "device_scale": 2}, "viewport_width"},
		{"jumbo pair", o.Owner, map[string]any{"html": "x", "jumbo_max_width": 5000}, "jumbo_max_height"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &tc.creds, JSON: tc.body})
			apitest.WantField(t, r, tc.path)
		})
	}
	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", JSON: map[string]any{"html": "x"}}), 401)
	noImages := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"usage:read"}})
	apitest.WantMessage(t, apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: noImages.creds(), JSON: map[string]any{"html": "x"}}), 403), "images:create")
	huge := strings.Repeat("a", 7<<20)
	apitest.WantError(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"html": huge}}), 413)
	apitest.WantField(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"html": huge[:5<<20+1]}}), "html")
	// Image creation is never rate limited: far more than 20 writes a minute.
	for i := range 30 {
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"html": fmt.Sprint(i)}})
		apitest.WantStatus(t, r, 200)
		if r.Header.Get("RateLimit-Policy") != "" {
			t.Fatal("image creation carries rate-limit headers")
		}
	}
}

func TestRenderFailuresAreRecorded(t *testing.T) {
	t.Parallel() // a slow test with its own origin: see startOrigin
	o := startOrigin(t)
	tests := []struct {
		name    string
		body    map[string]any
		status  int
		mention string
	}{
		{"selector not found", map[string]any{"html": redBox, "selector": "#missing"}, 400, "selector"},
		{"invalid selector", map[string]any{"html": redBox, "selector": "div[["}, 400, "selector"},
		{"never ready", map[string]any{"html": redBox, "render_when_ready": true, "max_wait_ms": 800}, 400, "ScreenshotReady"},
		{"unreachable site", map[string]any{"url": "http://127.0.0.1:9/"}, 502, "reached"},
		{"page filling memory", map[string]any{"html": redBox + `<script>const k = []; try { for (;;) k.push(new Uint8Array(5e7).fill(1)); } catch (e) {}</script>`}, 400, "memory"},
		{"page that never yields", map[string]any{"html": redBox + `<script>for (;;) {}</script>`, "max_wait_ms": 500}, 400, "did not yield"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, u := o.create(t, o.Owner, tc.body)
			first := o.get(t, u)
			apitest.WantMessage(t, apitest.WantError(t, first, tc.status), tc.mention)
			if first.Header.Get("Cache-Control") != "no-store" {
				t.Fatal("a failure is cacheable")
			}
			// Recorded: the same answer again, without a new render.
			again := o.get(t, u)
			if again.Status != tc.status || !bytes.Equal(again.Body, first.Body) {
				t.Fatalf("second GET: %d %s", again.Status, again.Body)
			}
		})
	}
}
