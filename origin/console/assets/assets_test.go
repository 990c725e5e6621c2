package assets

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

// client talks to the test server without Go's transparent gzip, so the
// tests see the encoding the handler chose.
func client() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableCompression: true}}
}

func do(t *testing.T, method, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, body
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return out
}

// asset returns the embedded file behind a logical name.
func asset(t *testing.T, logical string) (string, *file) {
	t.Helper()
	p := Path(logical)
	f := files[strings.TrimPrefix(p, Prefix)]
	if f == nil {
		t.Fatalf("Path(%q) = %s, which the handler does not serve", logical, p)
	}
	return p, f
}

func TestPath(t *testing.T) {
	for _, logical := range []string{"console.js", "console.css"} {
		t.Run(logical, func(t *testing.T) {
			p := Path(logical)
			base := strings.TrimSuffix(logical, ".js")
			base = strings.TrimSuffix(base, ".css")
			if !regexp.MustCompile(`^/console/assets/` + regexp.QuoteMeta(base) + `-[0-9a-f]{10}\.(js|css)$`).MatchString(p) {
				t.Fatalf("Path(%q) = %q, want /console/assets/%s-<10 hex>%s", logical, p, base, logical[len(base):])
			}
		})
	}
	t.Run("unknown name panics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Fatal("Path(\"nope.js\") did not panic")
			}
		}()
		Path("nope.js")
	})
}

func TestHandlerServesAssets(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	jsPath, js := asset(t, "console.js")
	cssPath, css := asset(t, "console.css")

	tests := []struct {
		name     string
		method   string
		path     string
		header   map[string]string
		file     *file
		wantType string
		wantGzip bool
		wantBody bool
	}{
		{name: "script identity", method: http.MethodGet, path: jsPath, file: js, wantType: "text/javascript; charset=utf-8", wantBody: true},
		{name: "style identity", method: http.MethodGet, path: cssPath, file: css, wantType: "text/css; charset=utf-8", wantBody: true},
		{name: "script gzip", method: http.MethodGet, path: jsPath, header: map[string]string{"Accept-Encoding": "br, gzip, deflate"}, file: js, wantType: "text/javascript; charset=utf-8", wantGzip: true, wantBody: true},
		{name: "style gzip by star", method: http.MethodGet, path: cssPath, header: map[string]string{"Accept-Encoding": "*"}, file: css, wantType: "text/css; charset=utf-8", wantGzip: true, wantBody: true},
		{name: "gzip refused with q=0", method: http.MethodGet, path: jsPath, header: map[string]string{"Accept-Encoding": "gzip;q=0, *;q=1"}, file: js, wantType: "text/javascript; charset=utf-8", wantBody: true},
		{name: "only br accepted", method: http.MethodGet, path: jsPath, header: map[string]string{"Accept-Encoding": "br"}, file: js, wantType: "text/javascript; charset=utf-8", wantBody: true},
		{name: "head", method: http.MethodHead, path: cssPath, file: css, wantType: "text/css; charset=utf-8"},
		{name: "head gzip", method: http.MethodHead, path: jsPath, header: map[string]string{"Accept-Encoding": "gzip"}, file: js, wantType: "text/javascript; charset=utf-8", wantGzip: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, tc.method, srv.URL+tc.path, tc.header)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200", resp.StatusCode)
			}
			h := resp.Header
			for k, want := range map[string]string{
				"Content-Type":           tc.wantType,
				"Cache-Control":          "public, max-age=31536000, immutable",
				"X-Content-Type-Options": "nosniff",
				"Vary":                   "Accept-Encoding",
			} {
				if got := h.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			etag := h.Get("ETag")
			if !regexp.MustCompile(`^"[0-9a-f]{32}(-gzip)?"$`).MatchString(etag) {
				t.Errorf("ETag = %q, want a strong quoted tag", etag)
			}
			wantBody, wantETag := tc.file.body, tc.file.etag
			if tc.wantGzip {
				wantBody, wantETag = tc.file.gzBody, tc.file.gzETag
				if got := h.Get("Content-Encoding"); got != "gzip" {
					t.Errorf("Content-Encoding = %q, want gzip", got)
				}
			} else if got := h.Get("Content-Encoding"); got != "" {
				t.Errorf("Content-Encoding = %q, want none", got)
			}
			if etag != wantETag {
				t.Errorf("ETag = %s, want %s", etag, wantETag)
			}
			if resp.ContentLength != int64(len(wantBody)) {
				t.Errorf("Content-Length = %d, want %d", resp.ContentLength, len(wantBody))
			}
			if !tc.wantBody {
				if len(body) != 0 {
					t.Errorf("HEAD answered a %d-byte body", len(body))
				}
				return
			}
			if tc.wantGzip {
				body = gunzip(t, body)
			}
			if !bytes.Equal(body, tc.file.body) {
				t.Errorf("body (%d bytes) is not the embedded file (%d bytes)", len(body), len(tc.file.body))
			}
		})
	}
}

