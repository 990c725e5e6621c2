package edge

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"
	"go.yaml.in/yaml/v4"

	"github.com/pictorhq/pictor/origin/contract/apidocs"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/openapi"
)

// strictOrigin stands for the origin behind an edge that must answer by
// itself: any request it gets fails the test, except for the paths listed
// as forwarded on purpose, which it records.
type strictOrigin struct {
	*httptest.Server
	mu    sync.Mutex
	asked []string
}

func newStrictOrigin(t *testing.T, forwarded ...string) *strictOrigin {
	o := &strictOrigin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.asked = append(o.asked, r.Method+" "+r.URL.Path)
		o.mu.Unlock()
		if !slices.Contains(forwarded, r.URL.Path) {
			t.Errorf("the origin was asked for %s %s, which the edge answers itself", r.Method, r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"Not Found","message":"from the origin","statusCode":404}`))
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *strictOrigin) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.asked)
}

// docCase is one file the edge serves from the binary.
type docCase struct {
	path, contentType, etag, cacheControl string
	body                                  []byte
	page, public                          bool
}

func docCases() []docCase {
	cases := []docCase{
		{path: "/v1/openapi.json", contentType: "application/json; charset=utf-8", etag: openapi.JSONETag(),
			cacheControl: "public, max-age=300", body: openapi.JSON(), public: true},
		{path: "/v1/openapi.yaml", contentType: "application/yaml; charset=utf-8", etag: openapi.YAMLETag(),
			cacheControl: "public, max-age=300", body: openapi.YAML(), public: true},
	}
	types := map[string]string{
		apidocs.PagePath:       "text/html; charset=utf-8",
		apidocs.PagePath + "/": "text/html; charset=utf-8",
		apidocs.ScriptPath:     "text/javascript; charset=utf-8",
		apidocs.StylePath:      "text/css; charset=utf-8",
		apidocs.LicensePath:    "text/plain; charset=utf-8",
		apidocs.NoticesPath:    "text/plain; charset=utf-8",
	}
	for _, f := range apidocs.Files() {
		cc := "no-cache"
		if f.Path == apidocs.ScriptPath {
			cc = "public, max-age=31536000, immutable"
		}
		cases = append(cases, docCase{path: f.Path, contentType: types[f.Path], etag: f.ETag, cacheControl: cc, body: f.Body, page: f.Page})
		delete(types, f.Path)
	}
	if len(types) > 0 {
		panic("apidocs.Files() lacks " + strings.Join(slices.Sorted(func(yield func(string) bool) {
			for p := range types {
				yield(p)
			}
		}), ", "))
	}
	return cases
}

// TestDocsAnsweredByTheEdge: the OpenAPI document and the reference page
// are answered by the edge, byte for byte what the binary holds, with
// their types, ETags, caching, CORS and page headers; conditional
// requests, HEAD, preflights and other methods too; and none of it
// reaches the origin.
func TestDocsAnsweredByTheEdge(t *testing.T) {
	o := newStrictOrigin(t, "/docsearch", "/v1/openapi.xml")
	base := startEdge(t, newTunedEdge(t, o.URL, nil))
	for _, c := range docCases() {
		t.Run(c.path, func(t *testing.T) {
			// Without compression (compress_test.go has the codings).
			identity := map[string]string{"Accept-Encoding": "identity"}
			r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: c.path, Header: identity})
			apitest.WantStatus(t, r, http.StatusOK)
			if !bytes.Equal(r.Body, c.body) {
				t.Fatalf("body: %d bytes that differ from the %d embedded", len(r.Body), len(c.body))
			}
			want := map[string]string{
				"Content-Type": c.contentType, "ETag": c.etag, "Cache-Control": c.cacheControl,
				"X-Content-Type-Options": "nosniff", "Content-Length": strconv.Itoa(len(c.body)),
				"Access-Control-Allow-Origin": "", "Content-Security-Policy": "", "X-Frame-Options": "",
			}
			if c.public {
				want["Access-Control-Allow-Origin"] = "*"
			}
			if c.page {
				want["Content-Security-Policy"] = apidocs.ContentSecurityPolicy
				want["X-Frame-Options"] = "DENY"
				want["Referrer-Policy"] = "no-referrer"
			}
			for k, v := range want {
				if got := r.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}

			head := apitest.Do(t, base, apitest.Request{Method: "HEAD", Path: c.path, Header: identity})
			apitest.WantStatus(t, head, http.StatusOK)
			if len(head.Body) != 0 || head.Header.Get("Content-Length") != strconv.Itoa(len(c.body)) ||
				head.Header.Get("ETag") != c.etag || head.Header.Get("Content-Type") != c.contentType {
				t.Errorf("HEAD: %d body bytes, headers %v", len(head.Body), head.Header)
			}

			other := `"0123456789abcdef0123456789abcdef"`
			for _, tc := range []struct {
				name, inm string
				status    int
			}{
				{"its tag", c.etag, http.StatusNotModified},
				{"weak", "W/" + c.etag, http.StatusNotModified},
				{"in a list", other + ", " + c.etag, http.StatusNotModified},
				{"in a list without spaces", other + "," + c.etag, http.StatusNotModified},
				{"any", "*", http.StatusNotModified},
				{"another tag", other, http.StatusOK},
				{"unquoted", strings.Trim(c.etag, `"`), http.StatusOK},
			} {
				r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: c.path, Header: map[string]string{"If-None-Match": tc.inm, "Accept-Encoding": "identity"}})
				if r.Status != tc.status {
					t.Errorf("If-None-Match %s (%s): %d, want %d", tc.inm, tc.name, r.Status, tc.status)
					continue
				}
				if tc.status == http.StatusNotModified && (len(r.Body) != 0 || r.Header.Get("ETag") != c.etag ||
					r.Header.Get("Cache-Control") != c.cacheControl || r.Header.Get("Access-Control-Allow-Origin") != want["Access-Control-Allow-Origin"]) {
					t.Errorf("304 (%s): %d body bytes, headers %v", tc.name, len(r.Body), r.Header)
				}
			}

			allow := "GET, HEAD"
			if c.public {
				allow = "GET, HEAD, OPTIONS"
				pre := apitest.Do(t, base, apitest.Request{Method: "OPTIONS", Path: c.path, Header: map[string]string{
					"Origin": "https://tools.example", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "if-none-match"}})
				apitest.WantStatus(t, pre, http.StatusNoContent)
				for k, v := range map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": allow, "Allow": allow} {
					if got := pre.Header.Get(k); got != v {
						t.Errorf("preflight: %s = %q, want %q", k, got, v)
					}
				}
			}
			methods := []string{"POST", "PUT", "PATCH", "DELETE"}
			if !c.public {
				methods = append(methods, "OPTIONS")
			}
			for _, m := range methods {
				r := apitest.Do(t, base, apitest.Request{Method: m, Path: c.path, Raw: `{"a":1}`, ContentType: "application/json"})
				apitest.WantMessage(t, apitest.WantError(t, r, http.StatusMethodNotAllowed), m, c.path)
				if got := r.Header.Get("Allow"); got != allow {
					t.Errorf("%s: Allow = %q, want %q", m, got, allow)
				}
			}
		})
	}

	t.Run("unknown file under /docs/", func(t *testing.T) {
		r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/docs/redoc-0.0.0.js"})
		apitest.WantMessage(t, apitest.WantError(t, r, http.StatusNotFound), "/docs/redoc-0.0.0.js")
	})
	t.Run("spellings fasthttp normalizes", func(t *testing.T) {
		for _, p := range []string{"/v1//openapi.json", "/v1/./openapi.json", "/v1/x/../openapi.json", "/v1/openapi%2Ejson", "/v1/openapi.json?download=1"} {
			r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: p})
			if r.Status != http.StatusOK || !bytes.Equal(r.Body, openapi.JSON()) {
				t.Errorf("GET %s: %d, %d bytes", p, r.Status, len(r.Body))
			}
		}
	})
	t.Run("neighbours are forwarded", func(t *testing.T) {
		for _, p := range []string{"/docsearch", "/v1/openapi.xml"} {
			if r := apitest.Do(t, base, apitest.Request{Method: "GET", Path: p}); r.Status != http.StatusNotFound || !bytes.Contains(r.Body, []byte("from the origin")) {
				t.Errorf("GET %s: %d %s, want the origin's 404", p, r.Status, r.Body)
			}
		}
	})
	if got, want := o.requests(), []string{"GET /docsearch", "GET /v1/openapi.xml"}; !slices.Equal(got, want) {
		t.Fatalf("the origin was asked for %q, want only %q", got, want)
	}
}

