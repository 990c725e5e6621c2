package origin_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

func TestErrorsUseStandardBody(t *testing.T) {
	o := startOrigin(t)
	tests := []struct {
		name, method, path string
		status             int
		allow              string
	}{
		{name: "unknown route", method: "GET", path: "/v1/nothing", status: 404},
		{name: "root", method: "GET", path: "/", status: 404},
		{name: "unversioned", method: "GET", path: "/api-keys", status: 404},
		{name: "trailing slash", method: "GET", path: "/v1/api-keys/", status: 404},
		{name: "wrong method on collection", method: "PUT", path: "/v1/api-keys", status: 405, allow: "POST"},
		{name: "wrong method on item", method: "PATCH", path: "/v1/api-keys/01a20000-0000-7000-8000-000000000000", status: 405, allow: "DELETE"},
		{name: "wrong method on healthz", method: "POST", path: "/healthz", status: 405, allow: "GET"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := o.do(t, apitest.Request{Method: tc.method, Path: tc.path, Creds: &o.Owner})
			apitest.WantError(t, r, tc.status)
			if tc.allow != "" && !strings.Contains(r.Header.Get("Allow"), tc.allow) {
				t.Fatalf("Allow = %q, want it to list %s", r.Header.Get("Allow"), tc.allow)
			}
		})
	}
}

func TestRequestID(t *testing.T) {
	o := startOrigin(t)
	r := o.do(t, apitest.Request{Method: "GET", Path: "/healthz", Header: map[string]string{"X-Request-Id": "trace-42"}})
	if got := r.Header.Get("X-Request-Id"); got != "trace-42" {
		t.Fatalf("X-Request-Id = %q, want the caller's", got)
	}
	r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &o.Owner})
	id := r.Header.Get("X-Request-Id")
	if len(id) < 16 {
		t.Fatalf("generated X-Request-Id = %q", id)
	}
	if !strings.Contains(logs.String(), `"request_id":"`+id+`"`) {
		t.Fatal("the request id is not in the logs")
	}
	// An id that could break a log line or header is replaced.
	r = o.do(t, apitest.Request{Method: "GET", Path: "/healthz", Header: map[string]string{"X-Request-Id": strings.Repeat("x", 500)}})
	if got := r.Header.Get("X-Request-Id"); len(got) > 128 {
		t.Fatalf("oversized request id echoed (%d bytes)", len(got))
	}
}

func TestHealthzAndMetrics(t *testing.T) {
	o := startOrigin(t)
	r := o.do(t, apitest.Request{Method: "GET", Path: "/healthz"})
	apitest.WantStatus(t, r, http.StatusOK)
	if r.Object(t)["status"] != "ok" {
		t.Fatalf("healthz body %s", r.Body)
	}
	o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &o.Owner})
	r = o.do(t, apitest.Request{Method: "GET", Path: "/metrics"})
	apitest.WantStatus(t, r, 200)
	body := string(r.Body)
	for _, want := range []string{
		`pictor_origin_http_requests_total{code="200",route="GET /v1/api-keys"} 1`,
		"pictor_origin_http_request_duration_seconds_bucket",
		"go_goroutines",
		// The embedded store always answers.
		"\npictor_store_up 1\n",
		"\npictor_store_unavailable_total 0\n",
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("metrics lack %q", want)
		}
	}
}
