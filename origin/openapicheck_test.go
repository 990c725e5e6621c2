package origin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/openapi"
)

// undocumented are the paths the API description leaves out on purpose:
// operations endpoints, the edges' purge channel, and the MCP endpoint
// with its OAuth server (described by their own RFCs and metadata).
var undocumented = []string{"/healthz", "/metrics", contract.StreamPath, "/mcp", "/oauth/", "/.well-known/"}

// openAPICheck validates every exchange of the package's tests against the
// OpenAPI document the edge serves (apitest.Validator): every answer must be
// one the document allows for its route, status and content type, and every
// request the service accepted (2xx) must be one the document allows. An
// answer for a path the document does not know is allowed only if it is an
// error (a test of an unknown path) or a path left out on purpose.
type openAPICheck struct {
	once   sync.Once
	router routers.Router
	err    error
}

func (c *openAPICheck) load() error {
	c.once.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(openapi.JSON())
		if err != nil {
			c.err = fmt.Errorf("load the OpenAPI document: %w", err)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			c.err = fmt.Errorf("the OpenAPI document is not valid: %w", err)
			return
		}
		// Routes match whatever host the tests use.
		doc.Servers = openapi3.Servers{{URL: "/"}}
		c.router, c.err = gorillamux.NewRouter(doc)
	})
	return c.err
}

// binaryBody reads an image or PDF answer as the opaque string the
// document's binary schemas describe.
func binaryBody(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	b, err := io.ReadAll(body)
	return string(b), err
}

func init() {
	for _, ct := range []string{"image/png", "image/jpeg", "image/webp", "application/pdf"} {
		openapi3filter.RegisterBodyDecoder(ct, binaryBody)
	}
}

// validate is the apitest.Validator of the package.
func (c *openAPICheck) validate(req *http.Request, reqBody []byte, resp *apitest.Response) error {
	if err := c.load(); err != nil {
		return err
	}
	for _, p := range undocumented {
		if req.URL.Path == strings.TrimSuffix(p, "/") || strings.HasPrefix(req.URL.Path, p) {
			return nil
		}
	}
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	head := r.Method == http.MethodHead
	if head { // every GET also answers HEAD, without the body
		r.Method = http.MethodGet
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/og/"); ok {
		// A page's path is one parameter of many segments, which an
		// OpenAPI path template cannot spell: match it escaped.
		if domain, page, ok := strings.Cut(rest, "/"); ok {
			u := *r.URL
			u.Path = "/v1/og/" + domain + "/" + page
			u.RawPath = "/v1/og/" + domain + "/" + strings.ReplaceAll(page, "/", "%2F")
			if page == "" { // the site's root page, as /v1/og/{domain_id}
				u.Path, u.RawPath = "/v1/og/"+domain, ""
			}
			r.URL = &u
		}
	}
	route, params, err := c.router.FindRoute(r)
	if err != nil {
		if resp.Status >= 400 && (errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed)) {
			return nil // a test of a path or method the API does not have
		}
		return fmt.Errorf("no documented operation for %s %s: %w", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if resp.Status < 300 {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			return fmt.Errorf("the request was accepted but the document refuses it: %w", err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.Status, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(resp.Body)), Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: head}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("answer %d %.300s: %w", resp.Status, resp.Body, err)
	}
	return nil
}

// TestOpenAPICheckRefuses: the check of the package's exchanges does
// refuse answers the document does not allow, and lets a true one pass.
func TestOpenAPICheckRefuses(t *testing.T) {
	c := &openAPICheck{}
	body := []byte(`{"html":"<p>hi</p>"}`)
	req, err := http.NewRequest("POST", "http://127.0.0.1:1/v1/image", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("id", "key")
	jsonAnswer := func(status int, body string) *apitest.Response {
		return &apitest.Response{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
	}
	good := `{"url":"http://127.0.0.1:1/v1/image/0196f0c2-0000-7000-8000-000000000000","id":"0196f0c2-0000-7000-8000-000000000000"}`
	for _, tc := range []struct {
		name string
		resp *apitest.Response
		ok   bool
	}{
		{"a true answer", jsonAnswer(200, good), true},
		{"a field of the wrong type", jsonAnswer(200, `{"url":5,"id":"0196f0c2-0000-7000-8000-000000000000"}`), false},
		{"a missing field", jsonAnswer(200, `{"url":"http://127.0.0.1:1/v1/image/x"}`), false},
		{"a status the operation never gives", jsonAnswer(418, `{"error":"I'm a teapot","message":"no","statusCode":418}`), false},
		{"an error body without its fields", jsonAnswer(400, `{"message":"bad"}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.validate(req, body, tc.resp)
			if (err == nil) != tc.ok {
				t.Fatalf("validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
