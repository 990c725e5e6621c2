package edge

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/edge/compress"
	"github.com/pictorhq/pictor/origin/contract/apidocs"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/openapi"
)

// decodeAs decodes body as Content-Encoding ce says.
func decodeAs(t *testing.T, ce string, body []byte) []byte {
	t.Helper()
	var r io.Reader
	switch ce {
	case "":
		return body
	case "br":
		r = brotli.NewReader(bytes.NewReader(body))
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		r = zr
	default:
		t.Fatalf("Content-Encoding %q", ce)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", ce, err)
	}
	return b
}

// textOf returns n bytes of text that compresses as real answers do.
func textOf(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `{"id":"img_%08x","width":%d,"format":"png"},`, i*2654435761, 100+i%900)
	}
	return b.Bytes()[:n]
}

// textOrigin is an origin answering the paths of its table, with ETags
// and If-None-Match (weak comparison) as the origin does.
type textOrigin struct {
	*httptest.Server
	inm chan string // the If-None-Match the origin got, when not empty
}

type textAnswer struct {
	contentType, encoding, cacheControl, etag string
	body                                      []byte
	stream                                    bool // written in pieces, without Content-Length
}

func newTextOrigin(t *testing.T, answers map[string]textAnswer) *textOrigin {
	o := &textOrigin{inm: make(chan string, 100)}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		if a.encoding != "" {
			h.Set("Content-Encoding", a.encoding)
		}
		if a.cacheControl != "" {
			h.Set("Cache-Control", a.cacheControl)
		}
		if a.etag != "" {
			h.Set("ETag", a.etag)
		}
		if inm := r.Header.Get("If-None-Match"); inm != "" {
			o.inm <- inm
			if a.etag != "" && etagMatch([]byte(inm), []byte(a.etag)) {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
		if a.stream {
			f := w.(http.Flusher)
			for b := a.body; len(b) > 0; {
				n := min(len(b), 3000)
				w.Write(b[:n])
				f.Flush()
				b = b[n:]
			}
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body)) // Range, HEAD, Content-Length
	}))
	t.Cleanup(o.Close)
	return o
}

