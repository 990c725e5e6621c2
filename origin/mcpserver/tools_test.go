package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/logging"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/ratelimit"
)

var toolNames = []string{
	"create_image", "create_url_image", "create_templated_image", "create_batch_images", "get_max_batch_size",
	"create_template", "update_template", "list_templates", "list_template_versions", "check_usage",
	"create_proxy", "get_proxy", "list_proxies", "update_proxy", "delete_proxy",
	"create_storage_destination", "get_storage_destination", "list_storage_destinations", "update_storage_destination",
	"delete_storage_destination", "get_aws_storage_external_id",
	"create_og_config", "get_og_config", "list_og_configs", "update_og_config", "delete_og_config",
}

// TestToolsList: every tool is listed with a complete input schema and,
// except the deletes, an output schema.
func TestToolsList(t *testing.T) {
	s := newSite(t)
	var mu sync.Mutex
	versions := map[string]bool{}
	cs := s.connect("all", func(r *http.Response) {
		mu.Lock()
		defer mu.Unlock()
		versions[r.Request.Header.Get("Mcp-Protocol-Version")] = true
	})
	var names []string
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
		in, _ := tl.InputSchema.(map[string]any)
		if in["type"] != "object" || in["properties"] == nil {
			t.Errorf("%s: input schema %v", tl.Name, tl.InputSchema)
		}
		if (tl.OutputSchema == nil) != strings.HasPrefix(tl.Name, "delete_") {
			t.Errorf("%s: output schema %v", tl.Name, tl.OutputSchema)
		}
		if tl.Description == "" || tl.Annotations == nil || tl.Title == "" {
			t.Errorf("%s: no description, title or annotations", tl.Name)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(toolNames))) {
		t.Fatalf("tools %v, want %v", names, toolNames)
	}
	// The SDK's client speaks the current revision, which a stateless
	// server serves.
	mu.Lock()
	if !versions["2026-07-28"] {
		t.Errorf("protocol versions used: %v", versions)
	}
	mu.Unlock()
	// What a model reads of one parameter: type, range, description.
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name != "create_image" {
			continue
		}
		in := tl.InputSchema.(map[string]any)
		props := in["properties"].(map[string]any)
		vw := props["viewport_width"].(map[string]any)
		if vw["type"] != "integer" || vw["minimum"] != float64(1) || vw["maximum"] != float64(6000) || !strings.HasPrefix(vw["description"].(string), "Viewport width") {
			t.Errorf("create_image viewport_width: %v", vw)
		}
		mt := props["media_type"].(map[string]any)
		if fmt.Sprint(mt["enum"]) != "[screen print]" || fmt.Sprint(in["required"]) != "[html]" {
			t.Errorf("create_image media_type %v, required %v", mt, in["required"])
		}
		b, _ := json.Marshal(tl.OutputSchema)
		if !strings.Contains(string(b), `"required":["url","id"]`) || !strings.Contains(string(b), `"validation_errors"`) {
			t.Errorf("create_image output schema %s", b)
		}
	}
}

