package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/perm"
)

func TestConfigValidate(t *testing.T) {
	valid := DefaultConfig()
	valid.API = http.NotFoundHandler()
	valid.Verify = func(context.Context, string) (*auth.Principal, error) { return nil, errTokenRefused }
	valid.Challenge = func(error) string { return "Bearer" }
	valid.IsInvalidToken = func(error) bool { return true }
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // "" for valid
	}{
		{name: "valid"},
		{name: "no API", mutate: func(c *Config) { c.API = nil }, want: "API"},
		{name: "no Verify", mutate: func(c *Config) { c.Verify = nil }, want: "Verify"},
		{name: "no Challenge", mutate: func(c *Config) { c.Challenge = nil }, want: "Challenge"},
		{name: "no IsInvalidToken", mutate: func(c *Config) { c.IsInvalidToken = nil }, want: "IsInvalidToken"},
		{name: "negative MaxImageBytes", mutate: func(c *Config) { c.MaxImageBytes = -1 }, want: "MaxImageBytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid
			if tc.mutate != nil {
				tc.mutate(&cfg)
			}
			_, err := New(cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("New: %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestAuthentication: every request needs a bearer token that Verify
// accepts, checked before the SDK sees the request.
func TestAuthentication(t *testing.T) {
	s := newSite(t)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	tests := []struct {
		name      string
		header    string
		status    int
		challenge string
	}{
		{name: "no token", status: 401, challenge: `Bearer resource_metadata="http://pictor.test/.well-known/oauth-protected-resource"`},
		{name: "basic credentials", header: "Basic YTpi", status: 401, challenge: `Bearer resource_metadata=`},
		{name: "empty bearer", header: "Bearer ", status: 401, challenge: `Bearer resource_metadata=`},
		{name: "unknown token", header: "Bearer nope", status: 401, challenge: `Bearer error="invalid_token", error_description="invalid token: token revoked"`},
		{name: "verifier down", header: "Bearer broken", status: 500},
		{name: "valid token", header: "Bearer all", status: 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := s.post("", list, map[string]string{"Authorization": tc.header})
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, tc.challenge) || (tc.challenge == "") != (got == "") {
				t.Fatalf("WWW-Authenticate %q, want %q", got, tc.challenge)
			}
			if tc.status == 200 {
				return
			}
			var e struct {
				Error      string
				Message    string
				StatusCode int
			}
			if err := json.Unmarshal(body, &e); err != nil || e.StatusCode != tc.status || e.Message == "" {
				t.Fatalf("body %s is not the standard error body", body)
			}
			if strings.Contains(string(body), "token store unreachable") {
				t.Fatalf("a server failure's cause reached the client: %s", body)
			}
		})
	}
	if got := s.received(); len(got) != 0 {
		t.Fatalf("the router was called: %+v", got)
	}
}

// TestRevokedToken: Verify runs on every HTTP request, so a token revoked
// between two calls of one session fails the second.
func TestRevokedToken(t *testing.T) {
	s := newSite(t)
	s.grant("short-lived", perm.Grant{AllFuture: true})
	cs := s.connect("short-lived", nil)
	if res := call(t, cs, "get_max_batch_size", nil); res.IsError {
		t.Fatalf("first call: %s", text(t, res))
	}
	s.revoke("short-lived")
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_max_batch_size"})
	if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("call after revocation: %v, want Unauthorized", err)
	}
	resp := s.post("short-lived", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, nil)
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") {
		t.Fatalf("raw call after revocation: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestMalformedJSONRPC: what is not a valid JSON-RPC request is refused
// with a JSON-RPC error; the tools and the router never see it.
func TestMalformedJSONRPC(t *testing.T) {
	s := newSite(t)
	current := map[string]string{"Mcp-Protocol-Version": "2026-07-28"}
	tests := []struct {
		name   string
		body   string
		header map[string]string
		status int
		code   int // JSON-RPC error code; 0 for a plain HTTP refusal
	}{
		{name: "not JSON", body: `{"jsonrpc":"2.0",`, status: 400, code: -32700},
		{name: "empty", body: ``, status: 400, code: -32700},
		{name: "not a message", body: `[1,2]`, status: 400, code: -32600},
		{name: "an object without jsonrpc", body: `{"id":1,"method":"tools/list"}`, status: 400, code: -32600},
		{name: "neither request nor response", body: `{"jsonrpc":"2.0","id":1}`, status: 400, code: -32600},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":1,"method":"images/make","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			header: current, status: 404, code: -32601},
		{name: "unknown tool", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"make_image","arguments":{}}}`,
			status: 200, code: -32602},
		{name: "current protocol without its metadata", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_image","arguments":{"html":"<p>x</p>"}}}`,
			header: current, status: 400, code: -32602},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := s.post("all", tc.body, tc.header)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.code == 0 {
				return
			}
			var msg struct {
				Error *struct{ Code int }
			}
			if err := json.Unmarshal(body, &msg); err != nil || msg.Error == nil || msg.Error.Code != tc.code {
				t.Fatalf("answer %s, want JSON-RPC error %d", body, tc.code)
			}
		})
	}
	if got := s.received(); len(got) != 0 {
		t.Fatalf("the router was called: %+v", got)
	}
}

// TestLegacyProtocol: a client of an earlier revision (initialize
// handshake, no session kept by a stateless server) calls tools too.
func TestLegacyProtocol(t *testing.T) {
	s := newSite(t)
	version := map[string]string{"Mcp-Protocol-Version": "2025-06-18"}
	resp := s.post("all", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`, nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"protocolVersion":"2025-06-18"`) || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize: %d %s (session %q)", resp.StatusCode, body, resp.Header.Get("Mcp-Session-Id"))
	}
	resp = s.post("all", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_image","arguments":{"html":"<p>x</p>"}}}`, version)
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"structuredContent":{"url":"https://pictor.test/v1/image/`) {
		t.Fatalf("tools/call: %d %s", resp.StatusCode, body)
	}
}

// TestRequestID: the caller's request id reaches the inner requests and
// comes back; without one, a fresh id is made and echoed.
func TestRequestID(t *testing.T) {
	s := newSite(t)
	resp := s.post("all", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_usage","arguments":{}}}`,
		map[string]string{contract.HeaderRequestID: "abc-123"})
	if resp.StatusCode != 200 || resp.Header.Get(contract.HeaderRequestID) != "abc-123" {
		t.Fatalf("status %d, request id %q", resp.StatusCode, resp.Header.Get(contract.HeaderRequestID))
	}
	resp = s.post("all", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"check_usage","arguments":{}}}`, nil)
	fresh := resp.Header.Get(contract.HeaderRequestID)
	got := s.received()
	if len(got) != 2 || got[0].RequestID != "abc-123" || fresh == "" || got[1].RequestID != fresh {
		t.Fatalf("inner request ids %+v, echoed %q", got, fresh)
	}
}
