package openapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/ratelimit"
)

// publicRoutes are the routes of the real table without credentials.
var publicRoutes = []string{
	"GET /v1/image/{id}",
	"GET /v1/image/create-and-render/{api_id}/{token}",
	"GET /v1/image/create-and-render/{api_id}/{token}/{format}",
	"GET /v1/image/{template_id}/{token}",
	"GET /v1/image/{template_id}/{token}/{format}",
	"GET /v1/og/{domain_id}",
	"GET /v1/og/{domain_id}/{path...}",
}

// fakeTable is a route table with every operation of the package and a
// hidden route: the shape of the origin's (origin/openapi_test.go builds
// from the real one).
func fakeTable() []api.Route {
	var routes []api.Route
	for _, row := range []struct {
		key string
		doc *Operation
	}{
		{"GET /healthz", nil},
		{"POST /v1/image", CreateImage},
		{"POST /v1/image/batch", CreateImages},
		{"POST /v1/image/preview", PreviewImage},
		{"GET /v1/image/{id}", GetImage},
		{"DELETE /v1/image/{id}", DeleteImage},
		{"DELETE /v1/image/batch", DeleteImages},
		{"GET /v1/images", ListImages},
		{"GET /v1/images/{id}", GetImageInfo},
		{"GET /v1/image/create-and-render/{api_id}/{token}", RenderSignedImage},
		{"GET /v1/image/create-and-render/{api_id}/{token}/{format}", RenderSignedImageAs},
		{"PUT /v1/store/{id}", StoreImage},
		{"GET /v1/usage", GetUsage},
		{"POST /v1/image/{template_id}", RenderTemplate},
		{"POST /v1/image/{template_id}/{template_version}", RenderTemplateVersion},
		{"GET /v1/image/{template_id}/{token}", RenderSignedTemplate},
		{"GET /v1/image/{template_id}/{token}/{format}", RenderSignedTemplateAs},
		{"POST /v1/template", CreateTemplate},
		{"GET /v1/template", ListTemplates},
		{"GET /v1/template/{id}", ListTemplateVersions},
		{"POST /v1/template/{id}", UpdateTemplate},
		{"DELETE /v1/template/{id}", DeleteTemplate},
		{"POST /v1/template/{id}/signed-url", SignTemplateURL},
		{"GET /v1/og/{domain_id}", GetOGImageOfRoot},
		{"GET /v1/og/{domain_id}/{path...}", GetOGImage},
		{"POST /v1/og-configs", CreateOGConfig},
		{"GET /v1/og-configs", ListOGConfigs},
		{"GET /v1/og-configs/{id}", GetOGConfig},
		{"POST /v1/og-configs/{id}", UpdateOGConfig},
		{"POST /v1/og-configs/{id}/refresh", RefreshOGConfig},
		{"GET /v1/og-configs/{id}/preview", PreviewOGConfig},
		{"DELETE /v1/og-configs/{id}", DeleteOGConfig},
		{"POST /v1/proxies", CreateProxy},
		{"GET /v1/proxies", ListProxies},
		{"GET /v1/proxies/{id}", GetProxy},
		{"POST /v1/proxies/{id}", UpdateProxy},
		{"DELETE /v1/proxies/{id}", DeleteProxy},
		{"POST /v1/storage-destinations", CreateStorageDestination},
		{"GET /v1/storage-destinations", ListStorageDestinations},
		{"GET /v1/storage-destinations/aws-external-id", GetAWSExternalID},
		{"GET /v1/storage-destinations/{id}", GetStorageDestination},
		{"POST /v1/storage-destinations/{id}", UpdateStorageDestination},
		{"DELETE /v1/storage-destinations/{id}", DeleteStorageDestination},
		{"POST /v1/api-keys", CreateAPIKey},
		{"GET /v1/api-keys", ListAPIKeys},
		{"GET /v1/api-keys/{id}", GetAPIKey},
		{"POST /v1/api-keys/{id}", UpdateAPIKey},
		{"DELETE /v1/api-keys/{id}", DeleteAPIKey},
		{"GET /v1/oauth-grants", ListOAuthGrants},
		{"DELETE /v1/oauth-grants/{id}", RevokeOAuthGrant},
	} {
		method, pattern, _ := strings.Cut(row.key, " ")
		r := api.Route{Method: method, Pattern: pattern, Handler: func(http.ResponseWriter, *http.Request) {}}
		if row.doc != nil {
			r.Doc = row.doc
		} else {
			r.Hidden = "internal"
		}
		if slices.Contains(publicRoutes, row.key) {
			r.Public = true
		} else {
			r.Permission = perm.ImagesRead
		}
		if strings.Contains(pattern, "/proxies") {
			r.Group = ratelimit.ProxyRead
		}
		routes = append(routes, r)
	}
	return routes
}

