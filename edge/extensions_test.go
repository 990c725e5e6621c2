package edge

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/jpeg" // image.DecodeConfig reads what the edge answers
	_ "image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	_ "golang.org/x/image/webp"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/imaging"
)

// Every spelling of every format, as the issue lists them (issue 27): the
// first of each is the canonical one.
var formatSpellings = []struct {
	format      imaging.Format
	contentType string
	decoded     string // image.DecodeConfig's name; none for PDF
	exts        []string
}{
	{imaging.PNG, "image/png", "png", []string{".png", "", ".PNG", ".Png", ".pNG"}},
	{imaging.JPEG, "image/jpeg", "jpeg", []string{".jpg", ".JPG", ".Jpg", ".jpeg", ".JPEG", ".Jpeg"}},
	{imaging.WebP, "image/webp", "webp", []string{".webp", ".WEBP", ".WebP"}},
	{imaging.PDF, "application/pdf", "", []string{".pdf", ".PDF", ".Pdf"}},
}

// badExtensions name no format: 404, from the edge itself.
var badExtensions = []string{".", "..png", ".PNG.", ".png.", ".gif", ".pngx", ".jpe", ".JPEGG", ".svg", ".p%20ng", ".png%00"}

// spellingOrigin serves testID the way the origin does: each format at
// "<id>.<ext>" in any spelling the origin reads (letters in either case,
// jpeg for jpg, the id in either case), ignoring the query (the origin
// serves masters only), and signed create-and-render URLs
// ".../key/token[/format]" the same way. It counts the requests by path.
type spellingOrigin struct {
	*httptest.Server
	bodies map[imaging.Format][]byte
	mu     sync.Mutex
	asked  map[string]int
	total  int
}

// originFormats is the origin's reading of an extension or a signed URL's
// format segment (origin/images), written out here as the edge may not
// import it.
var originFormats = map[string]imaging.Format{"": imaging.PNG, "png": imaging.PNG, "jpg": imaging.JPEG,
	"jpeg": imaging.JPEG, "webp": imaging.WebP, "pdf": imaging.PDF}

const signedPath = "/v1/image/create-and-render/key-1/0123abcd"

func newSpellingOrigin(t *testing.T) *spellingOrigin {
	t.Helper()
	master := redPNG()
	o := &spellingOrigin{bodies: map[imaging.Format][]byte{imaging.PNG: master,
		imaging.PDF: []byte("%PDF-1.4\n% bytes to serve\n%%EOF\n")}, asked: map[string]int{}}
	for _, f := range []imaging.Format{imaging.JPEG, imaging.WebP} {
		b, err := imaging.Apply(context.Background(), master, imaging.Options{}, f)
		if err != nil {
			t.Fatal(err)
		}
		o.bodies[f] = b
	}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.asked[r.URL.Path]++
		o.total++
		o.mu.Unlock()
		var (
			format imaging.Format
			ok     bool
		)
		if rest, signed := strings.CutPrefix(r.URL.Path, signedPath); signed {
			format, ok = originFormats[strings.ToLower(strings.TrimPrefix(rest, "/"))]
			ok = ok && (rest == "" || rest[0] == '/')
			w.Header().Set(contract.HeaderTag, contract.KeyTag("key-1"))
		} else {
			id, ext, dotted := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/image/"), ".")
			format, ok = originFormats[strings.ToLower(ext)]
			ok = ok && strings.ToLower(id) == testID && (!dotted || ext != "")
			w.Header().Set(contract.HeaderImage, testID)
		}
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			w.Write([]byte(`{"error":"Not Found","message":"Image not found","statusCode":404}`))
			return
		}
		w.Header().Set("Content-Type", format.ContentType())
		w.Header().Set("ETag", `"`+string(format)+`-etag"`)
		w.Header().Set(contract.HeaderOrg, "org-1")
		w.Write(o.bodies[format])
	}))
	t.Cleanup(o.Close)
	return o
}

// requests returns how many requests the origin had.
func (o *spellingOrigin) requests() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.total
}