func TestHandlerConditional(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	jsPath, js := asset(t, "console.js")

	tests := []struct {
		name        string
		header      map[string]string
		wantStatus  int
		wantETag    string
		wantEncoded bool
	}{
		{name: "matching tag", header: map[string]string{"If-None-Match": js.etag}, wantStatus: http.StatusNotModified, wantETag: js.etag},
		{name: "weak form of the tag", header: map[string]string{"If-None-Match": "W/" + js.etag}, wantStatus: http.StatusNotModified, wantETag: js.etag},
		{name: "tag in a list", header: map[string]string{"If-None-Match": `"other", ` + js.etag}, wantStatus: http.StatusNotModified, wantETag: js.etag},
		{name: "star", header: map[string]string{"If-None-Match": "*"}, wantStatus: http.StatusNotModified, wantETag: js.etag},
		{name: "gzip tag", header: map[string]string{"If-None-Match": js.gzETag, "Accept-Encoding": "gzip"}, wantStatus: http.StatusNotModified, wantETag: js.gzETag},
		{name: "other tag", header: map[string]string{"If-None-Match": `"0123456789abcdef0123456789abcdef"`}, wantStatus: http.StatusOK, wantETag: js.etag},
		{name: "identity tag for the gzip representation", header: map[string]string{"If-None-Match": js.etag, "Accept-Encoding": "gzip"}, wantStatus: http.StatusOK, wantETag: js.gzETag, wantEncoded: true},
		{name: "tag without quotes", header: map[string]string{"If-None-Match": strings.Trim(js.etag, `"`)}, wantStatus: http.StatusOK, wantETag: js.etag},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, http.MethodGet, srv.URL+jsPath, tc.header)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if got := resp.Header.Get("ETag"); got != tc.wantETag {
				t.Errorf("ETag = %s, want %s", got, tc.wantETag)
			}
			if got := resp.Header.Get("Cache-Control"); got != cacheForever {
				t.Errorf("Cache-Control = %q, want %q", got, cacheForever)
			}
			if tc.wantStatus == http.StatusNotModified {
				if len(body) != 0 {
					t.Errorf("304 with a %d-byte body", len(body))
				}
				return
			}
			if tc.wantEncoded {
				body = gunzip(t, body)
			}
			if !bytes.Equal(body, js.body) {
				t.Errorf("200 body is not the script")
			}
		})
	}
}

func TestHostileAssetRequests(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	jsPath, _ := asset(t, "console.js")
	cssPath, _ := asset(t, "console.css")
	hashed := strings.TrimPrefix(jsPath, Prefix)

	tests := []struct {
		name       string
		method     string
		path       string
		wantStatus int
	}{
		{name: "logical name", method: http.MethodGet, path: Prefix + "console.js", wantStatus: http.StatusNotFound},
		{name: "manifest", method: http.MethodGet, path: Prefix + "manifest.json", wantStatus: http.StatusNotFound},
		{name: "directory", method: http.MethodGet, path: Prefix, wantStatus: http.StatusNotFound},
		{name: "other hash", method: http.MethodGet, path: Prefix + "console-0000000000.js", wantStatus: http.StatusNotFound},
		{name: "suffix", method: http.MethodGet, path: jsPath + ".map", wantStatus: http.StatusNotFound},
		{name: "nested", method: http.MethodGet, path: Prefix + "dist/" + hashed, wantStatus: http.StatusNotFound},
		{name: "outside the prefix", method: http.MethodGet, path: "/console/" + hashed, wantStatus: http.StatusNotFound},
		{name: "escaped slash", method: http.MethodGet, path: Prefix + "%2E%2E%2Fassets.go", wantStatus: http.StatusNotFound},
		{name: "unknown name posted", method: http.MethodPost, path: Prefix + "x.js", wantStatus: http.StatusNotFound},
		{name: "post", method: http.MethodPost, path: jsPath, wantStatus: http.StatusMethodNotAllowed},
		{name: "put", method: http.MethodPut, path: cssPath, wantStatus: http.StatusMethodNotAllowed},
		{name: "delete", method: http.MethodDelete, path: jsPath, wantStatus: http.StatusMethodNotAllowed},
		{name: "options", method: http.MethodOptions, path: jsPath, wantStatus: http.StatusMethodNotAllowed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, tc.method, srv.URL+tc.path, nil)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("%s %s: status %d, want %d", tc.method, tc.path, resp.StatusCode, tc.wantStatus)
			}
			if got := resp.Header.Get("Content-Type"); got != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type = %q, want text/plain", got)
			}
			if got := resp.Header.Get("Cache-Control"); strings.Contains(got, "immutable") {
				t.Errorf("an error is cacheable for good: Cache-Control %q", got)
			}
			if len(body) == 0 || len(body) > 64 {
				t.Errorf("body %q: want a short message", body)
			}
			if tc.wantStatus == http.StatusMethodNotAllowed {
				if got := resp.Header.Get("Allow"); got != "GET, HEAD" {
					t.Errorf("Allow = %q, want GET, HEAD", got)
				}
			}
		})
	}
}