// TestToolRoutes: each tool sends its REST twin the method, path, query
// and body it should, for the caller, with the caller's request id and
// address, and relays the answer.
func TestToolRoutes(t *testing.T) {
	const id = "0190b2c4-0000-7000-8000-0000000000bb"
	tests := []struct {
		tool       string
		args       map[string]any
		method     string
		path       string
		query      string
		body       string // JSON, compared as a value; "" for none
		structured string // a fragment of the structured content, as JSON
	}{
		{tool: "create_image", args: map[string]any{"html": "<p>Hi</p>", "css": "p{}", "viewport_width": 300, "viewport_height": 200, "include_image": false},
			method: "POST", path: "/v1/image", body: `{"html":"<p>Hi</p>","css":"p{}","viewport_width":300,"viewport_height":200}`, structured: `"url":"https://pictor.test/v1/image/`},
		{tool: "create_url_image", args: map[string]any{"url": "https://example.com/", "full_screen": true, "headers": map[string]any{"X-A": "1"}},
			method: "POST", path: "/v1/image", body: `{"url":"https://example.com/","full_screen":true,"headers":{"X-A":"1"}}`, structured: `"id":"0190b2c4-`},
		{tool: "create_templated_image", args: map[string]any{"template_id": "t-1", "template_values": map[string]any{"title": "Hi"}, "device_scale": 1},
			method: "POST", path: "/v1/image/t-1", body: `{"template_values":{"title":"Hi"},"device_scale":1}`, structured: `"url":`},
		{tool: "create_templated_image", args: map[string]any{"template_id": "t-1", "template_version": 3, "template_values": map[string]any{}},
			method: "POST", path: "/v1/image/t-1/3", body: `{"template_values":{}}`, structured: `"url":`},
		{tool: "create_batch_images", args: map[string]any{"default_options": map[string]any{"device_scale": 1}, "variations": []any{map[string]any{"html": "a"}, map[string]any{"url": "https://example.com/"}}},
			method: "POST", path: "/v1/image/batch", body: `{"default_options":{"device_scale":1},"variations":[{"html":"a"},{"url":"https://example.com/"}]}`, structured: `"images":[{"id":"0190b2c4-`},
		{tool: "create_template", args: map[string]any{"html": "<p>{{title}}</p>", "name": "Card", "viewport_width": 1200, "viewport_height": 630},
			method: "POST", path: "/v1/template", body: `{"html":"<p>{{title}}</p>","name":"Card","viewport_width":1200,"viewport_height":630}`, structured: `"template_version":1`},
		{tool: "update_template", args: map[string]any{"template_id": "t-9", "html": "<p>2</p>"},
			method: "POST", path: "/v1/template/t-9", body: `{"html":"<p>2</p>"}`, structured: `"template_id":"t-9"`},
		{tool: "list_templates", args: map[string]any{"count": 5, "page_start": "tok"},
			method: "GET", path: "/v1/template", query: "count=5&page_start=tok", structured: `"pagination":{"next_page_start":null}`},
		{tool: "list_template_versions", args: map[string]any{"template_id": "t-9"},
			method: "GET", path: "/v1/template/t-9", structured: `"data":[]`},
		{tool: "check_usage", method: "GET", path: "/v1/usage", structured: `"images_used":37`},
		{tool: "create_proxy", args: map[string]any{"content": map[string]any{"name": "Office", "url": "http://proxy.example.com", "port": 3128}},
			method: "POST", path: "/v1/proxies", body: `{"name":"Office","url":"http://proxy.example.com","port":3128}`, structured: `"kind":"proxy"`},
		{tool: "get_proxy", args: map[string]any{"id": id}, method: "GET", path: "/v1/proxies/" + id, structured: `"id":"` + id},
		{tool: "list_proxies", args: map[string]any{"count": "7"}, method: "GET", path: "/v1/proxies", query: "count=7", structured: `"data":[]`},
		{tool: "update_proxy", args: map[string]any{"id": id, "content": map[string]any{"name": "Office 2"}},
			method: "POST", path: "/v1/proxies/" + id, body: `{"name":"Office 2"}`, structured: `"name":"Office 2"`},
		{tool: "delete_proxy", args: map[string]any{"id": id}, method: "DELETE", path: "/v1/proxies/" + id},
		{tool: "create_storage_destination", args: map[string]any{"content": map[string]any{"name": "Bucket", "connection_info": map[string]any{"provider": "aws_s3"}}},
			method: "POST", path: "/v1/storage-destinations", body: `{"name":"Bucket","connection_info":{"provider":"aws_s3"}}`, structured: `"kind":"storage-destination"`},
		{tool: "get_storage_destination", args: map[string]any{"id": id}, method: "GET", path: "/v1/storage-destinations/" + id, structured: `"id":"` + id},
		{tool: "list_storage_destinations", args: map[string]any{}, method: "GET", path: "/v1/storage-destinations", structured: `"data":[]`},
		{tool: "update_storage_destination", args: map[string]any{"id": id, "content": map[string]any{"name": "Bucket 2"}},
			method: "POST", path: "/v1/storage-destinations/" + id, body: `{"name":"Bucket 2"}`, structured: `"name":"Bucket 2"`},
		{tool: "delete_storage_destination", args: map[string]any{"id": id}, method: "DELETE", path: "/v1/storage-destinations/" + id},
		{tool: "get_aws_storage_external_id", method: "GET", path: "/v1/storage-destinations/aws-external-id", structured: `"external_id":"pictor-abc"`},
		{tool: "create_og_config", args: map[string]any{"content": map[string]any{"name": "Blog", "config_type": "html_css", "base_url": "https://blog.example.com"}},
			method: "POST", path: "/v1/og-configs", body: `{"name":"Blog","config_type":"html_css","base_url":"https://blog.example.com"}`, structured: `"kind":"og-config"`},
		{tool: "get_og_config", args: map[string]any{"id": id}, method: "GET", path: "/v1/og-configs/" + id, structured: `"id":"` + id},
		{tool: "list_og_configs", args: map[string]any{"page_start": "x y"}, method: "GET", path: "/v1/og-configs", query: "page_start=x+y", structured: `"data":[]`},
		{tool: "update_og_config", args: map[string]any{"id": id, "content": map[string]any{"name": "Blog 2"}},
			method: "POST", path: "/v1/og-configs/" + id, body: `{"name":"Blog 2"}`, structured: `"name":"Blog 2"`},
		{tool: "delete_og_config", args: map[string]any{"id": "a/b"}, method: "DELETE", path: "/v1/og-configs/a%2Fb"},
	}
	s := newSite(t)
	cs := s.connect("all", nil)
	// The route each request reached, to hold the tools' documented
	// twins and permissions to the route table.
	mux := http.NewServeMux()
	needs := map[string]perm.Permission{}
	for _, r := range s.routes() {
		mux.Handle(r.Method+" "+r.Pattern, http.NotFoundHandler())
		needs[r.Method+" "+r.Pattern] = r.Permission
	}
	byName := map[string]*tool{}
	for _, tl := range tools() {
		byName[tl.name] = tl
	}
	covered := map[string]bool{"get_max_batch_size": true} // no REST twin: TestMaxBatchSize
	for i, tc := range tests {
		t.Run(fmt.Sprintf("%d %s", i, tc.tool), func(t *testing.T) {
			covered[tc.tool] = true
			before := len(s.received())
			res := call(t, cs, tc.tool, tc.args)
			if res.IsError {
				t.Fatalf("tool error: %s", text(t, res))
			}
			got := s.received()[before:]
			if len(got) != 1 {
				t.Fatalf("the router got %d requests: %+v", len(got), got)
			}
			g := got[0]
			if g.Method != tc.method || g.Path != tc.path || g.Query != tc.query {
				t.Fatalf("got %s %s?%s, want %s %s?%s", g.Method, g.Path, g.Query, tc.method, tc.path, tc.query)
			}
			if !jsonEqual(g.Body, tc.body) {
				t.Fatalf("body %s, want %s", g.Body, tc.body)
			}
			_, pattern := mux.Handler(httptest.NewRequest(g.Method, g.Path, nil))
			if tl := byName[tc.tool]; needs[pattern] != tl.permission || !strings.HasPrefix(tl.twin, g.Method+" /v1/") {
				t.Fatalf("route %s needs %s; the tool says %s and twin %s", pattern, needs[pattern], tl.permission, tl.twin)
			}
			if g.RequestID != requestID || !strings.HasPrefix(g.RemoteAddr, "127.0.0.1:") {
				t.Fatalf("request id %q, remote address %q", g.RequestID, g.RemoteAddr)
			}
			if g.KeyID != "key-all" {
				t.Fatalf("caller %q", g.KeyID)
			}
			if tc.structured == "" {
				if res.StructuredContent != nil || !strings.Contains(text(t, res), "204") {
					t.Fatalf("a deletion answered %v %q", res.StructuredContent, text(t, res))
				}
				return
			}
			b, _ := json.Marshal(res.StructuredContent)
			if !strings.Contains(string(b), tc.structured) {
				t.Fatalf("structured content %s lacks %s", b, tc.structured)
			}
			if !jsonEqual(text(t, res), string(b)) {
				t.Fatalf("text %s is not the structured content %s", text(t, res), b)
			}
		})
	}
	for _, name := range toolNames {
		if !covered[name] {
			t.Errorf("%s is not tested here", name)
		}
	}
}

