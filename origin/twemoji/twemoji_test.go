package twemoji

import (
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		status int
	}{
		{name: "single code point", method: "GET", path: "/twemoji/1f600.svg", status: 200},
		{name: "zwj sequence", method: "GET", path: "/twemoji/1f468-200d-1f469-200d-1f467.svg", status: 200},
		{name: "skin tone", method: "GET", path: "/twemoji/1f44d-1f3fd.svg", status: 200},
		{name: "keycap", method: "GET", path: "/twemoji/23-20e3.svg", status: 200},
		{name: "head", method: "HEAD", path: "/twemoji/2764.svg", status: 200},
		{name: "unknown sequence", method: "GET", path: "/twemoji/1f600-1f600.svg", status: 404},
		{name: "not an emoji", method: "GET", path: "/twemoji/41.svg", status: 404},
		{name: "uppercase", method: "GET", path: "/twemoji/1F600.svg", status: 404},
		{name: "no extension", method: "GET", path: "/twemoji/1f600", status: 404},
		{name: "other extension", method: "GET", path: "/twemoji/1f600.png", status: 404},
		{name: "uppercase extension", method: "GET", path: "/twemoji/1f600.SVG", status: 404},
		{name: "empty name", method: "GET", path: "/twemoji/.svg", status: 404},
		{name: "leading dash", method: "GET", path: "/twemoji/-1f600.svg", status: 404},
		{name: "trailing dash", method: "GET", path: "/twemoji/1f600-.svg", status: 404},
		{name: "double dash", method: "GET", path: "/twemoji/1f468--1f469.svg", status: 404},
		{name: "seven digits", method: "GET", path: "/twemoji/01f6000.svg", status: 404},
		{name: "parent dir", method: "GET", path: "/twemoji/../twemoji.go", status: 404},
		{name: "parent dir svg", method: "GET", path: "/twemoji/../1f600.svg", status: 404},
		{name: "encoded slash", method: "GET", path: "/twemoji/..%2f..%2fetc%2fpasswd", status: 404},
		{name: "nested", method: "GET", path: "/twemoji/a/1f600.svg", status: 404},
		{name: "archive itself", method: "GET", path: "/twemoji/svg.tar.bz2", status: 404},
		{name: "wrong prefix", method: "GET", path: "/emoji/1f600.svg", status: 404},
		{name: "root", method: "GET", path: "/", status: 404},
		{name: "post", method: "POST", path: "/twemoji/1f600.svg", status: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Handler().ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			if rec.Code != tt.status {
				t.Fatalf("%s %s: status %d, want %d", tt.method, tt.path, rec.Code, tt.status)
			}
			if tt.status != 200 {
				if strings.Contains(rec.Body.String(), "<svg") {
					t.Fatalf("error response carries an SVG")
				}
				return
			}
			h := rec.Result().Header
			if got := h.Get("Content-Type"); got != "image/svg+xml" {
				t.Errorf("Content-Type %q", got)
			}
			if got := h.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
				t.Errorf("Cache-Control %q", got)
			}
			n, err := strconv.Atoi(h.Get("Content-Length"))
			if err != nil || n <= 0 {
				t.Fatalf("Content-Length %q", h.Get("Content-Length"))
			}
			if tt.method == "HEAD" {
				if rec.Body.Len() != 0 {
					t.Fatalf("HEAD sent %d bytes", rec.Body.Len())
				}
				return
			}
			if rec.Body.Len() != n {
				t.Fatalf("body has %d bytes, Content-Length says %d", rec.Body.Len(), n)
			}
			if err := checkSVG(rec.Body.Bytes()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestHandlerOverLoopback sends raw paths through a real server and client,
// which leave dot segments and escapes alone.
func TestHandlerOverLoopback(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	for _, path := range []string{
		"/twemoji/..%2F..%2Fgo.mod",
		"/twemoji/%2e%2e/twemoji.go",
		"/twemoji/1f600.svg%00",
		"/twemoji/1f600.svg/..",
		"/twemoji/./1f600.svg",
		"/twemoji//1f600.svg",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("%s: status %d, want 404 (body %.60q)", path, resp.StatusCode, body)
		}
	}
	resp, err := http.Get(srv.URL + "/twemoji/1f600.svg")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(body)) {
		t.Fatalf("status %d, Content-Length %d, %d bytes", resp.StatusCode, resp.ContentLength, len(body))
	}
}