// TestCompressText: every text type the edge relays or serves is
// compressed in the coding the client prefers and decodes to the bytes the
// origin (or the binary) holds; Vary, the per-coding ETag and the length
// are right, and HEAD says what GET does.
func TestCompressText(t *testing.T) {
	body := textOf(40 << 10)
	types := map[string]string{
		"json": "application/json; charset=utf-8", "problem": "application/problem+json", "yaml": "application/yaml",
		"html": "text/html; charset=utf-8", "js": "text/javascript", "css": "text/css", "svg": "image/svg+xml",
		"plain": "text/plain; charset=utf-8",
	}
	answers := map[string]textAnswer{}
	for name, ct := range types {
		answers["/t/"+name] = textAnswer{contentType: ct, etag: `"` + name + `-v1"`, body: body}
	}
	answers["/t/stream"] = textAnswer{contentType: "application/json", body: textOf(300 << 10), stream: true}
	o := newTextOrigin(t, answers)
	base := startEdge(t, newTunedEdge(t, o.URL, nil))

	type target struct {
		path string
		body []byte
		etag string
	}
	var targets []target
	for name := range types {
		targets = append(targets, target{"/t/" + name, body, `"` + name + `-v1"`})
	}
	targets = append(targets, target{"/t/stream", answers["/t/stream"].body, ""},
		target{"/v1/openapi.json", openapi.JSON(), openapi.JSONETag()},
		target{"/v1/openapi.yaml", openapi.YAML(), openapi.YAMLETag()})
	for _, f := range apidocs.Files() {
		if len(f.Body) >= compress.MinSize {
			targets = append(targets, target{f.Path, f.Body, f.ETag})
		}
	}
	for _, tg := range targets {
		for _, tc := range []struct{ ae, want string }{
			{"gzip, deflate, br, zstd", "br"},
			{"gzip", "gzip"},
			{"br;q=0.5, gzip", "gzip"},
			{"identity", ""},
			{"*;q=0", ""},
		} {
			t.Run(tg.path+" "+tc.ae, func(t *testing.T) {
				r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: tg.path, Header: map[string]string{"Accept-Encoding": tc.ae}})
				apitest.WantStatus(t, r, http.StatusOK)
				if ce := r.Header.Get("Content-Encoding"); ce != tc.want {
					t.Fatalf("Content-Encoding %q, want %q", ce, tc.want)
				}
				if got := decodeAs(t, tc.want, r.Body); !bytes.Equal(got, tg.body) {
					t.Fatalf("decoded %d bytes, not the %d of the source", len(got), len(tg.body))
				}
				if tc.want != "" && len(r.Body) >= len(tg.body) {
					t.Errorf("%d bytes compressed into %d", len(tg.body), len(r.Body))
				}
				if v := r.Header.Values("Vary"); len(v) != 1 || v[0] != "Accept-Encoding" {
					t.Errorf("Vary %q, want Accept-Encoding once", v)
				}
				wantETag := ""
				if tg.etag != "" {
					wantETag = strings.TrimSuffix(tg.etag, `"`)
					if tc.want != "" {
						wantETag += "-" + tc.want
					}
					wantETag += `"`
				}
				if got := r.Header.Get("ETag"); got != wantETag {
					t.Errorf("ETag %s, want %s", got, wantETag)
				}
				if cl := r.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(r.Body)) {
					t.Errorf("Content-Length %s for %d bytes", cl, len(r.Body))
				}
				head := apitest.Do(t, base, apitest.Request{Method: "HEAD", Path: tg.path, Header: map[string]string{"Accept-Encoding": tc.ae}})
				for _, k := range []string{"Content-Encoding", "Vary", "ETag", "Content-Type", "Content-Length"} {
					if head.Header.Get(k) != r.Header.Get(k) {
						t.Errorf("HEAD's %s %q, GET's %q", k, head.Header.Get(k), r.Header.Get(k))
					}
				}
			})
		}
	}
}

// TestCompressETagPerCoding: a client revalidates the variant it holds:
// its ETag names the coding, a 304 gives that tag back, and another
// variant's tag does not match.
func TestCompressETagPerCoding(t *testing.T) {
	o := newTextOrigin(t, map[string]textAnswer{"/t/json": {contentType: "application/json", etag: `"j1"`, body: textOf(8 << 10)}})
	base := startEdge(t, newTunedEdge(t, o.URL, nil))
	for _, tc := range []struct {
		name, path, ae, inm, etag string
		status                    int
	}{
		{"relayed, br", "/t/json", "br, gzip", `"j1-br"`, `"j1-br"`, 304},
		{"relayed, gzip", "/t/json", "gzip", `W/"j1-gzip"`, `"j1-gzip"`, 304},
		{"relayed, br in a list", "/t/json", "br", `"other", "j1-br"`, `"j1-br"`, 304},
		{"relayed, identity", "/t/json", "identity", `"j1"`, `"j1"`, 304},
		{"relayed, br held, identity asked", "/t/json", "identity", `"j1-br"`, `"j1"`, 200},
		{"relayed, br held, gzip asked", "/t/json", "gzip", `"j1-br"`, `"j1-gzip"`, 200},
		{"relayed, another tag", "/t/json", "br", `"j0-br"`, `"j1-br"`, 200},
		{"openapi, br", "/v1/openapi.json", "br", compress.ETag(openapi.JSONETag(), compress.Brotli), compress.ETag(openapi.JSONETag(), compress.Brotli), 304},
		{"openapi, gzip held, br asked", "/v1/openapi.json", "br", compress.ETag(openapi.JSONETag(), compress.Gzip), compress.ETag(openapi.JSONETag(), compress.Brotli), 200},
		{"openapi, identity held, gzip asked", "/v1/openapi.json", "gzip", openapi.JSONETag(), compress.ETag(openapi.JSONETag(), compress.Gzip), 200},
		{"openapi, identity", "/v1/openapi.json", "", openapi.JSONETag(), openapi.JSONETag(), 304},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{"If-None-Match": tc.inm, "Accept-Encoding": tc.ae}
			if tc.ae == "" {
				hdr["Accept-Encoding"] = "identity"
			}
			r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: tc.path, Header: hdr})
			apitest.WantStatus(t, r, tc.status)
			if got := r.Header.Get("ETag"); got != tc.etag {
				t.Errorf("ETag %s, want %s", got, tc.etag)
			}
			if tc.status == 304 && tc.etag != tc.inm && r.Header.Get("Vary") != "Accept-Encoding" {
				t.Error("the 304 of a coded variant without Vary: Accept-Encoding")
			}
		})
	}
	// The origin got its own tags for the variant asked for.
	for _, want := range []string{`"j1"`, `W/"j1"`, `"other", "j1"`} {
		if got := <-o.inm; got != want {
			t.Errorf("the origin got If-None-Match %s, want %s", got, want)
		}
	}
}