func without(routes []api.Route, key string) []api.Route {
	return slices.DeleteFunc(slices.Clone(routes), func(r api.Route) bool { return r.Method+" "+r.Pattern == key })
}

func TestBuildCoversTheTable(t *testing.T) {
	doc, err := Build(fakeTable(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "1.0.0" || doc.Info.Title != "Pictor API" {
		t.Errorf("openapi %s, info %+v", doc.OpenAPI, doc.Info)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/" {
		t.Errorf("servers %v, want the relative /", doc.Servers)
	}
	if doc.Paths.Value("/healthz") != nil {
		t.Error("a hidden route is in the document")
	}
	operations := 0
	for _, item := range doc.Paths.Map() {
		operations += len(item.Operations())
		if item.Head != nil {
			operations-- // HEAD of a public GET
		}
	}
	if operations != len(described) {
		t.Errorf("%d operations in the document, the package has %d", operations, len(described))
	}
	doc, err = Build(fakeTable(), Options{ServerURL: "https://api.example.com"})
	if err != nil || doc.Servers[0].URL != "https://api.example.com" {
		t.Errorf("ServerURL: %v %v", doc.Servers, err)
	}
}

func TestBuildRefusesMismatches(t *testing.T) {
	full := fakeTable()
	extra := append(slices.Clone(full), api.Route{Method: "GET", Pattern: "/v1/secret", Permission: perm.ImagesRead})
	typedNil := append(slices.Clone(full), api.Route{Method: "GET", Pattern: "/v1/secret", Permission: perm.ImagesRead, Doc: (*Operation)(nil)})
	both := slices.Clone(full)
	both[0].Doc = GetUsage
	usageTwice := append(without(full, "GET /v1/usage"),
		api.Route{Method: "GET", Pattern: "/v1/usage", Permission: perm.UsageRead, Doc: GetUsage},
		api.Route{Method: "GET", Pattern: "/v1/usage2", Permission: perm.UsageRead, Doc: GetUsage})
	for _, c := range []struct {
		name   string
		routes []api.Route
		want   error
		names  string
	}{
		{"a route without documentation", extra, ErrUndocumented, "GET /v1/secret"},
		{"a route with a nil operation", typedNil, ErrUndocumented, "GET /v1/secret"},
		{"an operation no route has", without(full, "GET /v1/usage"), ErrNotServed, "getUsage"},
		{"a route documented and hidden", both, ErrInvalid, "GET /healthz"},
		{"one operation on two routes", usageTwice, ErrInvalid, "GET /v1/usage2"},
		{"a route twice", append(slices.Clone(full), full[1]), ErrInvalid, full[1].Method + " " + full[1].Pattern},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc, err := Build(c.routes, Options{})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.names) {
				t.Fatalf("err = %v, want %v naming %s", err, c.want, c.names)
			}
			if doc != nil {
				t.Error("a document despite the error")
			}
		})
	}
}

func TestBuildChecksPaths(t *testing.T) {
	for _, c := range []struct{ pattern, path string }{
		{"/v1/a/{id}", "/v1/b/{id}"},
		{"/v1/a/{id}", "/v1/a/id"},
		{"/v1/a/{id}", "/v1/a/{id}/x"},
		{"/v1/a/{path...}", "/v1/a/{path...}"},
	} {
		if err := samePath(c.pattern, c.path); !errors.Is(err, ErrInvalid) {
			t.Errorf("samePath(%s, %s) = %v", c.pattern, c.path, err)
		}
	}
	if err := samePath("/v1/image/{template_id}/{template_version}", "/v1/image/{template_id}/{version_or_token}"); err != nil {
		t.Error(err)
	}
	ps := params(pathParam("id", "", str("")))
	if err := pathParams("/v1/a/{id}/{x}", ps); !errors.Is(err, ErrInvalid) {
		t.Errorf("a path parameter without documentation: %v", err)
	}
	if err := pathParams("/v1/a", ps); !errors.Is(err, ErrInvalid) {
		t.Errorf("documentation of a path parameter the path lacks: %v", err)
	}
}