func jsonEqual(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// TestToolArguments: arguments the tools read themselves are checked
// before anything runs; REST bodies are REST's to judge.
func TestToolArguments(t *testing.T) {
	tests := []struct {
		tool string
		args any
		want []string
	}{
		{tool: "create_image", args: "html", want: []string{"The arguments must be a JSON object of the tool's parameters, not a string"}},
		{tool: "create_image", args: []any{1}, want: []string{"not an array"}},
		{tool: "create_image", args: map[string]any{"html": "<p>x</p>", "include_image": "yes"}, want: []string{"include_image: must be a boolean, not a string"}},
		{tool: "create_image", args: map[string]any{"html": "<p>x</p>", "url": "https://example.com/"}, want: []string{"url: is not an argument of this tool: use create_url_image"}},
		{tool: "create_url_image", args: map[string]any{"url": "https://example.com/", "html": "<p>x</p>"}, want: []string{"html: is not an argument of this tool: use create_image"}},
		{tool: "create_templated_image", args: map[string]any{"template_values": map[string]any{}}, want: []string{"template_id: is required"}},
		{tool: "create_templated_image", args: map[string]any{"template_id": "batch"}, want: []string{"template_id: must be a template id (t-...)"}},
		{tool: "get_proxy", args: map[string]any{}, want: []string{"id: is required"}},
		{tool: "get_proxy", args: map[string]any{"id": 12}, want: []string{"id: must be a string, not a number"}},
		{tool: "get_proxy", args: map[string]any{"id": " "}, want: []string{"id: must not be blank"}},
		{tool: "create_proxy", args: map[string]any{"name": "Office", "url": "http://p.example.com"},
			want: []string{"content: is required", "name: is not an argument of this tool (it takes content)", "url: is not an argument"}},
		{tool: "create_proxy", args: map[string]any{"content": `{"name":"Office"}`}, want: []string{"content: must be a JSON object holding the request body, not a string"}},
		{tool: "list_proxies", args: map[string]any{"limit": 5}, want: []string{"limit: is not an argument of this tool (it takes count, page_start)"}},
		{tool: "check_usage", args: map[string]any{"verbose": true}, want: []string{"verbose: is not an argument of this tool (it takes none)"}},
	}
	s := newSite(t)
	cs := s.connect("all", nil)
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			res := call(t, cs, tc.tool, tc.args)
			if !res.IsError {
				t.Fatalf("no tool error: %s", text(t, res))
			}
			msg := text(t, res)
			for _, want := range tc.want {
				if !strings.Contains(msg, want) {
					t.Errorf("%q lacks %q", msg, want)
				}
			}
			if sc := structured(t, res); sc["statusCode"] != float64(400) || sc["message"] == "" {
				t.Errorf("structured content %v", sc)
			}
		})
	}
	if got := s.received(); len(got) != 0 {
		t.Fatalf("the router was called: %+v", got)
	}
}