// TestCompressLeavesAlone: what is not text, is small, is coded already,
// asks no-transform or is a range goes out as the origin sent it.
func TestCompressLeavesAlone(t *testing.T) {
	noise := make([]byte, 16<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(textOf(20 << 10))
	zw.Close()
	text := textOf(20 << 10)
	o := newTextOrigin(t, map[string]textAnswer{
		"/t/png":         {contentType: "image/png", etag: `"p"`, body: noise},
		"/t/pdf":         {contentType: "application/pdf", body: noise},
		"/t/octets":      {contentType: "application/octet-stream", body: text},
		"/t/small":       {contentType: "application/json", etag: `"s"`, body: textOf(compress.MinSize - 1)},
		"/t/gzipped":     {contentType: "application/json", encoding: "gzip", etag: `"g"`, body: gz.Bytes()},
		"/t/notransform": {contentType: "application/json", cacheControl: "public, no-transform", body: text},
		"/t/range":       {contentType: "application/json", etag: `"r"`, body: text},
		"/t/events":      {contentType: "text/event-stream", body: text, stream: true},
		"/t/norange":     {contentType: "application/json", body: text, stream: true},
	})
	base := startEdge(t, newTunedEdge(t, o.URL, nil))
	for _, tc := range []struct {
		name, path, rng string
		body            []byte
		status          int
		vary            bool
	}{
		{"image", "/t/png", "", noise, 200, false},
		{"pdf", "/t/pdf", "", noise, 200, false},
		{"octets", "/t/octets", "", text, 200, false},
		{"small", "/t/small", "", textOf(compress.MinSize - 1), 200, true},
		{"coded by the origin", "/t/gzipped", "", gz.Bytes(), 200, false},
		{"no-transform", "/t/notransform", "", text, 200, false},
		{"range", "/t/range", "bytes=100-1099", text[100:1100], 206, false},
		{"whole despite the range header", "/t/range", "bytes=0-", text, 206, false},
		{"event stream", "/t/events", "", text, 200, false},
		// A range asks for the identity form: the whole of it too, when
		// the origin ignores the range.
		{"range the origin ignores", "/t/norange", "bytes=100-1099", text, 200, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{"Accept-Encoding": "br, gzip"}
			if tc.rng != "" {
				hdr["Range"] = tc.rng
			}
			r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: tc.path, Header: hdr})
			apitest.WantStatus(t, r, tc.status)
			if ce := r.Header.Get("Content-Encoding"); tc.path == "/t/gzipped" {
				if ce != "gzip" || r.Header.Get("ETag") != `"g"` {
					t.Fatalf("Content-Encoding %q, ETag %s: want the origin's", ce, r.Header.Get("ETag"))
				}
			} else if ce != "" {
				t.Fatalf("Content-Encoding %q, want none", ce)
			}
			if !bytes.Equal(r.Body, tc.body) {
				t.Fatalf("%d bytes that are not the origin's %d", len(r.Body), len(tc.body))
			}
			if cl := r.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(tc.body)) {
				t.Errorf("Content-Length %s, want %d", cl, len(tc.body))
			}
			if got := r.Header.Get("Vary") == "Accept-Encoding"; got != tc.vary {
				t.Errorf("Vary %q, want Accept-Encoding: %v", r.Header.Get("Vary"), tc.vary)
			}
			if etag := r.Header.Get("ETag"); strings.Contains(etag, "-br") || strings.Contains(etag, "-gzip") {
				t.Errorf("ETag %s names a coding", etag)
			}
		})
	}
	t.Run("small documents of the binary", func(t *testing.T) {
		for _, f := range apidocs.Files() {
			if len(f.Body) >= compress.MinSize {
				continue
			}
			r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: f.Path, Header: map[string]string{"Accept-Encoding": "br, gzip"}})
			if r.Header.Get("Content-Encoding") != "" || r.Header.Get("Vary") != "" || !bytes.Equal(r.Body, f.Body) || r.Header.Get("ETag") != f.ETag {
				t.Errorf("%s: %d bytes, headers %v", f.Path, len(r.Body), r.Header)
			}
		}
	})
}

