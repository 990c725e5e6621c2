package origin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/imaging"
	contractopenapi "github.com/pictorhq/pictor/origin/contract/openapi"
	"github.com/pictorhq/pictor/origin/contract/precompress"
	"github.com/pictorhq/pictor/origin/images"
	"github.com/pictorhq/pictor/origin/openapi"
)

// goldenDir holds the committed document, embedded by origin/contract/openapi.
const goldenDir = "contract/openapi"

// TestOpenAPIDocument builds the document from the live route table and
// compares it with the committed one (JSON and YAML).
// PICTOR_UPDATE_OPENAPI=1 rewrites them.
func TestOpenAPIDocument(t *testing.T) {
	o := startOrigin(t)
	doc, err := openapi.Build(o.origin.Routes(), openapi.Options{})
	if err != nil {
		t.Fatalf("Build from the route table: %v", err)
	}
	js, err := openapi.JSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	ys, err := openapi.YAML(doc)
	if err != nil {
		t.Fatal(err)
	}
	// Every route of the table is an operation of the document, or hidden.
	operations := 0
	for _, item := range doc.Paths.Map() {
		operations += len(item.Operations())
		if item.Head != nil {
			operations-- // HEAD of a public GET, served by the GET route
		}
	}
	hidden := 0
	for _, r := range o.origin.Routes() {
		if r.Hidden != "" {
			hidden++
		}
	}
	if routes := len(o.origin.Routes()); operations+hidden != routes || hidden == 0 {
		t.Errorf("%d operations and %d hidden routes for %d routes", operations, hidden, routes)
	}
	// Nothing of this run may be in it: the origin's address above all.
	host := strings.TrimPrefix(o.URL, "http://")
	for _, b := range [][]byte{js, ys} {
		if bytes.Contains(b, []byte(host)) || bytes.Contains(b, []byte(o.OrgID)) || bytes.Contains(b, []byte(o.Owner.APIID)) {
			t.Errorf("the document holds something of this run (%s, the organization or its key)", host)
		}
	}
	// Deterministic: built again, byte for byte the same.
	again, err := openapi.Build(o.origin.Routes(), openapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if js2, _ := openapi.JSON(again); !bytes.Equal(js, js2) {
		t.Error("two builds of the document differ")
	}
	validateDocument(t, js)
	validateDocument(t, ys)

	const rerun = "rerun with PICTOR_UPDATE_OPENAPI=1 go test ./origin -run TestOpenAPIDocument to regenerate it"
	for name, want := range map[string][]byte{"openapi.json": js, "openapi.yaml": ys} {
		path := filepath.Join(goldenDir, name)
		if os.Getenv("PICTOR_UPDATE_OPENAPI") != "" {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := precompress.Write(path); err != nil { // the forms the edge serves
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v: %s", err, rerun)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("origin/%s is not the document the route table describes (first difference at line %d): %s", path, firstDiff(got, want), rerun)
		}
	}
	if os.Getenv("PICTOR_UPDATE_OPENAPI") == "" {
		// What the edge serves is the committed document.
		if !bytes.Equal(contractopenapi.JSON(), js) || !bytes.Equal(contractopenapi.YAML(), ys) {
			t.Errorf("origin/contract/openapi embeds another document: %s", rerun)
		}
	}
}

func firstDiff(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// validateDocument loads a document as a client would, validates it with
// kin-openapi, and validates every example and default against its schema.
func validateDocument(t *testing.T, data []byte) *openapi3.T {
	t.Helper()
	ctx := context.Background()
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatalf("load the document: %v", err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Title != "Pictor API" || doc.Info.Version != "1.0.0" {
		t.Errorf("openapi %s, info %q %s: want 3.1.0, Pictor API 1.0.0", doc.OpenAPI, doc.Info.Title, doc.Info.Version)
	}
	if err := doc.Validate(ctx, openapi3.EnableMultiError()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	examples := 0
	err = doc.WalkSchemas(func(ptr string, s *openapi3.SchemaRef) error {
		values := append([]any{}, s.Value.Examples...)
		if s.Value.Example != nil {
			values = append(values, s.Value.Example)
		}
		if s.Value.Default != nil {
			values = append(values, s.Value.Default)
		}
		for _, v := range values {
			examples++
			if err := s.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
				t.Errorf("%s: example or default %v does not fit its schema: %v", ptr, v, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if examples < 50 {
		t.Errorf("only %d examples and defaults checked", examples)
	}
	return doc
}

// TestOpenAPILimits holds the limits origin/openapi writes down itself (it
// does not link libvips) to the packages that enforce them.
func TestOpenAPILimits(t *testing.T) {
	for _, c := range []struct {
		name      string
		doc, real int
	}{
		{"MaxBatch", openapi.MaxBatch, images.MaxBatch},
		{"MaxDeleteBatch", openapi.MaxDeleteBatch, images.MaxDeleteBatch},
		{"MaxResize", openapi.MaxResize, imaging.MaxSize},
		{"MinDPI", openapi.MinDPI, imaging.MinDPI},
		{"MaxDPI", openapi.MaxDPI, imaging.MaxDPI},
		{"MaxCropPixels", openapi.MaxCropPixels, imaging.MaxPixels},
		{"MaxRatioTerm", openapi.MaxRatioTerm, imaging.MaxRatioTerm},
	} {
		if c.doc != c.real {
			t.Errorf("openapi.%s = %d, the code's is %d", c.name, c.doc, c.real)
		}
	}
	// The transformations documented are the ones the edge reads.
	doc, err := openapi.Build(startOrigin(t).origin.Routes(), openapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	get := doc.Paths.Value("/v1/image/{id}").Get
	n := 0
	for _, p := range get.Parameters {
		if p.Value.In == openapi3.ParameterInQuery {
			n++
			if !imaging.IsParam(p.Value.Name) {
				t.Errorf("GET /v1/image/{id} documents %s, which origin/contract/imaging does not read", p.Value.Name)
			}
		}
	}
	for _, name := range []string{"width", "height", "dpi", "dl", "aspect_ratio", "x_1", "x_2", "y_1", "y_2", "crop_width", "crop_height", "x_origin", "y_origin"} {
		if !imaging.IsParam(name) {
			t.Errorf("origin/contract/imaging no longer reads %s", name)
		}
	}
	if n != 13 {
		t.Errorf("GET /v1/image/{id} documents %d transformations, want 13", n)
	}
}

// apiValidator checks real requests and answers against the document.
type apiValidator struct {
	router routers.Router
}

func newAPIValidator(t *testing.T, o *testOrigin) *apiValidator {
	t.Helper()
	doc, err := openapi.Build(o.origin.Routes(), openapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := openapi.JSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	loaded := validateDocument(t, js)
	router, err := gorillamux.NewRouter(loaded)
	if err != nil {
		t.Fatal(err)
	}
	return &apiValidator{router: router}
}

// exchange is one request of the spot check.
type exchange struct {
	name        string
	method      string
	path        string
	creds       *apitest.Creds
	contentType string
	body        []byte
	status      int
	// invalidRequest: the request breaks the document (the server refuses
	// it too: status says how).
	invalidRequest bool
}

// do sends the request, then validates it and the answer.
func (v *apiValidator) do(t *testing.T, base string, x exchange) *apitest.Response {
	t.Helper()
	req, err := http.NewRequest(x.method, base+x.path, bytes.NewReader(x.body))
	if err != nil {
		t.Fatal(err)
	}
	if x.contentType != "" {
		req.Header.Set("Content-Type", x.contentType)
	}
	if x.creds != nil {
		req.SetBasicAuth(x.creds.APIID, x.creds.APIKey)
	}
	resp, err := apitest.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != x.status {
		t.Fatalf("%s: status %d, want %d: %s", x.name, resp.StatusCode, x.status, body)
	}

	req.Body = io.NopCloser(bytes.NewReader(x.body))
	route, pathParams, err := v.router.FindRoute(req)
	if err != nil {
		t.Fatalf("%s: %s %s is not an operation of the document: %v", x.name, x.method, x.path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	err = openapi3filter.ValidateRequest(context.Background(), in)
	switch {
	case err != nil && !x.invalidRequest:
		t.Errorf("%s: the document refuses the request: %v", x.name, err)
	case err == nil && x.invalidRequest:
		t.Errorf("%s: the document accepts a request the server refuses with %d", x.name, resp.StatusCode)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s: the answer (%d) does not fit the document: %v\n%s", x.name, resp.StatusCode, err, body)
	}
	return &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

func jsonBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOpenAPIRequests sends real requests of several kinds to an origin and
// checks each request and answer against the document, through kin-openapi's
// openapi3filter (JSON Schema 2020-12 for this 3.1 document).
func TestOpenAPIRequests(t *testing.T) {
	o := startOrigin(t)
	v := newAPIValidator(t, o)
	owner := &o.Owner

	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	for k, val := range map[string]string{"html": "<p>multipart</p>", "device_scale": "1", "viewport_width": "400", "viewport_height": "300", "template_values": `{"a":1}`} {
		if err := w.WriteField(k, val); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	form := url.Values{"html": {"<p>form</p>"}, "ms_delay": {"10"}, "full_screen": {"true"}, "headers": {"X-A:1", "X-B:2"}, "url": {"https://example.com/"}}

	created := v.do(t, o.URL, exchange{name: "create with JSON", method: "POST", path: "/v1/image", creds: owner, contentType: "application/json",
		body: jsonBytes(t, map[string]any{"html": "<p>json</p>", "viewport_width": 640, "viewport_height": 480, "format": "webp", "metadata": map[string]any{"k": "v"}}), status: 200})
	var img struct{ ID, URL string }
	created.Decode(t, &img)
	got := v.do(t, o.URL, exchange{name: "get the image", method: "GET", path: "/v1/image/" + img.ID + ".webp", status: 200})
	if ct := got.Header.Get("Content-Type"); ct != "image/webp" {
		t.Errorf("GET .webp answered %s", ct)
	}
	v.do(t, o.URL, exchange{name: "HEAD of the image", method: "HEAD", path: "/v1/image/" + img.ID + ".webp", status: 200})
	signedQuery := "html=" + url.QueryEscape("<p>signed</p>") + "&viewport_width=300&viewport_height=200"
	token := images.Sign(o.Owner.APIKey, signedQuery)
	for _, x := range []exchange{
		{name: "signed create-and-render", method: "GET", path: "/v1/image/create-and-render/" + o.Owner.APIID + "/" + token + "?" + signedQuery, status: 200},
		{name: "signed create-and-render as JPEG", method: "GET", path: "/v1/image/create-and-render/" + o.Owner.APIID + "/" + token + "/jpg?" + signedQuery, status: 200},
		{name: "signed create-and-render, bad token", method: "GET", path: "/v1/image/create-and-render/" + o.Owner.APIID + "/" + strings.Repeat("0", 64) + "?" + signedQuery, status: 401},
	} {
		v.do(t, o.URL, x)
	}
	for _, x := range []exchange{
		{name: "create with a URL-encoded form", method: "POST", path: "/v1/image", creds: owner, contentType: "application/x-www-form-urlencoded",
			body: []byte(form.Encode()), status: 200},
		{name: "create with a multipart form", method: "POST", path: "/v1/image", creds: owner, contentType: w.FormDataContentType(), body: mp.Bytes(), status: 200},
		{name: "batch", method: "POST", path: "/v1/image/batch", creds: owner, contentType: "application/json",
			body: jsonBytes(t, map[string]any{"default_options": map[string]any{"css": "p{color:red}"}, "variations": []any{map[string]any{"html": "<p>1</p>"}, map[string]any{"html": "<p>2</p>"}}}), status: 200},
		{name: "list images", method: "GET", path: "/v1/images?count=2", creds: owner, status: 200},
		{name: "usage", method: "GET", path: "/v1/usage", creds: owner, status: 200},
		{name: "validation errors", method: "POST", path: "/v1/image", creds: owner, contentType: "application/json",
			body: jsonBytes(t, map[string]any{"html": "<p>x</p>", "viewport_width": 0, "viewport_height": 100, "color_scheme": "sepia"}), status: 400, invalidRequest: true},
		{name: "no credentials", method: "GET", path: "/v1/usage", status: 401},
		{name: "unknown image", method: "GET", path: "/v1/image/0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d.png", status: 404},
		{name: "unknown image, delete", method: "DELETE", path: "/v1/image/0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", creds: owner, status: 404},
		{name: "delete", method: "DELETE", path: "/v1/image/" + img.ID, creds: owner, status: 202},
		{name: "delete a batch", method: "DELETE", path: "/v1/image/batch", creds: owner, contentType: "application/json",
			body: jsonBytes(t, map[string]any{"ids": []any{"0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d"}}), status: 202},
		{name: "unknown API key (rate-limited route)", method: "GET", path: "/v1/api-keys/0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", creds: owner, status: 404},
		{name: "malformed API key id", method: "GET", path: "/v1/api-keys/nope", creds: owner, status: 400, invalidRequest: true},
		{name: "list API keys", method: "GET", path: "/v1/api-keys?with_permission=images:create&with_permission=usage:read&include_disabled=true", creds: owner, status: 200},
		{name: "create an API key", method: "POST", path: "/v1/api-keys", creds: owner, contentType: "application/json",
			body: jsonBytes(t, map[string]any{"name": "openapi", "description": nil, "permissions": []any{"images:read"}}), status: 200},
		{name: "list OG configurations", method: "GET", path: "/v1/og-configs", creds: owner, status: 200},
		{name: "create an OG configuration", method: "POST", path: "/v1/og-configs", creds: owner, contentType: "application/json",
			body: jsonBytes(t, map[string]any{"config_type": "html_css", "base_url": "https://blog.example.com", "default_options": map[string]any{"viewport_width": 1200, "viewport_height": 630}}), status: 200},
		{name: "list templates", method: "GET", path: "/v1/template", creds: owner, status: 200},
		{name: "store an image without destination", method: "PUT", path: "/v1/store/" + img.ID + ".webp?width=100", creds: owner, status: 404},
	} {
		v.do(t, o.URL, x)
	}

	saved := v.do(t, o.URL, exchange{name: "create a template", method: "POST", path: "/v1/template", creds: owner, contentType: "application/json",
		body: jsonBytes(t, map[string]any{"html": "<p>{{title}}</p>", "name": "t", "viewport_width": 300, "viewport_height": 200}), status: 201})
	var tpl struct {
		TemplateID string `json:"template_id"`
	}
	saved.Decode(t, &tpl)
	templateQuery := "title=%22Hi%22"
	for _, x := range []exchange{
		{name: "signed template URL", method: "GET", path: "/v1/image/" + tpl.TemplateID + "/" + images.Sign(o.Owner.APIKey, templateQuery) + "?" + templateQuery, status: 200},
		{name: "signed template URL as PDF", method: "GET", path: "/v1/image/" + tpl.TemplateID + "/" + images.Sign(o.Owner.APIKey, templateQuery) + "/pdf?" + templateQuery, status: 200},
		{name: "render a template", method: "POST", path: "/v1/image/" + tpl.TemplateID, creds: owner, contentType: "application/json",
			body: jsonBytes(t, map[string]any{"template_values": map[string]any{"title": "Hi"}}), status: 200},
		{name: "render a template version", method: "POST", path: "/v1/image/" + tpl.TemplateID + "/1", creds: owner, contentType: "application/x-www-form-urlencoded",
			body: []byte(url.Values{"template_values": {`{"title":"Hi"}`}}.Encode()), status: 200},
		{name: "template versions", method: "GET", path: "/v1/template/" + tpl.TemplateID, creds: owner, status: 200},
		{name: "update a template", method: "POST", path: "/v1/template/" + tpl.TemplateID, creds: owner, contentType: "application/json",
			body: jsonBytes(t, map[string]any{"html": "<p>{{title}}!</p>"}), status: 200},
		{name: "delete a template", method: "DELETE", path: "/v1/template/" + tpl.TemplateID, creds: owner, status: 204},
	} {
		v.do(t, o.URL, x)
	}

	// The checks are not vacuous: answers the handlers never give are refused.
	for _, c := range []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"an extra field", "POST", "/v1/image", 200, `{"url":"https://x.example/v1/image/` + img.ID + `","id":"` + img.ID + `","extra":1}`},
		{"a missing field", "GET", "/v1/usage", 200, `{"data":{"hour":{},"day":{},"month":{}}}`},
		{"an error without statusCode", "GET", "/v1/usage", 401, `{"error":"Unauthorized","message":"no"}`},
		{"an undocumented status", "GET", "/v1/usage", 201, `{}`},
	} {
		req := httptest.NewRequest(c.method, c.path, nil)
		route, pathParams, err := v.router.FindRoute(req)
		if err != nil {
			t.Fatal(err)
		}
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: c.status,
			Header: http.Header{"Content-Type": {"application/json"}}, Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		out.SetBodyBytes([]byte(c.body))
		if err := openapi3filter.ValidateResponse(context.Background(), out); err == nil {
			t.Errorf("%s: the document accepts it", c.name)
		}
	}
}