// TestValidationErrors: a 400 from REST becomes a tool error with REST's
// message, each validation error as path: message, and the REST body as
// structured content.
func TestValidationErrors(t *testing.T) {
	s := newSite(t)
	cs := s.connect("all", nil)
	res := call(t, cs, "create_image", map[string]any{"html": "<p>x</p>", "viewport_width": 7000, "media_type": "tv"})
	if !res.IsError {
		t.Fatalf("no tool error: %s", text(t, res))
	}
	want := "Invalid request: viewport_width must be between 1 and 6000 (and 2 more)\n" +
		"viewport_width: must be between 1 and 6000\n" +
		"viewport_height: is required with viewport_width\n" +
		"media_type: must be one of screen, print"
	if got := text(t, res); !strings.Contains(got, "viewport_width: must be between 1 and 6000") ||
		!strings.Contains(got, "viewport_height: is required with viewport_width") || !strings.Contains(got, "media_type: must be one of screen, print") {
		t.Fatalf("text %q, want the lines of %q", got, want)
	}
	sc := structured(t, res)
	errs, _ := sc["validation_errors"].([]any)
	if sc["statusCode"] != float64(400) || sc["error"] != "Bad Request" || len(errs) != 3 {
		t.Fatalf("structured content %v", sc)
	}
	// A 404 of REST is a tool error too.
	res = call(t, cs, "create_templated_image", map[string]any{"template_id": "t-missing"})
	if !res.IsError || text(t, res) != "Template t-missing not found" || structured(t, res)["statusCode"] != float64(404) {
		t.Fatalf("unknown template: %v %q", res.IsError, text(t, res))
	}
}