// BenchmarkOpenAPICompressed is BenchmarkOpenAPI with Accept-Encoding:
// brotli and gzip, and none, side by side (no time is asserted): the
// answer is the form compressed at build time, so it costs what the
// uncompressed one does, on a twentieth of the bytes.
func BenchmarkOpenAPICompressed(b *testing.B) {
	o := newFakeOrigin(b)
	e := newTestEdge(b, o.URL)
	for _, ae := range []string{"", "gzip", "gzip, deflate, br, zstd"} {
		b.Run("accept-encoding="+ae, func(b *testing.B) {
			var ctx fasthttp.RequestCtx
			ctx.Request.SetRequestURI("/v1/openapi.json")
			if ae != "" {
				ctx.Request.Header.Set("Accept-Encoding", ae)
			}
			b.ReportAllocs()
			for b.Loop() {
				ctx.Response.Reset()
				e.handle(&ctx)
			}
			b.ReportMetric(float64(len(ctx.Response.Body())), "bytes/answer")
			if ctx.Response.StatusCode() != 200 {
				b.Fatalf("status %d", ctx.Response.StatusCode())
			}
		})
	}
}

// TestHostileAcceptEncoding: Accept-Encoding headers meant to hurt (many
// elements, malformed q-values, odd bytes) get an answer the client can
// decode, never a 500 or a hang, on the
// documents of the binary and on relayed text alike.
func TestHostileAcceptEncoding(t *testing.T) {
	text := textOf(8 << 10)
	o := newTextOrigin(t, map[string]textAnswer{"/t/json": {contentType: "application/json", body: text}})
	base := startEdge(t, newTunedEdge(t, o.URL, nil))
	for name, ae := range map[string]string{
		"thousands of elements": strings.Repeat("br;q=0.5000, x;q=1, ", 150) + "gzip;q=0.001",
		"only separators":       strings.Repeat(",;=", 1000),
		"q without end":         "br;q=0." + strings.Repeat("0", 3000) + "1",
		"tabs and empty values": "br\t;\tq=\t, \tgzip\t;q=1;q=0",
		"non-ASCII":             "brötli, gzíp, br;q=１",
	} {
		t.Run(name, func(t *testing.T) {
			for _, tg := range []struct {
				path string
				body []byte
			}{{"/t/json", text}, {"/v1/openapi.json", openapi.JSON()}} {
				r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: tg.path, Header: map[string]string{"Accept-Encoding": ae}})
				apitest.WantStatus(t, r, http.StatusOK)
				if got := decodeAs(t, r.Header.Get("Content-Encoding"), r.Body); !bytes.Equal(got, tg.body) {
					t.Fatalf("%s: decoded %d bytes, not the %d of the source", tg.path, len(got), len(tg.body))
				}
			}
		})
	}
}
