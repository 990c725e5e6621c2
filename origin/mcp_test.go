package origin_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/html"

	"github.com/pictorhq/pictor/edge"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/ratelimit"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// mcpTools are the tools of spec compat.md's MCP section, every one.
var mcpTools = []string{
	"create_image", "create_url_image", "create_templated_image", "create_batch_images", "get_max_batch_size",
	"create_template", "update_template", "list_templates", "list_template_versions", "check_usage",
	"create_proxy", "get_proxy", "list_proxies", "update_proxy", "delete_proxy",
	"create_storage_destination", "get_storage_destination", "list_storage_destinations", "update_storage_destination",
	"delete_storage_destination", "get_aws_storage_external_id",
	"create_og_config", "get_og_config", "list_og_configs", "update_og_config", "delete_og_config",
}

// mcpRedirect is the loopback redirect URI of the test client (RFC 8252:
// the port is the client's to choose; nothing listens there, the test
// reads the redirect's Location).
const mcpRedirect = "http://127.0.0.1:53682/cb"

// mcpAccessTTL is the access tokens' lifetime (oauth.DefaultConfig).
const mcpAccessTTL = 10 * time.Minute

// mcpToolsList is a raw JSON-RPC tools/list request.
const mcpToolsList = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

// mcpGrant is what a client holds once a person approved its connection.
type mcpGrant struct {
	ClientID string
	Access   string
	Refresh  string
	Scope    string // the approved scopes, space-separated
}

// mcpConnect connects a client to o's MCP endpoint as an MCP client and a
// person would: it registers a public client, sends the person to the
// consent page (sign-in with creds, then approval of scopes, nil for every
// offered one) and exchanges the code with PKCE.
func mcpConnect(t *testing.T, o *testOrigin, creds apitest.Creds, scopes []string) mcpGrant {
	t.Helper()
	return mcpConnectAt(t, o.URL, creds, scopes)
}

// mcpConnectAt is mcpConnect against the public URL base (an edge's).
func mcpConnectAt(t *testing.T, base string, creds apitest.Creds, scopes []string) mcpGrant {
	t.Helper()
	return mcpConnectNamed(t, base, "MCP integration test", creds, scopes)
}

// mcpConnectNamed is mcpConnectAt for a client registered as clientName.
func mcpConnectNamed(t *testing.T, base, clientName string, creds apitest.Creds, scopes []string) mcpGrant {
	t.Helper()
	browser := mcpBrowser(t)

	// Dynamic client registration (RFC 7591): a public client.
	reg, _ := json.Marshal(map[string]any{"client_name": clientName, "redirect_uris": []string{mcpRedirect},
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}})
	r := mcpDo(t, browser, "POST", base+"/oauth/register", "application/json", string(reg))
	apitest.WantStatus(t, r, http.StatusCreated)
	var client struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	r.Decode(t, &client)
	if client.ClientID == "" || client.ClientSecret != "" {
		t.Fatalf("registration of a public client: %s", r.Body)
	}

	// PKCE S256 with a random verifier, and a random state.
	verifier, state := mcpRandom(t), mcpRandom(t)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {client.ClientID},
		"redirect_uri":          {mcpRedirect},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"},
		"state":                 {state},
		"resource":              {base + origin.MCPPath},
	}
	r = mcpDo(t, browser, "GET", base+"/oauth/authorize?"+q.Encode(), "", "")
	apitest.WantStatus(t, r, http.StatusOK)
	signIn := mcpParsePage(t, r)
	if signIn.errorText != "" {
		t.Fatalf("authorization page: %s", signIn.errorText)
	}

	// The person signs in with the API key.
	form := signIn.hidden
	form.Set("api_id", creds.APIID)
	form.Set("api_key", creds.APIKey)
	r = mcpDo(t, browser, "POST", mcpResolve(t, base, signIn.action), "application/x-www-form-urlencoded", form.Encode())
	apitest.WantStatus(t, r, http.StatusOK)
	consent := mcpParsePage(t, r)
	if consent.errorText != "" || len(consent.scopes) == 0 {
		t.Fatalf("consent page: error %q, scopes %v", consent.errorText, consent.scopes)
	}
	for _, name := range consent.scopes {
		if strings.HasPrefix(name, "api_keys:") {
			t.Fatalf("the consent page offers %s: API keys cannot be managed over MCP", name)
		}
	}

	// ... and approves the scopes asked for, unchecking the others.
	approve := scopes
	if approve == nil {
		approve = consent.scopes
	}
	form = url.Values{"request": {consent.hidden.Get("request")}, "csrf": {consent.hidden.Get("csrf")}, "action": {"approve"}}
	for _, s := range approve {
		if !slices.Contains(consent.scopes, s) {
			t.Fatalf("scope %s is not offered (offered: %v)", s, consent.scopes)
		}
		form.Add("scope", s)
	}
	r = mcpDo(t, browser, "POST", mcpResolve(t, base, consent.action), "application/x-www-form-urlencoded", form.Encode())
	apitest.WantStatus(t, r, http.StatusSeeOther)
	loc, err := url.Parse(r.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	back := loc.Query()
	if loc.Scheme+"://"+loc.Host+loc.Path != mcpRedirect || back.Get("code") == "" || back.Get("state") != state || back.Get("iss") != base {
		t.Fatalf("approval sent the browser to %s", loc)
	}

	// The client redeems the code.
	r = mcpDo(t, browser, "POST", base+"/oauth/token", "application/x-www-form-urlencoded", url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {back.Get("code")},
		"redirect_uri":  {mcpRedirect},
		"code_verifier": {verifier},
		"client_id":     {client.ClientID},
		"resource":      {base + origin.MCPPath},
	}.Encode())
	apitest.WantStatus(t, r, http.StatusOK)
	var tok struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		ExpiresIn    int    `json:"expires_in"`
		RefreshToken string `json:"refresh_token"`
		Scope        string `json:"scope"`
	}
	r.Decode(t, &tok)
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.TokenType != "Bearer" || tok.ExpiresIn != int(mcpAccessTTL/time.Second) {
		t.Fatalf("token answer %s", r.Body)
	}
	want := slices.Clone(approve)
	slices.Sort(want)
	if got := strings.Fields(tok.Scope); !slices.Equal(got, want) {
		t.Fatalf("granted scope %v, approved %v", got, want)
	}
	return mcpGrant{ClientID: client.ClientID, Access: tok.AccessToken, Refresh: tok.RefreshToken, Scope: tok.Scope}
}