// TestArchive checks every image in the archive: a name the handler accepts
// and an SVG body.
func TestArchive(t *testing.T) {
	imgs, err := index()
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) < 3500 {
		t.Fatalf("%d images, want the full set (3720 in @twemoji/svg 15.0.0)", len(imgs))
	}
	for name, img := range imgs {
		if !validName(name) || strconv.Itoa(len(img.body)) != img.length {
			t.Fatalf("%s: bad entry", name)
		}
		if err := checkSVG(img.body); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// checkSVG reports whether b is well-formed XML whose root is an svg element
// and that refers to nothing outside itself.
func checkSVG(b []byte) error {
	d := xml.NewDecoder(strings.NewReader(string(b)))
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "script" || se.Name.Local == "foreignObject" {
				return errors.New("active content in SVG")
			}
			for _, a := range se.Attr {
				if a.Name.Local == "href" && !strings.HasPrefix(a.Value, "#") {
					return errors.New("external reference " + a.Value)
				}
			}
		}
	}
	if root != "svg" {
		return errors.New("root element is " + root)
	}
	return nil
}

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{name: "short", in: "23", want: true},
		{name: "six digits", in: "10ffff", want: true},
		{name: "sequence", in: "1f3f3-fe0f-200d-1f308", want: true},
		{name: "empty", in: "", want: false},
		{name: "seven digits", in: "1000000", want: false},
		{name: "dash only", in: "-", want: false},
		{name: "dot", in: "1f600.", want: false},
		{name: "slash", in: "1f600/1f600", want: false},
		{name: "uppercase", in: "1F600", want: false},
		{name: "too long", in: strings.Repeat("1f600-", 20) + "1f600", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := validName(tt.in); got != tt.want {
				t.Fatalf("validName(%q) = %v", tt.in, got)
			}
		})
	}
}

func FuzzHandlerPath(f *testing.F) {
	for _, s := range []string{"/twemoji/1f600.svg", "/twemoji/../x", "/twemoji/1f468-200d-1f469.svg", "/twemoji/%2e"} {
		f.Add(s)
	}
	imgs, err := index()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path string) {
		req := httptest.NewRequest("GET", "/", nil)
		req.URL.Path = path
		rec := httptest.NewRecorder()
		Handler().ServeHTTP(rec, req)
		name := strings.TrimSuffix(strings.TrimPrefix(path, Prefix), ".svg")
		_, known := imgs[name]
		want := 404
		if known && path == Prefix+name+".svg" {
			want = 200
		}
		if rec.Code != want {
			t.Fatalf("%q: status %d, want %d", path, rec.Code, want)
		}
	})
}

var urlPattern = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.\-\[\]:]+`)

func TestScriptNamesOnlyBase(t *testing.T) {
	tests := []struct {
		name, base, want string
	}{
		{name: "origin", base: "http://127.0.0.1:8080", want: `"http://127.0.0.1:8080/twemoji/"`},
		{name: "trailing slash", base: "https://pictor.internal/", want: `"https://pictor.internal/twemoji/"`},
		{name: "relative", base: "", want: `"/twemoji/"`},
		{name: "hostile", base: `http://x"</script>`, want: `"http://x\"\u003c/script\u003e/twemoji/"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Script(tt.base)
			if !strings.Contains(s, "var base = "+tt.want+";") {
				t.Fatalf("base not embedded as %s", tt.want)
			}
			host := strings.TrimRight(tt.base, "/")
			for _, m := range urlPattern.FindAllString(s, -1) {
				if host == "" || !strings.HasPrefix(host, m) {
					t.Errorf("script names %q besides the base %q", m, tt.base)
				}
			}
			if strings.Contains(s, "cdn.") || strings.Contains(s, "jsdelivr") {
				t.Error("script names a CDN")
			}
		})
	}
}

func TestScriptShape(t *testing.T) {
	s := Script("http://127.0.0.1:1")
	for _, want := range []string{
		"twemoji.parse(root,",
		`"height:1em;width:1em;margin:0 .05em 0 .1em;vertical-align:-0.1em"`,
		"Licensed under MIT",
		`addEventListener("error"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	if !strings.HasPrefix(s, "(function () {") || !strings.HasSuffix(s, "})()") {
		t.Error("script is not one expression")
	}
}

func BenchmarkHandler(b *testing.B) {
	h := Handler()
	if _, err := index(); err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/twemoji/1f468-200d-1f469-200d-1f467.svg", nil)
	w := discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, req)
	}
}

type discard struct{ h http.Header }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(p []byte) (int, error) { return len(p), nil }
func (d discard) WriteHeader(int)             {}