// wantImage checks that r is format's rendition, w×h (decoded), or the
// origin's PDF.
func wantImage(t *testing.T, r *apitest.Response, contentType, decoded string, pdf []byte, w, h int) {
	t.Helper()
	apitest.WantStatus(t, r, 200)
	if ct := r.Header.Get("Content-Type"); ct != contentType {
		t.Fatalf("Content-Type %q, want %q", ct, contentType)
	}
	if decoded == "" {
		if !bytes.Equal(r.Body, pdf) {
			t.Fatalf("not the PDF: %.40q", r.Body)
		}
		return
	}
	cfg, name, err := image.DecodeConfig(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("decode: %v (%.40q)", err, r.Body)
	}
	if name != decoded || cfg.Width != w || cfg.Height != h {
		t.Fatalf("a %s of %d×%d, want a %s of %d×%d", name, cfg.Width, cfg.Height, decoded, w, h)
	}
}

// TestHostileImageExtensionSpellings: every spelling of every format, the
// id in either case, with and without transformation parameters, is that
// format: the transformation applies (decoded format and size), and on a
// caching edge every spelling of a rendition is one cache entry under its
// canonical key, filled once (the origin is asked once). An edge without a
// purge channel answers the same. Other extensions are 404 with the
// standard body, from the edge. ".PNG?width=300" was relayed to the
// origin, which answered its full-size master, cacheable for a year.
func TestHostileImageExtensionSpellings(t *testing.T) {
	o := newSpellingOrigin(t)
	queries := []struct {
		query string
		w, h  int
		pdf   []string // the fields a PDF refuses
	}{
		{"", 400, 200, nil},
		{"?width=100", 100, 50, []string{"width"}},
		{"?crop_width=50%&height=40&utm_source=x", 40, 40, []string{"crop_width", "height"}},
	}
	for _, edge := range []struct {
		name    string
		caching bool
		tune    func(*Config)
	}{
		{"caching", true, nil},
		{"without a purge channel", false, func(c *Config) { c.Standalone = true }},
	} {
		t.Run(edge.name, func(t *testing.T) {
			e := newTunedEdge(t, o.URL, edge.tune)
			if e.caching() != edge.caching {
				t.Fatalf("caching() = %v: the test checks another edge", e.caching())
			}
			base := startEdge(t, e)
			for _, f := range formatSpellings {
				for _, q := range queries {
					t.Run(fmt.Sprintf("%s%s", f.format, q.query), func(t *testing.T) {
						refused := f.format == imaging.PDF && q.pdf != nil
						var key []byte
						if !refused {
							opts, err := imaging.Parse(f.format, []byte(strings.TrimPrefix(q.query, "?")))
							if err != nil {
								t.Fatal(err)
							}
							key = opts.Key([]byte("i|" + testID + "|" + string(f.format) + "|"))
						}
						for i, ext := range f.exts {
							for _, id := range []string{testID, strings.ToUpper(testID)} {
								before := o.requests()
								r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/v1/image/" + id + ext + q.query})
								e.stores.settle()
								if refused {
									for _, field := range q.pdf {
										apitest.WantField(t, r, field)
									}
									if n := o.requests() - before; n != 0 {
										t.Fatalf("%s%s%s: %d origin requests for a refused rendition", id, ext, q.query, n)
									}
									continue
								}
								wantImage(t, r, f.contentType, f.decoded, o.bodies[imaging.PDF], q.w, q.h)
								if !edge.caching {
									continue
								}
								if _, _, ok := e.cache.Get(key); !ok {
									t.Fatalf("%s%s: nothing cached under the canonical key %q", id, ext, key)
								}
								if n := o.requests() - before; n != 0 && (i > 0 || id != testID) {
									t.Fatalf("%s%s%s: %d origin requests for a rendition cached under another spelling", id, ext, q.query, n)
								}
							}
						}
					})
				}
			}
			t.Run("download", func(t *testing.T) {
				r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/v1/image/" + strings.ToUpper(testID) + ".JPEG?dl=1&width=100"})
				wantImage(t, r, "image/jpeg", "jpeg", nil, 100, 50)
				if cd, want := r.Header.Get("Content-Disposition"), `attachment; filename="`+testID+`.jpg"`; cd != want {
					t.Fatalf("Content-Disposition %q, want %q", cd, want)
				}
			})
			for _, ext := range badExtensions {
				for _, q := range queries[:2] {
					t.Run("bad "+ext+q.query, func(t *testing.T) {
						before := o.requests()
						for _, id := range []string{testID, strings.ToUpper(testID)} {
							r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/v1/image/" + id + ext + q.query})
							apitest.WantMessage(t, apitest.WantError(t, r, 404), "Image not found")
						}
						if n := o.requests() - before; n != 0 {
							t.Fatalf("the origin was asked %d times", n)
						}
					})
				}
			}
		})
	}
}