// mcpRefresh spends a refresh token at base's token endpoint.
func mcpRefresh(t *testing.T, base string, g mcpGrant, refresh string) *apitest.Response {
	t.Helper()
	return mcpDo(t, mcpBrowser(t), "POST", base+"/oauth/token", "application/x-www-form-urlencoded",
		url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {g.ClientID}}.Encode())
}

// mcpRandom is a random PKCE-alphabet string of 43 characters.
func mcpRandom(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// mcpBrowser is a person's browser: a cookie jar, redirects not followed.
func mcpBrowser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Transport: apitest.Client.Transport, Timeout: apitest.Client.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// mcpDo sends one request with c and reads the answer.
func mcpDo(t *testing.T, c *http.Client, method, u, contentType, body string) *apitest.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, u, err)
	}
	return &apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// mcpResolve resolves a form's action against base.
func mcpResolve(t *testing.T, base, action string) string {
	t.Helper()
	b, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	a, err := url.Parse(action)
	if err != nil {
		t.Fatal(err)
	}
	return b.ResolveReference(a).String()
}

// mcpPage is a consent page's form as a browser sees it.
type mcpPage struct {
	action    string
	hidden    url.Values // the hidden inputs
	scopes    []string   // the scope checkboxes' values
	errorText string     // the page's error paragraph
}

// mcpParsePage parses the consent page of an answer.
func mcpParsePage(t *testing.T, r *apitest.Response) *mcpPage {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("consent page Content-Type %q: %s", ct, r.Body)
	}
	doc, err := html.Parse(strings.NewReader(string(r.Body)))
	if err != nil {
		t.Fatal(err)
	}
	p := &mcpPage{hidden: url.Values{}}
	var walk func(n *html.Node, inError bool)
	walk = func(n *html.Node, inError bool) {
		switch n.Type {
		case html.TextNode:
			if inError {
				p.errorText += n.Data
			}
		case html.ElementNode:
			attr := map[string]string{}
			for _, a := range n.Attr {
				attr[a.Key] = a.Val
			}
			if slices.Contains(strings.Fields(attr["class"]), "error") {
				inError = true
			}
			switch {
			case n.Data == "form":
				p.action = attr["action"]
			case n.Data == "input" && attr["type"] == "hidden":
				p.hidden.Set(attr["name"], attr["value"])
			case n.Data == "input" && attr["type"] == "checkbox" && attr["name"] == "scope":
				p.scopes = append(p.scopes, attr["value"])
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inError)
		}
	}
	walk(doc, false)
	if p.action == "" || p.hidden.Get("request") == "" || p.hidden.Get("csrf") == "" {
		t.Fatalf("no consent form in the page: %s", r.Body)
	}
	return p
}

// mcpBearer sends a bearer token with every request and shows each answer
// to seen, when set.
type mcpBearer struct {
	token string
	seen  func(*http.Response)
}

func (b mcpBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := apitest.Client.Transport.RoundTrip(r)
	if err == nil && b.seen != nil {
		b.seen(resp)
	}
	return resp, err
}

// mcpSession opens an MCP session on o's endpoint with the official Go
// SDK's client, authorized by token.
func mcpSession(t *testing.T, o *testOrigin, token string) *mcp.ClientSession {
	t.Helper()
	return mcpSessionAt(t, o.URL+origin.MCPPath, token, nil)
}

// mcpSessionAt opens a session on endpoint; seen, when set, sees every
// HTTP answer.
func mcpSessionAt(t *testing.T, endpoint, token string, seen func(*http.Response)) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "pictor-origin-test", Version: "1.0.0"}, nil)
	transport := &mcp.StreamableClientTransport{Endpoint: endpoint, DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: mcpBearer{token: token, seen: seen}}}
	cs, err := client.Connect(context.Background(), transport, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// mcpCall calls a tool and fails the test on a protocol error (a tool
// error is a result).
func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// mcpOK calls a tool that must succeed and decodes its structured content
// into out, unless out is nil.
func mcpOK(t *testing.T, cs *mcp.ClientSession, name string, args, out any) *mcp.CallToolResult {
	t.Helper()
	res := mcpCall(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s: tool error %q", name, mcpText(res))
	}
	if out != nil {
		mcpDecode(t, res.StructuredContent, out)
	}
	return res
}

// mcpFail calls a tool that must fail with a tool error whose text holds
// every fragment, and returns the error's structured content (the REST
// error body).
func mcpFail(t *testing.T, cs *mcp.ClientSession, name string, args any, fragments ...string) map[string]any {
	t.Helper()
	res := mcpCall(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s succeeded: %s", name, mcpText(res))
	}
	text := mcpText(res)
	for _, f := range fragments {
		if !strings.Contains(text, f) {
			t.Fatalf("%s: tool error %q does not mention %q", name, text, f)
		}
	}
	var body map[string]any
	mcpDecode(t, res.StructuredContent, &body)
	return body
}

// mcpText is a result's text content.
func mcpText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// mcpDecode converts a decoded JSON value (structured content, a schema)
// into out.
func mcpDecode(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// mcpPost sends a raw JSON-RPC body to an MCP endpoint, with token unless
// it is "".
func mcpPost(t *testing.T, endpoint, token, body string) *apitest.Response {
	t.Helper()
	h := map[string]string{"Accept": "application/json, text/event-stream"}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return apitest.Do(t, endpoint, apitest.Request{Method: "POST", Raw: body, ContentType: "application/json", Header: h})
}

// mcpWantUnauthorized checks a 401 of the MCP endpoint of the public URL
// base: the standard error body, and a Bearer challenge naming the
// resource metadata and, for a refused token (reason not ""), invalid_token
// and why (RFC 6750 §3: no error code when no token was sent).
func mcpWantUnauthorized(t *testing.T, r *apitest.Response, base, reason string) {
	t.Helper()
	apitest.WantError(t, r, http.StatusUnauthorized)
	challenge := r.Header.Get("WWW-Authenticate")
	want := `resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`
	if !strings.HasPrefix(challenge, "Bearer ") || !strings.Contains(challenge, want) {
		t.Fatalf("WWW-Authenticate %q, want a Bearer challenge with %s", challenge, want)
	}
	switch {
	case reason == "" && strings.Contains(challenge, "error="):
		t.Fatalf("WWW-Authenticate %q: an error code without a token", challenge)
	case reason != "" && (!strings.Contains(challenge, `error="invalid_token"`) || !strings.Contains(challenge, `error_description="`+reason+`"`)):
		t.Fatalf("WWW-Authenticate %q, want invalid_token because %q", challenge, reason)
	}
}

// mcpGET reads a REST resource as creds and decodes it.
func mcpGET(t *testing.T, o *testOrigin, creds apitest.Creds, path string) map[string]any {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "GET", Path: path, Creds: &creds})
	apitest.WantStatus(t, r, http.StatusOK)
	return r.Object(t)
}