// TestMissingPermission: the router refuses a call the caller's grant
// does not cover, naming the permission; the handler never runs.
func TestMissingPermission(t *testing.T) {
	s := newSite(t)
	s.grant("reader", perm.Grant{Permissions: []perm.Permission{perm.TemplatesRead}})
	free := &org.Org{ID: "org-2", Plan: "free"}
	s.grantIn(free, "free", perm.Grant{AllFuture: true})
	tests := []struct {
		token, tool string
		args        map[string]any
		want        string
	}{
		{token: "reader", tool: "create_image", args: map[string]any{"html": "<p>x</p>"}, want: "Missing permission: this operation requires images:create"},
		{token: "reader", tool: "create_batch_images", args: map[string]any{"variations": []any{map[string]any{"html": "x"}}}, want: "requires images:create"},
		{token: "reader", tool: "get_max_batch_size", want: "Missing permission: this operation requires images:create"},
		{token: "reader", tool: "check_usage", want: "requires usage:read"},
		{token: "reader", tool: "delete_proxy", args: map[string]any{"id": "x"}, want: "requires proxies:delete"},
		{token: "free", tool: "list_proxies", want: "Proxies need the pro plan or higher (10,000 images a month); this organization is on the free plan"},
		{token: "free", tool: "get_aws_storage_external_id", want: "Storage destinations need the pro plan"},
	}
	for _, tc := range tests {
		t.Run(tc.token+" "+tc.tool, func(t *testing.T) {
			cs := s.connect(tc.token, nil)
			res := call(t, cs, tc.tool, tc.args)
			if !res.IsError || !strings.Contains(text(t, res), tc.want) {
				t.Fatalf("%v %q, want %q", res.IsError, text(t, res), tc.want)
			}
			if sc := structured(t, res); sc["statusCode"] != float64(403) {
				t.Fatalf("structured content %v", sc)
			}
		})
	}
	if got := s.received(); len(got) != 0 {
		t.Fatalf("a handler ran: %+v", got)
	}
	cs := s.connect("reader", nil)
	if res := call(t, cs, "list_templates", nil); res.IsError {
		t.Fatalf("a granted call: %s", text(t, res))
	}
}