// TestLoadRejects: a dist/ the server must refuse to start with.
func TestLoadRejects(t *testing.T) {
	js := []byte("console.log(1)\n")
	css := []byte("body{}\n")
	jsName, cssName := hashedName("console.js", js), hashedName("console.css", css)
	manifest := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	good := func() fstest.MapFS {
		return fstest.MapFS{
			"dist/" + jsName:     {Data: js},
			"dist/" + cssName:    {Data: css},
			"dist/manifest.json": manifest(`{"console.js":"` + jsName + `","console.css":"` + cssName + `"}`),
		}
	}
	tests := []struct {
		name    string
		edit    func(fstest.MapFS)
		wantErr string
	}{
		{name: "no manifest", edit: func(m fstest.MapFS) { delete(m, "dist/manifest.json") }, wantErr: "read manifest"},
		{name: "not JSON", edit: func(m fstest.MapFS) { m["dist/manifest.json"] = manifest("{") }, wantErr: "decode manifest"},
		{name: "lacks the stylesheet", edit: func(m fstest.MapFS) { m["dist/manifest.json"] = manifest(`{"console.js":"` + jsName + `"}`) }, wantErr: "manifest lacks console.css"},
		{name: "lacks the script", edit: func(m fstest.MapFS) { m["dist/manifest.json"] = manifest(`{"console.css":"` + cssName + `"}`) }, wantErr: "manifest lacks console.js"},
		{name: "file missing", edit: func(m fstest.MapFS) { delete(m, "dist/"+cssName) }, wantErr: "read " + cssName},
		{name: "contents changed", edit: func(m fstest.MapFS) { m["dist/"+jsName] = &fstest.MapFile{Data: []byte("alert(1)")} }, wantErr: "contents hash to"},
		{name: "unservable type", edit: func(m fstest.MapFS) {
			m["dist/manifest.json"] = manifest(`{"console.js":"` + jsName + `","console.css":"` + cssName + `","x.html":"x-0000000000.html"}`)
		}, wantErr: `maps x.html to "x-0000000000.html"`},
		{name: "path in name", edit: func(m fstest.MapFS) {
			m["dist/manifest.json"] = manifest(`{"console.js":"../` + jsName + `","console.css":"` + cssName + `"}`)
		}, wantErr: "not a servable file name"},
	}
	if _, _, err := load(good(), "dist"); err != nil {
		t.Fatalf("a good dist: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := good()
			tc.edit(fsys)
			_, _, err := load(fsys, "dist")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("load: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestAcceptsGzip(t *testing.T) {
	tests := []struct {
		name   string
		fields []string
		want   bool
	}{
		{name: "absent", want: false},
		{name: "gzip", fields: []string{"gzip"}, want: true},
		{name: "upper case", fields: []string{"GZIP"}, want: true},
		{name: "x-gzip", fields: []string{"x-gzip"}, want: true},
		{name: "in a list with q", fields: []string{"br;q=1.0, gzip;q=0.5"}, want: true},
		{name: "q=0", fields: []string{"gzip;q=0"}, want: false},
		{name: "q=0.000", fields: []string{"gzip; q=0.000"}, want: false},
		{name: "star", fields: []string{"*"}, want: true},
		{name: "star but gzip refused", fields: []string{"*, gzip;q=0"}, want: false},
		{name: "star refused", fields: []string{"*;q=0"}, want: false},
		{name: "malformed q", fields: []string{"gzip;q=lots"}, want: false},
		{name: "q above 1", fields: []string{"gzip;q=2"}, want: false},
		{name: "two field lines", fields: []string{"br", "gzip"}, want: true},
		{name: "identity only", fields: []string{"identity"}, want: false},
		{name: "gzip inside another token", fields: []string{"gzipped"}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := acceptsGzip(tc.fields); got != tc.want {
				t.Fatalf("acceptsGzip(%q) = %v, want %v", tc.fields, got, tc.want)
			}
		})
	}
}

// FuzzConditionalHeaders: the header parsers never panic, a tag at the
// end of any list matches, and naming identity too never turns gzip on.
func FuzzConditionalHeaders(f *testing.F) {
	for _, s := range []string{"", "gzip", "*;q=0", `"a", W/"b"`, ",,;;==", "gzip;q=0.5;q=0", "\x00\xff"} {
		f.Add(s)
	}
	const tag = `"0123456789abcdef0123456789abcdef"`
	f.Fuzz(func(t *testing.T, s string) {
		if !noneMatch([]string{s + ", " + tag}, tag) {
			t.Fatalf("noneMatch(%q + tag) = false", s)
		}
		if acceptsGzip([]string{s}) != acceptsGzip([]string{s, "identity"}) {
			t.Fatalf("naming identity changed the answer for %q", s)
		}
		_ = noneMatch([]string{s}, tag)
	})
}