// mcpSame fails unless a tool's structured content is the REST answer.
func mcpSame(t *testing.T, what string, tool, rest any) {
	t.Helper()
	var a, b any
	mcpDecode(t, tool, &a)
	mcpDecode(t, rest, &b)
	if !reflect.DeepEqual(a, b) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		t.Fatalf("%s: the tool says\n%s\nREST says\n%s", what, ja, jb)
	}
}

// mcpImage decodes an image content.
func mcpImage(t *testing.T, c *mcp.ImageContent) image.Image {
	t.Helper()
	return apitest.DecodeImage(t, &apitest.Response{Status: 200, Header: http.Header{"Content-Type": {c.MIMEType}}, Body: c.Data})
}

// TestMCPTools calls every tool over MCP, authorized through the OAuth
// flow, against the real origin (Chromium renders, pebble, a real S3
// server), and checks each effect over REST.
func TestMCPTools(t *testing.T) {
	s3 := s3test.New(t)
	o := startOrigin(t)
	_, pro := o.newOrg(t.Context(), t, "pro")
	g := mcpConnect(t, o, pro, nil)
	cs := mcpSession(t, o, g.Access)

	// Every result, to look for secrets in.
	var results strings.Builder
	called := map[string]bool{}
	ok := func(name string, args, out any) *mcp.CallToolResult {
		t.Helper()
		res := mcpOK(t, cs, name, args, out)
		called[name] = true
		b, _ := json.Marshal(res)
		results.Write(b)
		return res
	}

	// tools/list: the tools of the spec, each with an object input schema;
	// none manages API keys.
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
		var schema struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
		}
		mcpDecode(t, tool.InputSchema, &schema)
		if schema.Type != "object" || schema.Properties == nil {
			t.Errorf("%s: input schema %v is not an object schema", tool.Name, tool.InputSchema)
		}
		if strings.Contains(tool.Name, "api_key") {
			t.Errorf("tool %s manages API keys", tool.Name)
		}
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(mcpTools))
	if !slices.Equal(names, want) {
		t.Fatalf("tools/list: %v\nwant %v", names, want)
	}

	// create_image with include_image: the picture comes back, and the URL
	// serves the same over REST.
	var created struct{ URL, ID string }
	res := ok("create_image", map[string]any{"html": redBox, "include_image": true}, &created)
	if created.ID == "" || created.URL != o.URL+"/v1/image/"+created.ID {
		t.Fatalf("create_image: %+v", created)
	}
	var shown []*mcp.ImageContent
	for _, c := range res.Content {
		if ic, isImage := c.(*mcp.ImageContent); isImage {
			shown = append(shown, ic)
		}
	}
	if len(shown) != 1 || shown[0].MIMEType != "image/png" {
		t.Fatalf("create_image with include_image: %d images in %+v", len(shown), res.Content)
	}
	for _, img := range []image.Image{mcpImage(t, shown[0]), apitest.DecodeImage(t, o.get(t, created.URL))} {
		apitest.WantSize(t, img, 800, 400)
		apitest.WantPixel(t, img, 0, 0, red, 0)
		apitest.WantPixel(t, img, 400, 200, red, 0)
		apitest.WantPixel(t, img, 799, 399, red, 0)
	}

	// create_url_image: a screenshot of a page at the viewport asked for.
	site := newSite(t, map[string]string{"/page": doc(`<div style="width:320px;height:200px;background:rgb(0,0,255)"></div>`)})
	var shot struct{ URL, ID string }
	ok("create_url_image", map[string]any{"url": site.URL + "/page", "viewport_width": 320, "viewport_height": 200}, &shot)
	img := apitest.DecodeImage(t, o.get(t, shot.URL))
	apitest.WantSize(t, img, 320, 200)
	apitest.WantPixel(t, img, 160, 100, blue, 3)
	if len(site.seen("/page")) == 0 {
		t.Fatal("the page was never fetched")
	}

	// Templates: create, render, list, update, versions.
	var saved struct {
		TemplateID      string `json:"template_id"`
		TemplateVersion int    `json:"template_version"`
	}
	ok("create_template", map[string]any{"html": card, "name": "MCP card", "device_scale": 1}, &saved)
	if !strings.HasPrefix(saved.TemplateID, "t-") || saved.TemplateVersion != 1 {
		t.Fatalf("create_template: %+v", saved)
	}
	var templated struct{ URL, ID string }
	ok("create_templated_image", map[string]any{"template_id": saved.TemplateID,
		"template_values": map[string]any{"w": 120, "color": "rgb(0,0,255)", "title": ""}}, &templated)
	img = apitest.DecodeImage(t, o.get(t, templated.URL))
	apitest.WantSize(t, img, 120, 50)
	apitest.WantPixel(t, img, 60, 25, blue, 3)

	var templates struct{ Data []map[string]any }
	ok("list_templates", map[string]any{"count": 100}, &templates)
	if len(templates.Data) != 1 || templates.Data[0]["id"] != saved.TemplateID || templates.Data[0]["name"] != "MCP card" {
		t.Fatalf("list_templates: %+v", templates.Data)
	}
	mcpSame(t, "list_templates", templates.Data, mcpGET(t, o, pro, "/v1/template?count=100")["data"])

	var updated struct {
		TemplateID      string `json:"template_id"`
		TemplateVersion int    `json:"template_version"`
	}
	ok("update_template", map[string]any{"template_id": saved.TemplateID, "html": card, "name": "MCP card v2", "device_scale": 2}, &updated)
	if updated.TemplateID != saved.TemplateID || updated.TemplateVersion != 2 {
		t.Fatalf("update_template of a rendered version: %+v, want version 2", updated)
	}
	var versions struct{ Data []map[string]any }
	ok("list_template_versions", map[string]any{"template_id": saved.TemplateID}, &versions)
	if len(versions.Data) != 2 || versions.Data[0]["version"] != float64(2) || versions.Data[0]["name"] != "MCP card v2" || versions.Data[1]["version"] != float64(1) {
		t.Fatalf("list_template_versions: %+v", versions.Data)
	}
	mcpSame(t, "list_template_versions", versions.Data, mcpGET(t, o, pro, "/v1/template/"+saved.TemplateID)["data"])

	// A batch of two variations; each URL serves its PNG.
	var batch struct{ Images []struct{ URL, ID string } }
	ok("create_batch_images", map[string]any{"variations": []any{
		map[string]any{"html": box(100, 50, "rgb(0,128,0)")},
		map[string]any{"html": box(60, 40, "rgb(0,0,255)")},
	}}, &batch)
	if len(batch.Images) != 2 {
		t.Fatalf("create_batch_images: %+v", batch)
	}
	for i, want := range []struct {
		w, h int
		c    color.NRGBA
	}{{200, 100, green}, {120, 80, blue}} {
		r := o.get(t, batch.Images[i].URL)
		apitest.WantStatus(t, r, 200)
		img := apitest.DecodeImage(t, r)
		apitest.WantSize(t, img, want.w, want.h)
		apitest.WantPixel(t, img, want.w/2, want.h/2, want.c, 3)
	}

	var maxBatch struct {
		MaxBatchSize int `json:"max_batch_size"`
	}
	ok("get_max_batch_size", nil, &maxBatch)
	if maxBatch.MaxBatchSize != 25 {
		t.Fatalf("get_max_batch_size: %d", maxBatch.MaxBatchSize)
	}

	// check_usage counts the credits used above (create_image, the
	// screenshot, the templated image, the batch's two), as REST does.
	var usage struct {
		ImagesUsed    int    `json:"images_used"`
		ImagesAllowed int    `json:"images_allowed"`
		NextReset     string `json:"next_reset"`
		Plan          string `json:"plan"`
	}
	ok("check_usage", nil, &usage)
	if rest := o.usage(t, pro); usage.ImagesUsed != 5 || rest != 5 {
		t.Fatalf("check_usage says %d images used, GET /v1/usage %d; want 5", usage.ImagesUsed, rest)
	}
	if reset, err := time.Parse(time.RFC3339, usage.NextReset); err != nil || !reset.After(o.Clock.Now()) || usage.ImagesAllowed != 10000 || usage.Plan != "pro" {
		t.Fatalf("check_usage: %+v", usage)
	}

	// Proxies.
	const password = "mcp-pr0xy-pa55word-never-shown"
	proxyBody := map[string]any{"name": "office", "url": "http://proxy.example.com", "port": 3128,
		"authentication": map[string]any{"username": "bob", "password": password}}
	var proxy map[string]any
	ok("create_proxy", map[string]any{"content": proxyBody}, &proxy)
	proxyID, _ := proxy["id"].(string)
	if proxyID == "" || proxy["name"] != "office" || proxy["username"] != "bob" || proxy["enabled"] != true {
		t.Fatalf("create_proxy: %v", proxy)
	}
	res = ok("get_proxy", map[string]any{"id": proxyID}, nil)
	mcpSame(t, "get_proxy", res.StructuredContent, mcpGET(t, o, pro, "/v1/proxies/"+proxyID))
	var proxies struct{ Data []map[string]any }
	ok("list_proxies", map[string]any{"count": 100}, &proxies)
	if len(proxies.Data) != 1 || proxies.Data[0]["id"] != proxyID {
		t.Fatalf("list_proxies: %v", proxies.Data)
	}
	mcpSame(t, "list_proxies", proxies.Data, mcpGET(t, o, pro, "/v1/proxies?count=100")["data"])
	ok("update_proxy", map[string]any{"id": proxyID, "content": map[string]any{"name": "office, renamed", "url": "http://proxy.example.com", "port": 3128,
		"authentication": map[string]any{"username": "bob", "retain_password": true}}}, &proxy)
	if proxy["name"] != "office, renamed" || proxy["username"] != "bob" {
		t.Fatalf("update_proxy: %v", proxy)
	}
	if rest := mcpGET(t, o, pro, "/v1/proxies/"+proxyID); rest["name"] != "office, renamed" {
		t.Fatalf("after update_proxy, REST shows %v", rest)
	}
	ok("delete_proxy", map[string]any{"id": proxyID}, nil)
	apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies/" + proxyID, Creds: &pro}), 404)

	// Storage destinations, against a real S3 server: the create tests the
	// connection.
	conn := map[string]any{"provider": "other_s3_compatible", "endpoint": s3.URL, "bucket": s3.Bucket, "key_prefix": "mcp",
		"access_key_id": s3test.AccessKeyID, "secret_access_key": s3test.SecretAccessKey}
	var dest map[string]any
	ok("create_storage_destination", map[string]any{"content": map[string]any{"name": "mcp bucket", "connection_info": conn}}, &dest)
	destID, _ := dest["id"].(string)
	if destID == "" || dest["name"] != "mcp bucket" || dest["last_test_succeeded"] != true {
		t.Fatalf("create_storage_destination: %v", dest)
	}
	if len(s3.Keys(t, s3.Bucket, "mcp/.hcti/connection-tests/")) == 0 {
		t.Fatal("create_storage_destination wrote no connection test object")
	}
	res = ok("get_storage_destination", map[string]any{"id": destID}, nil)
	mcpSame(t, "get_storage_destination", res.StructuredContent, mcpGET(t, o, pro, "/v1/storage-destinations/"+destID))
	var dests struct{ Data []map[string]any }
	ok("list_storage_destinations", nil, &dests)
	if len(dests.Data) != 1 || dests.Data[0]["id"] != destID {
		t.Fatalf("list_storage_destinations: %v", dests.Data)
	}
	mcpSame(t, "list_storage_destinations", dests.Data, mcpGET(t, o, pro, "/v1/storage-destinations")["data"])
	kept := map[string]any{}
	for k, v := range conn {
		if k != "secret_access_key" {
			kept[k] = v
		}
	}
	kept["retain_secret_access_key"] = true
	ok("update_storage_destination", map[string]any{"id": destID, "content": map[string]any{"name": "mcp bucket, renamed", "connection_info": kept}}, &dest)
	if dest["name"] != "mcp bucket, renamed" {
		t.Fatalf("update_storage_destination: %v", dest)
	}
	if rest := mcpGET(t, o, pro, "/v1/storage-destinations/"+destID); rest["name"] != "mcp bucket, renamed" {
		t.Fatalf("after update_storage_destination, REST shows %v", rest)
	}
	res = ok("get_aws_storage_external_id", nil, nil)
	mcpSame(t, "get_aws_storage_external_id", res.StructuredContent, mcpGET(t, o, pro, "/v1/storage-destinations/aws-external-id"))
	ok("delete_storage_destination", map[string]any{"id": destID}, nil)
	apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/storage-destinations/" + destID, Creds: &pro}), 404)

	// OG configurations.
	var ogc map[string]any
	ok("create_og_config", map[string]any{"content": map[string]any{"config_type": "html_css", "name": "site", "base_url": "https://Example.com:443/"}}, &ogc)
	ogID, _ := ogc["id"].(string)
	if ogID == "" || ogc["domain_id"] == "" || ogc["base_url"] != "https://example.com" || ogc["enabled"] != true {
		t.Fatalf("create_og_config: %v", ogc)
	}
	res = ok("get_og_config", map[string]any{"id": ogID}, nil)
	mcpSame(t, "get_og_config", res.StructuredContent, mcpGET(t, o, pro, "/v1/og-configs/"+ogID))
	var ogcs struct{ Data []map[string]any }
	ok("list_og_configs", nil, &ogcs)
	if len(ogcs.Data) != 1 || ogcs.Data[0]["id"] != ogID {
		t.Fatalf("list_og_configs: %v", ogcs.Data)
	}
	mcpSame(t, "list_og_configs", ogcs.Data, mcpGET(t, o, pro, "/v1/og-configs")["data"])
	domainID := ogc["domain_id"]
	ok("update_og_config", map[string]any{"id": ogID, "content": map[string]any{"config_type": "html_css", "name": "renamed",
		"base_url": "https://example.com", "refresh_interval_s": 3600}}, &ogc)
	if ogc["name"] != "renamed" || ogc["refresh_interval_s"] != float64(3600) || ogc["domain_id"] != domainID {
		t.Fatalf("update_og_config: %v", ogc)
	}
	if rest := mcpGET(t, o, pro, "/v1/og-configs/"+ogID); rest["name"] != "renamed" {
		t.Fatalf("after update_og_config, REST shows %v", rest)
	}
	ok("delete_og_config", map[string]any{"id": ogID}, nil)
	apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs/" + ogID, Creds: &pro}), 404)

	// Every tool ran, and no result held a secret.
	for _, name := range mcpTools {
		if !called[name] {
			t.Errorf("%s was not called", name)
		}
	}
	for _, secret := range []string{password, s3test.SecretAccessKey, pro.APIKey} {
		if strings.Contains(results.String(), secret) {
			t.Errorf("a tool result holds the secret %q", secret)
		}
	}
}