// TestRateLimit: the organization's write quota spent, the next call is a
// tool error naming the limit; the MCP answer is no 429 and carries no
// rate-limit header; the handler does not run; the window is the clock's.
func TestRateLimit(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := newSite(t, func(c *Config) { c.Registerer = reg })
	var mu sync.Mutex
	var answers []*http.Response
	cs := s.connect("all", func(r *http.Response) {
		mu.Lock()
		defer mu.Unlock()
		answers = append(answers, r)
	})
	create := map[string]any{"content": map[string]any{"name": "Office", "url": "http://proxy.example.com"}}
	for i := range ratelimit.WriteQuota {
		if res := call(t, cs, "create_proxy", create); res.IsError {
			t.Fatalf("call %d: %s", i, text(t, res))
		}
	}
	res := call(t, cs, "create_proxy", create)
	want := "Rate limit exceeded for proxy:write: 20 requests per 60 seconds per organization (retry after 60 seconds)"
	if !res.IsError || text(t, res) != want {
		t.Fatalf("past the quota: %v %q, want %q", res.IsError, text(t, res), want)
	}
	if sc := structured(t, res); sc["statusCode"] != float64(429) {
		t.Fatalf("structured content %v", sc)
	}
	if n := len(s.received()); n != ratelimit.WriteQuota {
		t.Fatalf("the handler ran %d times", n)
	}
	// Reads are another group.
	if res := call(t, cs, "list_proxies", nil); res.IsError {
		t.Fatalf("proxy:read: %s", text(t, res))
	}
	mu.Lock()
	for _, r := range answers {
		for _, h := range []string{"RateLimit", "RateLimit-Policy", "Retry-After"} {
			if r.Header.Get(h) != "" {
				t.Errorf("the MCP answer carries %s: %q", h, r.Header.Get(h))
			}
		}
		if r.StatusCode != http.StatusOK {
			t.Errorf("an MCP answer is %d", r.StatusCode)
		}
	}
	mu.Unlock()
	s.clock.Advance(ratelimit.Window)
	if res := call(t, cs, "create_proxy", create); res.IsError {
		t.Fatalf("after the window: %s", text(t, res))
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "pictor_origin_mcp_tool_calls_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				labels += l.GetName() + "=" + l.GetValue() + " "
			}
			calls[strings.TrimSpace(labels)] = m.GetCounter().GetValue()
		}
	}
	wantCalls := map[string]float64{"outcome=ok tool=create_proxy": ratelimit.WriteQuota + 1,
		"outcome=rate_limited tool=create_proxy": 1, "outcome=ok tool=list_proxies": 1}
	if fmt.Sprint(calls) != fmt.Sprint(wantCalls) {
		t.Fatalf("metrics %v, want %v", calls, wantCalls)
	}
}

// TestPlanLimit: a plan out of credits (REST's 429) is a tool error
// saying so, not an HTTP 429.
func TestPlanLimit(t *testing.T) {
	s := newSite(t)
	res := call(t, s.connect("all", nil), "create_image", map[string]any{"html": overPlan})
	want := "You've used 10000 of your 10000 image credits for this billing period; this request needs 1"
	if !res.IsError || text(t, res) != want {
		t.Fatalf("%v %q, want %q", res.IsError, text(t, res), want)
	}
	if sc := structured(t, res); sc["statusCode"] != float64(429) || sc["error"] != "Plan limit exceeded" {
		t.Fatalf("structured content %v", sc)
	}
}

// TestServerError: a 5xx of REST is a tool error giving only a reference,
// the inner answer's request id.
func TestServerError(t *testing.T) {
	s := newSite(t)
	s.broken = true
	cs := s.connect("all", nil)
	res := call(t, cs, "create_template", map[string]any{"html": "<p>x</p>"})
	if !res.IsError || text(t, res) != "internal error, reference "+requestID {
		t.Fatalf("%v %q", res.IsError, text(t, res))
	}
	if sc := structured(t, res); sc["statusCode"] != float64(500) || strings.Contains(fmt.Sprint(sc), "disk on fire") {
		t.Fatalf("structured content %v", sc)
	}
	res = call(t, cs, "check_usage", nil)
	if !res.IsError || text(t, res) != "internal error, reference "+requestID {
		t.Fatalf("check_usage: %v %q", res.IsError, text(t, res))
	}
}