// TestRouteImplies: what Build derives from a route of the table.
func TestRouteImplies(t *testing.T) {
	doc, err := Build(fakeTable(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	get := doc.Paths.Value("/v1/image/{id}").Get
	if get.Security == nil || len(*get.Security) != 0 {
		t.Errorf("a public route has security %v, want []", get.Security)
	}
	if head := doc.Paths.Value("/v1/image/{id}").Head; head == nil || head.OperationID != "headImage" || head.Responses.Status(200).Value.Content != nil {
		t.Errorf("HEAD of a public GET: %+v", head)
	}
	if doc.Paths.Value("/v1/usage").Head != nil {
		t.Error("HEAD documented for an authenticated GET")
	}
	if get.Responses.Status(401) != nil {
		t.Error("a public route answers 401")
	}
	usage := doc.Paths.Value("/v1/usage").Get
	if usage.Security == nil || len(*usage.Security) != 1 || (*usage.Security)[0][basicAuth] == nil {
		t.Errorf("an authenticated route has security %v", usage.Security)
	}
	if usage.Extensions["x-pictor-permission"] != string(perm.ImagesRead) || !strings.Contains(usage.Description, "Needs the permission images:read") {
		t.Errorf("the permission is not documented: %v %q", usage.Extensions, usage.Description)
	}
	for _, status := range []int{400, 401, 403} {
		if usage.Responses.Status(status) == nil {
			t.Errorf("GET /v1/usage does not document %d", status)
		}
	}
	if usage.Responses.Status(401).Value.Headers[hdrWWWAuthenticate] == nil {
		t.Error("401 without WWW-Authenticate")
	}
	if usage.Responses.Default() != nil || usage.Responses.Status(429) != nil {
		t.Error("an unlimited route: a default, or a 429")
	}
	for _, status := range []int{500, 502, 503, 504} {
		if usage.Responses.Status(status) == nil {
			t.Errorf("GET /v1/usage does not document %d", status)
		}
	}
	if usage.Responses.Status(408) != nil {
		t.Error("a route without a body documents 408")
	}
	list := doc.Paths.Value("/v1/proxies").Get
	if list.Extensions["x-pictor-rate-limit-group"] != string(ratelimit.ProxyRead) {
		t.Errorf("rate limit group %v", list.Extensions)
	}
	if r := list.Responses.Status(429); r == nil || r.Value.Headers[hdrRetryAfter] == nil {
		t.Error("a limited route without 429 and Retry-After")
	}
	for _, status := range []int{200, 400, 403, 429} {
		h := list.Responses.Status(status).Value.Headers
		if h[hdrRateLimit] == nil || h[hdrRateLimitPolicy] == nil {
			t.Errorf("GET /v1/proxies %d without the rate-limit headers", status)
		}
	}
	if list.Responses.Status(401).Value.Headers[hdrRateLimit] != nil {
		t.Error("a 401 carries rate-limit headers: the limit runs after authentication")
	}
	// Shared answers are not changed by another operation's headers.
	if h := doc.Paths.Value("/v1/images").Get.Responses.Status(400).Value.Headers; h[hdrRateLimit] != nil {
		t.Error("the rate-limit headers leaked into an unlimited route")
	}
	create := doc.Paths.Value("/v1/image").Post
	for _, status := range []int{200, 429} {
		if create.Responses.Status(status).Value.Headers[hdrRendersUsed] == nil {
			t.Errorf("POST /v1/image %d without x-renders-*", status)
		}
	}
	for _, status := range []int{408, 413, 415} {
		if create.Responses.Status(status) == nil {
			t.Errorf("a route with a body does not document %d", status)
		}
	}
}

// TestDocumentIsValid: the document passes kin-openapi's validation once
// encoded and loaded back, as JSON and as YAML, and so does every example.
func TestDocumentIsValid(t *testing.T) {
	doc, err := Build(fakeTable(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := JSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	ys, err := YAML(doc)
	if err != nil {
		t.Fatal(err)
	}
	var docs []*openapi3.T
	for _, data := range [][]byte{js, ys} {
		loaded, err := openapi3.NewLoader().LoadFromData(data)
		if err != nil {
			t.Fatal(err)
		}
		if err := loaded.Validate(context.Background(), openapi3.EnableMultiError()); err != nil {
			t.Fatal(err)
		}
		err = loaded.WalkSchemas(func(ptr string, s *openapi3.SchemaRef) error {
			for _, v := range append(slices.Clone(s.Value.Examples), s.Value.Default) {
				if v == nil {
					continue
				}
				if err := s.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
					t.Errorf("%s: %v does not fit: %v", ptr, v, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, loaded)
	}
	// The YAML is the same document as the JSON.
	again, err := JSON(docs[1])
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(js) {
		t.Error("the YAML, loaded and encoded as JSON, is not the JSON document")
	}
}

func TestEncodingIsDeterministic(t *testing.T) {
	var first, firstYAML []byte
	for i := range 5 {
		doc, err := Build(fakeTable(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		js, _ := JSON(doc)
		ys, _ := YAML(doc)
		if i == 0 {
			first, firstYAML = js, ys
			continue
		}
		if string(js) != string(first) || string(ys) != string(firstYAML) {
			t.Fatal("two builds encode differently")
		}
	}
	if strings.Contains(string(first), `\u003c`) {
		t.Error("the JSON escapes HTML")
	}
	if !strings.HasSuffix(string(first), "}\n") {
		t.Error("the JSON does not end with a newline")
	}
}