// TestMCPErrors: each class of failure, over MCP against the real origin.
func TestMCPErrors(t *testing.T) {
	o := startOrigin(t)
	_, pro := o.newOrg(t.Context(), t, "pro")
	_, free := o.newOrg(t.Context(), t, "free")
	endpoint := o.URL + origin.MCPPath

	// An invalid argument is refused by REST's validation: the tool error
	// is REST's answer to the same body, its text each field's message.
	t.Run("invalid arguments", func(t *testing.T) {
		cs := mcpSession(t, o, mcpConnect(t, o, pro, nil).Access)
		before := o.usage(t, pro)
		args := map[string]any{"html": redBox, "viewport_width": 0}
		res := mcpCall(t, cs, "create_image", args)
		rest := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &pro, JSON: args})
		apitest.WantField(t, rest, "viewport_width")
		if !res.IsError {
			t.Fatalf("create_image with viewport_width 0 succeeded: %s", mcpText(res))
		}
		mcpSame(t, "the refusal", res.StructuredContent, rest.Object(t))
		var refusal struct {
			Message          string
			ValidationErrors []struct{ Path, Message string } `json:"validation_errors"`
		}
		rest.Decode(t, &refusal)
		text := mcpText(res)
		if !strings.HasPrefix(text, refusal.Message+"\n") {
			t.Fatalf("tool error %q does not start with REST's message %q", text, refusal.Message)
		}
		for _, f := range refusal.ValidationErrors {
			if line := f.Path + ": " + f.Message; !slices.Contains(strings.Split(text, "\n"), line) {
				t.Fatalf("tool error %q lacks the line %q", text, line)
			}
		}
		if !strings.Contains(text, "\nviewport_width: ") {
			t.Fatalf("tool error %q does not name viewport_width", text)
		}
		if after := o.usage(t, pro); after != before {
			t.Fatalf("refused calls used %d credits", after-before)
		}
	})

	t.Run("permission not approved", func(t *testing.T) {
		g := mcpConnect(t, o, pro, []string{"usage:read", "templates:read"})
		cs := mcpSession(t, o, g.Access)
		before := o.usage(t, pro)
		for _, tc := range []struct {
			tool string
			args any
		}{
			{"create_image", map[string]any{"html": box(10, 10, "red")}},
			{"create_batch_images", map[string]any{"variations": []any{map[string]any{"html": box(11, 11, "red")}}}},
			{"get_max_batch_size", nil},
		} {
			body := mcpFail(t, cs, tc.tool, tc.args, "images:create")
			if body["statusCode"] != float64(403) {
				t.Fatalf("%s: %v", tc.tool, body)
			}
		}
		// What was approved works.
		var usage struct {
			ImagesUsed int `json:"images_used"`
		}
		mcpOK(t, cs, "check_usage", nil, &usage)
		mcpOK(t, cs, "list_templates", nil, nil)
		if after := o.usage(t, pro); after != before || usage.ImagesUsed != before {
			t.Fatalf("credits used: %d before, %d after over REST, %d over MCP", before, after, usage.ImagesUsed)
		}
	})

	t.Run("plan gating", func(t *testing.T) {
		cs := mcpSession(t, o, mcpConnect(t, o, free, nil).Access)
		body := mcpFail(t, cs, "create_proxy", map[string]any{"content": map[string]any{"name": "office", "url": "http://proxy.example.com"}},
			"pro plan", "free plan")
		if body["statusCode"] != float64(403) {
			t.Fatalf("create_proxy on the free plan: %v", body)
		}
		mcpFail(t, cs, "get_aws_storage_external_id", nil, "pro plan", "free plan")
	})

	t.Run("rate limit shared with REST", func(t *testing.T) {
		o.nextWindow()
		var mu sync.Mutex
		var answers []*http.Response
		cs := mcpSessionAt(t, endpoint, mcpConnect(t, o, pro, nil).Access, func(r *http.Response) {
			mu.Lock()
			defer mu.Unlock()
			answers = append(answers, r)
		})
		// The quota spent over REST ...
		for i := range ratelimit.WriteQuota {
			apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies", Creds: &pro,
				JSON: map[string]any{"name": fmt.Sprintf("rest proxy %d", i), "url": "http://proxy.example.com"}}), 200)
		}
		mu.Lock()
		answers = nil
		mu.Unlock()
		// ... refuses the tool, in a tool error naming the limit, in an
		// MCP answer that is no 429 and holds no rate-limit header.
		create := map[string]any{"content": map[string]any{"name": "mcp proxy", "url": "http://proxy.example.com"}}
		body := mcpFail(t, cs, "create_proxy", create, "Rate limit exceeded for proxy:write", "20 requests per 60 seconds", "retry after")
		if body["statusCode"] != float64(429) {
			t.Fatalf("create_proxy past the limit: %v", body)
		}
		mu.Lock()
		if len(answers) == 0 {
			t.Fatal("no HTTP answer seen")
		}
		for _, r := range answers {
			if r.StatusCode != http.StatusOK {
				t.Errorf("the MCP answer is %d", r.StatusCode)
			}
			for name := range r.Header {
				if strings.HasPrefix(strings.ToLower(name), "ratelimit") || strings.EqualFold(name, "Retry-After") {
					t.Errorf("the MCP answer carries %s: %q", name, r.Header.Get(name))
				}
			}
		}
		mu.Unlock()
		names := func() []string {
			var list struct{ Data []struct{ Name string } }
			r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/proxies?count=100", Creds: &pro})
			apitest.WantStatus(t, r, 200)
			r.Decode(t, &list)
			var out []string
			for _, p := range list.Data {
				out = append(out, p.Name)
			}
			return out
		}
		if got := names(); len(got) != ratelimit.WriteQuota || slices.Contains(got, "mcp proxy") {
			t.Fatalf("proxies after the refusal: %v", got)
		}
		// The next window allows it.
		o.nextWindow()
		mcpOK(t, cs, "create_proxy", create, nil)
		if got := names(); len(got) != ratelimit.WriteQuota+1 || !slices.Contains(got, "mcp proxy") {
			t.Fatalf("proxies after the next window: %v", got)
		}
	})

	t.Run("credits", func(t *testing.T) {
		cs := mcpSession(t, o, mcpConnect(t, o, free, nil).Access)
		// The free plan's 50 credits, used over REST.
		for b := range 2 {
			var variations []any
			for i := range 25 {
				variations = append(variations, map[string]any{"html": box(10+i, 10+b, "red")})
			}
			apitest.WantStatus(t, o.batch(t, free, map[string]any{"variations": variations}), 200)
		}
		if used := o.usage(t, free); used != 50 {
			t.Fatalf("%d credits used, want 50", used)
		}
		body := mcpFail(t, cs, "create_image", map[string]any{"html": box(99, 99, "blue")}, "50 of your 50 image credits")
		if body["statusCode"] != float64(429) || body["error"] != "Plan limit exceeded" {
			t.Fatalf("create_image out of credits: %v", body)
		}
		var usage struct {
			ImagesUsed    int `json:"images_used"`
			ImagesAllowed int `json:"images_allowed"`
			Plan          string
		}
		mcpOK(t, cs, "check_usage", nil, &usage)
		if usage.ImagesUsed != 50 || usage.ImagesAllowed != 50 || usage.Plan != "free" || o.usage(t, free) != 50 {
			t.Fatalf("check_usage after the refusal: %+v", usage)
		}
	})

	// What is not a JSON-RPC request is refused in JSON-RPC's words (a 400
	// for a body that is no message), never with a 500; the tools never run.
	t.Run("malformed JSON-RPC", func(t *testing.T) {
		token := mcpConnect(t, o, pro, nil).Access
		before := o.usage(t, pro)
		for _, tc := range []struct {
			name, body string
			status     int
			code       int // the JSON-RPC error code; 0 for a tool error
		}{
			{name: "empty", body: ``, status: 400, code: -32700},
			{name: "not JSON", body: `this is not JSON`, status: 400, code: -32700},
			{name: "truncated", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"`, status: 400, code: -32700},
			{name: "an array of numbers", body: `[1,2]`, status: 400, code: -32600},
			{name: "no method", body: `{"jsonrpc":"2.0","id":1}`, status: 400, code: -32600},
			{name: "wrong version", body: `{"jsonrpc":"1.0","id":1,"method":"tools/list","params":{}}`, status: 400, code: -32600},
			{name: "params not an object", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"create_image"}`, status: 200, code: -32602},
			{name: "unknown tool", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"make_image","arguments":{}}}`, status: 200, code: -32602},
			{name: "arguments not an object", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_image","arguments":["<p>x</p>"]}}`, status: 200},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := mcpPost(t, endpoint, token, tc.body)
				if r.Status >= 500 || r.Status != tc.status {
					t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
				}
				var msg struct {
					JSONRPC string
					Error   *struct {
						Code    int
						Message string
					}
					Result *struct{ IsError bool }
				}
				if err := json.Unmarshal(r.Body, &msg); err != nil || msg.JSONRPC != "2.0" {
					t.Fatalf("answer %s is not a JSON-RPC message: %v", r.Body, err)
				}
				switch {
				case tc.code != 0 && (msg.Error == nil || msg.Error.Code != tc.code || msg.Error.Message == ""):
					t.Fatalf("answer %s, want JSON-RPC error %d", r.Body, tc.code)
				case tc.code == 0 && (msg.Result == nil || !msg.Result.IsError):
					t.Fatalf("answer %s, want a tool error", r.Body)
				}
			})
		}
		if after := o.usage(t, pro); after != before {
			t.Fatalf("malformed requests used %d credits", after-before)
		}
	})

	t.Run("refresh token used twice", func(t *testing.T) {
		g := mcpConnect(t, o, pro, nil)
		r := mcpRefresh(t, o.URL, g, g.Refresh)
		apitest.WantStatus(t, r, 200)
		var rotated struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		}
		r.Decode(t, &rotated)
		if rotated.RefreshToken == "" || rotated.RefreshToken == g.Refresh {
			t.Fatalf("refresh did not rotate: %s", r.Body)
		}
		apitest.WantStatus(t, mcpPost(t, endpoint, rotated.AccessToken, mcpToolsList), 200)
		r = mcpRefresh(t, o.URL, g, g.Refresh)
		apitest.WantStatus(t, r, 400)
		if e := r.Object(t); e["error"] != "invalid_grant" {
			t.Fatalf("second use of a refresh token: %s", r.Body)
		}
		mcpWantUnauthorized(t, mcpPost(t, endpoint, rotated.AccessToken, mcpToolsList), o.URL, "token revoked")
		mcpWantUnauthorized(t, mcpPost(t, endpoint, g.Access, mcpToolsList), o.URL, "token revoked")
		if e := mcpRefresh(t, o.URL, g, rotated.RefreshToken).Object(t); e["error"] != "invalid_grant" {
			t.Fatalf("the rotated refresh token after the reuse: %v", e)
		}
	})

	// Token failures: each a 401 with the challenge naming the resource
	// metadata. The expiry, which moves the clock, comes last.
	t.Run("token failures", func(t *testing.T) {
		t.Run("no token", func(t *testing.T) {
			mcpWantUnauthorized(t, mcpPost(t, endpoint, "", mcpToolsList), o.URL, "")
		})

		t.Run("forged", func(t *testing.T) {
			g := mcpConnect(t, o, pro, nil)
			apitest.WantStatus(t, mcpPost(t, endpoint, g.Access, mcpToolsList), 200)
			// The same header and claims, signed with another Ed25519 key.
			parts := strings.Split(g.Access, ".")
			if len(parts) != 3 {
				t.Fatalf("access token %q is not a JWS", g.Access)
			}
			header, err := base64.RawURLEncoding.DecodeString(parts[0])
			if err != nil || !strings.Contains(string(header), `"EdDSA"`) {
				t.Fatalf("access token header %s: %v", header, err)
			}
			_, other, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			forged := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(other, []byte(parts[0]+"."+parts[1])))
			mcpWantUnauthorized(t, mcpPost(t, endpoint, forged, mcpToolsList), o.URL, "bad signature or algorithm")
			mcpWantUnauthorized(t, mcpPost(t, endpoint, "not-a-token", mcpToolsList), o.URL, "malformed token")
		})

		t.Run("key disabled", func(t *testing.T) {
			k := o.createKey(t, pro, map[string]any{"name": "assistant", "permissions": []string{"images:create", "usage:read"}})
			g := mcpConnect(t, o, *k.creds(), nil)
			if g.Scope != "images:create usage:read" {
				t.Fatalf("a key's connection is granted %q, more or less than the key holds", g.Scope)
			}
			cs := mcpSession(t, o, g.Access)
			mcpOK(t, cs, "check_usage", nil, nil)
			apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + k.ID, Creds: &pro}), 204)
			mcpWantUnauthorized(t, mcpPost(t, endpoint, g.Access, mcpToolsList), o.URL, "token revoked")
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "check_usage"}); err == nil {
				t.Fatal("the open session still calls tools once the key is disabled")
			}
			if e := mcpRefresh(t, o.URL, g, g.Refresh).Object(t); e["error"] != "invalid_grant" {
				t.Fatalf("refresh once the key is disabled: %v", e)
			}
		})

		t.Run("key changed but enabled", func(t *testing.T) {
			// Renaming the key, or taking a permission away, keeps its
			// connections: they narrow to what the key holds now.
			k := o.createKey(t, pro, map[string]any{"name": "reader", "permissions": []string{"usage:read", "templates:read"}})
			g := mcpConnect(t, o, *k.creds(), nil)
			cs := mcpSession(t, o, g.Access)
			o.nextWindow()
			apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys/" + k.ID, Creds: &pro,
				JSON: map[string]any{"name": "renamed reader", "permissions": []string{"usage:read", "templates:read"}}}), 200)
			mcpOK(t, cs, "check_usage", nil, nil)
			apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys/" + k.ID, Creds: &pro,
				JSON: map[string]any{"name": "renamed reader", "permissions": []string{"templates:read"}}}), 200)
			mcpFail(t, cs, "check_usage", nil, "usage:read")
			mcpOK(t, cs, "list_templates", nil, nil)
		})

		t.Run("organization suspended", func(t *testing.T) {
			orgID, creds := o.newOrg(t.Context(), t, "pro")
			g := mcpConnect(t, o, creds, nil)
			apitest.WantStatus(t, mcpPost(t, endpoint, g.Access, mcpToolsList), 200)
			c, err := admin.Dial(o.DataDir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.SetSuspended(t.Context(), orgID, true); err != nil {
				t.Fatal(err)
			}
			mcpWantUnauthorized(t, mcpPost(t, endpoint, g.Access, mcpToolsList), o.URL, "token revoked")
			// The suspension ended the connection for good: resumed, the
			// organization's key works over REST, the token does not.
			if _, err := c.SetSuspended(t.Context(), orgID, false); err != nil {
				t.Fatal(err)
			}
			apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/usage", Creds: &creds}), 200)
			mcpWantUnauthorized(t, mcpPost(t, endpoint, g.Access, mcpToolsList), o.URL, "token revoked")
		})

		t.Run("expired", func(t *testing.T) {
			g := mcpConnect(t, o, pro, nil)
			apitest.WantStatus(t, mcpPost(t, endpoint, g.Access, mcpToolsList), 200)
			o.Clock.Advance(mcpAccessTTL - time.Second)
			apitest.WantStatus(t, mcpPost(t, endpoint, g.Access, mcpToolsList), 200)
			o.Clock.Advance(2 * time.Second)
			mcpWantUnauthorized(t, mcpPost(t, endpoint, g.Access, mcpToolsList), o.URL, "token expired")
			// The refresh token gets a fresh one.
			r := mcpRefresh(t, o.URL, g, g.Refresh)
			apitest.WantStatus(t, r, 200)
			var fresh struct {
				AccessToken string `json:"access_token"`
			}
			r.Decode(t, &fresh)
			apitest.WantStatus(t, mcpPost(t, endpoint, fresh.AccessToken, mcpToolsList), 200)
		})
	})
}