// TestHostileSignedFormatSpellings: the format segment of a signed URL is
// read as an extension is: each spelling is the same cache entry (the
// origin, which reads them alike, is asked once per format), and a PDF in
// any spelling answers Range. An unknown format is the origin's 404.
func TestHostileSignedFormatSpellings(t *testing.T) {
	o := newSpellingOrigin(t)
	e := newTestEdge(t, o.URL)
	base := startEdge(t, e)
	const query = "?html=x"
	for _, f := range formatSpellings {
		t.Run(string(f.format), func(t *testing.T) {
			before := o.requests()
			var segments []string // as the extensions: none is PNG
			for _, ext := range f.exts {
				segments = append(segments, strings.Replace(ext, ".", "/", 1))
			}
			for _, seg := range segments {
				r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: signedPath + seg + query})
				e.stores.settle()
				wantImage(t, r, f.contentType, f.decoded, o.bodies[imaging.PDF], 400, 200)
			}
			if n := o.requests() - before; n != 1 {
				t.Fatalf("%d origin requests for %d spellings of one signed URL, want 1", n, len(segments))
			}
			if f.format != imaging.PDF {
				return
			}
			for _, seg := range []string{"/PDF", "/Pdf"} {
				r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: signedPath + seg + query, Header: map[string]string{"Range": "bytes=0-3"}})
				apitest.WantStatus(t, r, 206)
				if string(r.Body) != "%PDF" {
					t.Fatalf("%s: range body %q", seg, r.Body)
				}
			}
		})
	}
	for _, seg := range []string{"/gif", "/PNGX", "/jpe"} {
		r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: signedPath + seg + query})
		apitest.WantError(t, r, 404)
	}
}

// FuzzSignedKey: any path under the signed prefixes gets a key ending in
// its query; a path whose format segment names a format is keyed with it
// spelled canonically, so that segment in upper case, or dropped for PNG,
// is the same key.
func FuzzSignedKey(f *testing.F) {
	for _, p := range []string{"create-and-render/k/t", "create-and-render/k/t/PNG", "create-and-render/k/t/jpeg",
		"t-1/tok", "t-1/tok/Pdf", "t-1/tok/", "t-1/tok/gif/x", "create-and-render/", "create-and-render/k/t/webp/"} {
		f.Add(p, "html=x")
	}
	f.Fuzz(func(t *testing.T, rest, query string) {
		if !strings.HasPrefix(rest, "t-") && !strings.HasPrefix(rest, string(signedPrefix)) {
			rest = "t-" + rest
		}
		path := string(imagePrefix) + rest
		key, format := signedKey(nil, []byte(path), []byte(query))
		if !bytes.HasPrefix(key, keySigned) || !bytes.HasSuffix(key, []byte("?"+query)) {
			t.Fatalf("signedKey(%q, %q) = %q", path, query, key)
		}
		if format == "" {
			if string(key) != "s|"+path+"?"+query {
				t.Fatalf("a path without a format keyed %q, not as it is", key)
			}
			return
		}
		i := strings.LastIndexByte(path, '/')
		other := path[:i+1] + strings.ToUpper(path[i+1:])
		if format == imaging.PNG {
			other = path[:i] // drop the segment, or one was already absent: no harm
		}
		if k2, f2 := signedKey(nil, []byte(other), []byte(query)); f2 == format && !bytes.Equal(k2, key) {
			t.Fatalf("%q and %q, one format, keyed %q and %q", path, other, key, k2)
		}
	})
}