// TestLogs: one line per tool call, with the caller's request id, as the
// router's lines of its inner requests.
func TestLogs(t *testing.T) {
	var logs apitest.Buffer
	prev := slog.Default()
	slog.SetDefault(logging.New(&logs, slog.LevelInfo))
	t.Cleanup(func() { slog.SetDefault(prev) })
	s := newSite(t)
	s.broken = true
	call(t, s.connect("all", nil), "create_template", map[string]any{"html": "<p>x</p>"})
	var tool, inner bool
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch rec["msg"] {
		case "mcp tool call":
			tool = rec["tool"] == "create_template" && rec["status"] == float64(500) && rec["level"] == "ERROR" &&
				rec["request_id"] == requestID && rec["key"] == "key-all" && rec["org"] == "org-1"
		case "request failed":
			inner = rec["cause"] == "disk on fire" && rec["request_id"] == requestID
		}
	}
	if !tool || !inner {
		t.Fatalf("tool line %v, inner line %v:\n%s", tool, inner, logs.String())
	}
}

func TestMaxBatchSize(t *testing.T) {
	s := newSite(t)
	res := call(t, s.connect("all", nil), "get_max_batch_size", nil)
	if res.IsError || structured(t, res)["max_batch_size"] != float64(25) {
		t.Fatalf("%v %s", res.IsError, text(t, res))
	}
}

func TestCheckUsage(t *testing.T) {
	s := newSite(t)
	res := call(t, s.connect("all", nil), "check_usage", nil)
	want := `{"images_used":37,"images_allowed":10000,"next_reset":"2026-03-20T08:30:00Z","plan":"pro"}`
	if res.IsError || text(t, res) != want {
		t.Fatalf("%v %s, want %s", res.IsError, text(t, res), want)
	}
}

// decode returns an image content's picture and format.
func decode(t *testing.T, c mcp.Content) (image.Image, string) {
	t.Helper()
	ic, ok := c.(*mcp.ImageContent)
	if !ok {
		t.Fatalf("content %T, want an image", c)
	}
	img, format, err := image.Decode(bytes.NewReader(ic.Data))
	if err != nil {
		t.Fatalf("%s: %v", ic.MIMEType, err)
	}
	if want := map[string]string{"png": "image/png", "jpeg": "image/jpeg"}[format]; ic.MIMEType != want {
		t.Fatalf("MIME type %s for a %s", ic.MIMEType, format)
	}
	return img, format
}

// TestIncludeImage: the rendered PNG comes back as image content, fetched
// through the router's public image route.
func TestIncludeImage(t *testing.T) {
	s := newSite(t)
	cs := s.connect("all", nil)
	res := call(t, cs, "create_image", map[string]any{"html": "<div></div>", "viewport_width": 120, "viewport_height": 60,
		"device_scale": 1, "format": "jpg", "include_image": true})
	if res.IsError || len(res.Content) != 2 {
		t.Fatalf("%v %d contents: %s", res.IsError, len(res.Content), text(t, res))
	}
	img, format := decode(t, res.Content[1])
	if format != "png" || img.Bounds().Dx() != 120 || img.Bounds().Dy() != 60 {
		t.Fatalf("%s of %v, want a 120x60 PNG", format, img.Bounds())
	}
	id := structured(t, res)["id"].(string)
	got := s.received()
	if len(got) != 2 || got[1].Method != "GET" || got[1].Path != "/v1/image/"+id || got[1].RequestID != requestID {
		t.Fatalf("requests %+v", got)
	}
}

// encodedSizes are the sizes of the test site's PNG, JPG and WebP
// stand-in of a w x h render.
func encodedSizes(w, h int) (pngSize, jpgSize, webpSize int) {
	var b bytes.Buffer
	png.Encode(&b, noise(w, h))
	pngSize = b.Len()
	b.Reset()
	jpeg.Encode(&b, noise(w, h), &jpeg.Options{Quality: 30})
	return pngSize, b.Len(), pngSize / 10
}