// mcpStartEdge runs an edge in front of o on ln, so that o's public URL
// can name the edge before it starts (startTestEdge picks its own port).
func mcpStartEdge(t *testing.T, o *testOrigin, ln net.Listener) string {
	t.Helper()
	cfg := edge.DefaultConfig()
	cfg.Addr = ln.Addr().String()
	cfg.Listener = ln
	cfg.OriginURL = o.URL
	cfg.CacheDir = filepath.Join(t.TempDir(), "edge-cache")
	cfg.CacheMem = 16 << 20
	cfg.CacheDisk = 64 << 20
	e, err := edge.New(cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(context.Background()); err != nil {
			t.Errorf("stop edge: %v", err)
		}
	})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return "http://" + ln.Addr().String()
}

// TestMCPThroughTheEdge: with the edge's URL as the public URL, a client
// finds the metadata, connects, lists and calls the tools through the
// edge, which relays every OAuth and MCP answer unchanged (the challenge
// of a 401 included).
func TestMCPThroughTheEdge(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + ln.Addr().String()
	o := startOrigin(t, func(c *origin.Config) { c.PublicURL = public })
	edgeURL := mcpStartEdge(t, o, ln)
	if edgeURL != public {
		t.Fatalf("edge at %s, public URL %s", edgeURL, public)
	}

	// Discovery: the metadata, as the origin serves it.
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server"} {
		viaEdge := apitest.Do(t, edgeURL, apitest.Request{Method: "GET", Path: path})
		direct := o.do(t, apitest.Request{Method: "GET", Path: path})
		apitest.WantStatus(t, viaEdge, 200)
		if string(viaEdge.Body) != string(direct.Body) || viaEdge.Header.Get("Content-Type") != direct.Header.Get("Content-Type") {
			t.Fatalf("GET %s: the edge answers %s, the origin %s", path, viaEdge.Body, direct.Body)
		}
	}
	var resource struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	apitest.Do(t, edgeURL, apitest.Request{Method: "GET", Path: "/.well-known/oauth-protected-resource/mcp"}).Decode(t, &resource)
	if resource.Resource != edgeURL+origin.MCPPath || !slices.Equal(resource.AuthorizationServers, []string{edgeURL}) {
		t.Fatalf("resource metadata through the edge: %+v", resource)
	}

	// A 401 keeps its challenge.
	viaEdge := mcpPost(t, edgeURL+origin.MCPPath, "", mcpToolsList)
	mcpWantUnauthorized(t, viaEdge, edgeURL, "")
	if direct := mcpPost(t, o.URL+origin.MCPPath, "", mcpToolsList); viaEdge.Header.Get("WWW-Authenticate") != direct.Header.Get("WWW-Authenticate") {
		t.Fatalf("WWW-Authenticate through the edge %q, from the origin %q", viaEdge.Header.Get("WWW-Authenticate"), direct.Header.Get("WWW-Authenticate"))
	}

	// The whole flow through the edge, then the tools.
	g := mcpConnectAt(t, edgeURL, o.Owner, nil)
	raw := mcpPost(t, edgeURL+origin.MCPPath, g.Access, mcpToolsList)
	apitest.WantStatus(t, raw, 200)
	var listed struct {
		Result struct{ Tools []struct{ Name string } }
	}
	raw.Decode(t, &listed)
	if len(listed.Result.Tools) != len(mcpTools) {
		t.Fatalf("tools/list through the edge: %s", raw.Body)
	}
	cs := mcpSessionAt(t, edgeURL+origin.MCPPath, g.Access, nil)
	var created struct{ URL, ID string }
	mcpOK(t, cs, "create_image", map[string]any{"html": redBox}, &created)
	if created.URL != edgeURL+"/v1/image/"+created.ID {
		t.Fatalf("create_image through the edge: %+v", created)
	}
	img := apitest.DecodeImage(t, apitest.Do(t, created.URL, apitest.Request{Method: "GET"}))
	apitest.WantSize(t, img, 800, 400)
	apitest.WantPixel(t, img, 400, 200, red, 0)

	// A refused token through the edge: its challenge says why.
	o.Clock.Advance(mcpAccessTTL + time.Second)
	mcpWantUnauthorized(t, mcpPost(t, edgeURL+origin.MCPPath, g.Access, mcpToolsList), edgeURL, "token expired")
	r := mcpRefresh(t, edgeURL, g, g.Refresh)
	apitest.WantStatus(t, r, 200)
	var fresh struct {
		AccessToken string `json:"access_token"`
	}
	r.Decode(t, &fresh)
	apitest.WantStatus(t, mcpPost(t, edgeURL+origin.MCPPath, fresh.AccessToken, mcpToolsList), 200)
}