// TestOpenAPIDocumentsParse: the JSON answer is JSON, the YAML answer is
// YAML, and both hold the same document.
func TestOpenAPIDocumentsParse(t *testing.T) {
	o := newStrictOrigin(t)
	base := startEdge(t, newTunedEdge(t, o.URL, nil))
	var fromJSON, fromYAML any
	if err := json.Unmarshal(apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/v1/openapi.json"}).Body, &fromJSON); err != nil {
		t.Fatalf("/v1/openapi.json is not JSON: %v", err)
	}
	if err := yaml.Unmarshal(apitest.Do(t, base, apitest.Request{Method: "GET", Path: "/v1/openapi.yaml"}).Body, &fromYAML); err != nil {
		t.Fatalf("/v1/openapi.yaml is not YAML: %v", err)
	}
	// YAML decodes integers as int: compare both as JSON.
	b, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatalf("the YAML document does not encode as JSON: %v", err)
	}
	var yamlAsJSON any
	if err := json.Unmarshal(b, &yamlAsJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, yamlAsJSON) {
		t.Fatal("the YAML document differs from the JSON one")
	}
	doc, _ := fromJSON.(map[string]any)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.") {
		t.Fatalf("openapi = %v, want an OpenAPI 3 document", doc["openapi"])
	}
}

// BenchmarkOpenAPI is the edge answering /v1/openapi.json from the binary:
// like an image hit, it must not allocate.
func BenchmarkOpenAPI(b *testing.B) {
	o := newFakeOrigin(b)
	e := newTestEdge(b, o.URL)
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/v1/openapi.json")
	b.ReportAllocs()
	for b.Loop() {
		ctx.Response.Reset()
		e.handle(&ctx)
	}
	if ctx.Response.StatusCode() != 200 || !bytes.Equal(ctx.Response.Body(), openapi.JSON()) {
		b.Fatalf("status %d", ctx.Response.StatusCode())
	}
	if n := o.gets.Load(); n != 0 {
		b.Fatalf("%d requests reached the origin", n)
	}
}