// TestIncludeImageFallback: a PNG over the budget gives way to the JPG,
// then the WebP; when none fits, or nothing can be shown, a note says why
// and the image is still created.
func TestIncludeImageFallback(t *testing.T) {
	pngSize, jpgSize, webpSize := encodedSizes(200, 100)
	if !(webpSize < jpgSize && jpgSize < pngSize) {
		t.Fatalf("sizes png %d, jpg %d, webp %d", pngSize, jpgSize, webpSize)
	}
	args := map[string]any{"html": "<div></div>", "viewport_width": 200, "viewport_height": 100, "device_scale": 1, "include_image": true}
	tests := []struct {
		name   string
		budget int
		args   map[string]any
		mime   string // "" for no image
		note   string
	}{
		{name: "png fits exactly", budget: pngSize, mime: "image/png"},
		{name: "jpg", budget: pngSize - 1, mime: "image/jpeg"},
		{name: "webp", budget: (jpgSize + webpSize) / 2, mime: "image/webp"},
		{name: "none fits", budget: webpSize - 1, note: fmt.Sprintf("is larger than the %d bytes left for images as PNG, JPG and WebP", webpSize-1)},
		{name: "render failed", budget: pngSize, args: map[string]any{"render_when_ready": true},
			note: "could not be rendered: render_when_ready was set but the page never called ScreenshotReady()"},
		{name: "storage only", budget: pngSize, args: map[string]any{"storage_destination_id": "keep-none"},
			note: "is kept only in its storage destination: no preview"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, func(c *Config) { c.MaxImageBytes = tc.budget })
			a := map[string]any{}
			for k, v := range args {
				a[k] = v
			}
			for k, v := range tc.args {
				a[k] = v
			}
			res := call(t, s.connect("all", nil), "create_image", a)
			if res.IsError {
				t.Fatalf("tool error: %s", text(t, res))
			}
			var mime, note string
			for _, c := range res.Content[1:] {
				switch c := c.(type) {
				case *mcp.ImageContent:
					mime = c.MIMEType
					if len(c.Data) > tc.budget {
						t.Fatalf("%d bytes over a budget of %d", len(c.Data), tc.budget)
					}
					if mime != "image/webp" {
						if img, _ := decode(t, c); img.Bounds().Dx() != 200 || img.Bounds().Dy() != 100 {
							t.Fatalf("image of %v", img.Bounds())
						}
					}
				case *mcp.TextContent:
					note = c.Text
				}
			}
			if mime != tc.mime || (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Fatalf("image %q, note %q; want %q, %q", mime, note, tc.mime, tc.note)
			}
		})
	}
}

// TestBatchIncludeImage: the budget is for the whole result; the images
// that no longer fit are named in a note.
func TestBatchIncludeImage(t *testing.T) {
	pngSize, _, _ := encodedSizes(80, 40) // the batch renders of the test site
	s := newSite(t, func(c *Config) { c.MaxImageBytes = pngSize * 2 })
	res := call(t, s.connect("all", nil), "create_batch_images", map[string]any{
		"variations": []any{map[string]any{"html": "a"}, map[string]any{"html": "b"}, map[string]any{"html": "c"}}, "include_image": true})
	if res.IsError {
		t.Fatalf("tool error: %s", text(t, res))
	}
	images := 0
	for _, c := range res.Content[1:] {
		if _, ok := c.(*mcp.ImageContent); ok {
			decode(t, c)
			images++
		}
	}
	last, _ := res.Content[len(res.Content)-1].(*mcp.TextContent)
	if images != 2 || last == nil || !strings.Contains(last.Text, "already use the") {
		t.Fatalf("%d images, note %v", images, last)
	}
}

// TestConcurrentCalls: tool calls of several sessions at once (-race).
func TestConcurrentCalls(t *testing.T) {
	s := newSite(t)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 8 {
		cs := s.connect("all", nil)
		wg.Go(func() {
			for j := range 4 {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_image",
					Arguments: map[string]any{"html": fmt.Sprintf("<p>%d.%d</p>", i, j), "include_image": j%2 == 0}})
				if err != nil || res.IsError {
					errs <- fmt.Sprint(err, res)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := len(s.received()); n != 8*4+8*2 {
		t.Fatalf("%d requests", n)
	}
}
