package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/contract/logging"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/proxy"
	"github.com/pictorhq/pictor/origin/ratelimit"
	"github.com/pictorhq/pictor/origin/storedest"
	"github.com/pictorhq/pictor/origin/usage"
)

var epoch = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	// The router's access log and the tool call lines are not what most
	// tests look at (TestLogs does).
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}

// got is a request a test handler received.
type got struct {
	Method, Path, Query, Body string
	RequestID, RemoteAddr     string
	KeyID                     string
}

// site is a Pictor origin in miniature: a real api.Router with test
// handlers on the routes of origin/routes.go that the tools use (same
// methods, paths, permissions, plan checks and rate-limit groups), and
// the MCP server in front of it on loopback.
type site struct {
	t      *testing.T
	clock  *apitest.Clock
	org    *org.Org
	server *Server
	srv    *httptest.Server

	mu     sync.Mutex
	got    []got
	tokens map[string]*auth.Principal
	images map[string]image.Image // the renders, by image id
	failed map[string]string      // render failures, by image id
	broken bool                   // every handler answers 500
	n      int
	// held, when set, receives a channel from createImage for html
	// holdHTML, which waits until that channel is closed.
	held chan chan struct{}
}

// holdHTML is the html of an image creation that waits for the test
// (site.held).
const holdHTML = "<p>hold</p>"

const requestID = "req-mcp-test-1"

var errTokenRefused = errors.New("invalid token: token revoked")

func newSite(t *testing.T, mutate ...func(*Config)) *site {
	t.Helper()
	s := &site{t: t, clock: apitest.NewClock(epoch), tokens: map[string]*auth.Principal{},
		images: map[string]image.Image{}, failed: map[string]string{}}
	s.org = &org.Org{ID: "org-1", Plan: "pro", CreatedAt: time.Date(2025, 11, 20, 8, 30, 0, 0, time.UTC)}
	s.grant("all", perm.Grant{AllFuture: true})
	router := api.New(api.Config{Authenticator: noKeys{}, Limiter: ratelimit.NewMemory(s.clock.Now)}, s.routes())
	cfg := DefaultConfig()
	cfg.API = router
	cfg.Version = "test"
	cfg.Verify = func(_ context.Context, token string) (*auth.Principal, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if token == "broken" {
			return nil, errors.New("token store unreachable")
		}
		p, ok := s.tokens[token]
		if !ok {
			return nil, errTokenRefused
		}
		return p, nil
	}
	cfg.IsInvalidToken = func(err error) bool { return errors.Is(err, errTokenRefused) }
	cfg.Challenge = func(err error) string {
		if err == nil {
			return `Bearer resource_metadata="http://pictor.test/.well-known/oauth-protected-resource"`
		}
		return fmt.Sprintf(`Bearer error="invalid_token", error_description=%q`, err.Error())
	}
	for _, m := range mutate {
		m(&cfg)
	}
	server, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.server = server
	s.srv = httptest.NewServer(server)
	t.Cleanup(s.srv.Close)
	return s
}

// grant makes token stand for a key of the site's organization holding g.
func (s *site) grant(token string, g perm.Grant) { s.grantIn(s.org, token, g) }

// grantIn makes token stand for a key of o holding g.
func (s *site) grantIn(o *org.Org, token string, g perm.Grant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = &auth.Principal{Org: o, KeyID: "key-" + token, APIID: "api-" + token, Grant: g}
}

func (s *site) revoke(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, token)
}

func (s *site) received() []got {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]got(nil), s.got...)
}

// noKeys refuses every API key: the tools never send one.
type noKeys struct{}

func (noKeys) Authenticate(context.Context, string, string) (*auth.Principal, error) {
	return nil, auth.ErrInvalid
}

func (s *site) routes() []api.Route {
	delivery := func(p *auth.Principal) error { return proxy.CheckPlan(p.Org) }
	destPlan := func(p *auth.Principal) error { return storedest.CheckPlan(p.Org) }
	mgmt := func(path, noun string, create, read, del perm.Permission, wg, rg ratelimit.Group, check func(*auth.Principal) error) []api.Route {
		return []api.Route{
			{Method: "POST", Pattern: path, Permission: create, Group: wg, Check: check, Handler: s.resource(noun)},
			{Method: "GET", Pattern: path, Permission: read, Group: rg, Check: check, Handler: s.list},
			{Method: "GET", Pattern: path + "/{id}", Permission: read, Group: rg, Check: check, Handler: s.resource(noun)},
			{Method: "POST", Pattern: path + "/{id}", Permission: create, Group: wg, Check: check, Handler: s.resource(noun)},
			{Method: "DELETE", Pattern: path + "/{id}", Permission: del, Group: wg, Check: check, Handler: s.deleted},
		}
	}
	routes := []api.Route{
		{Method: "POST", Pattern: "/v1/image", Permission: perm.ImagesCreate, Handler: s.createImage},
		{Method: "POST", Pattern: "/v1/image/batch", Permission: perm.ImagesCreate, Handler: s.batch},
		{Method: "GET", Pattern: "/v1/image/{id}", Public: true, Handler: s.serveImage},
		{Method: "GET", Pattern: "/v1/usage", Permission: perm.UsageRead, Handler: s.usage},
		{Method: "POST", Pattern: "/v1/image/{template_id}", Permission: perm.ImagesCreate, Handler: s.createImage},
		{Method: "POST", Pattern: "/v1/image/{template_id}/{template_version}", Permission: perm.ImagesCreate, Handler: s.createImage},
		{Method: "POST", Pattern: "/v1/template", Permission: perm.TemplatesCreateUpdate, Handler: s.saveTemplate},
		{Method: "GET", Pattern: "/v1/template", Permission: perm.TemplatesRead, Handler: s.list},
		{Method: "GET", Pattern: "/v1/template/{id}", Permission: perm.TemplatesRead, Handler: s.list},
		{Method: "POST", Pattern: "/v1/template/{id}", Permission: perm.TemplatesCreateUpdate, Handler: s.saveTemplate},
		{Method: "GET", Pattern: "/v1/storage-destinations/aws-external-id", Permission: perm.StorageDestinationsRead,
			Group: ratelimit.StorageDestinationRead, Check: destPlan, Handler: s.externalID},
	}
	routes = append(routes, mgmt("/v1/og-configs", "og-config", perm.OGConfigsCreateUpdate, perm.OGConfigsRead, perm.OGConfigsDelete,
		ratelimit.OGConfigWrite, ratelimit.OGConfigRead, nil)...)
	routes = append(routes, mgmt("/v1/proxies", "proxy", perm.ProxiesCreateUpdate, perm.ProxiesRead, perm.ProxiesDelete,
		ratelimit.ProxyWrite, ratelimit.ProxyRead, delivery)...)
	routes = append(routes, mgmt("/v1/storage-destinations", "storage-destination", perm.StorageDestinationsCreateUpdate,
		perm.StorageDestinationsRead, perm.StorageDestinationsDelete, ratelimit.StorageDestinationWrite, ratelimit.StorageDestinationRead, destPlan)...)
	return routes
}

// record notes what a handler received and reports whether it should
// answer as a broken server.
func (s *site) record(r *http.Request) (body []byte, broken bool) {
	body, _ = io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	g := got{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Body: string(body),
		RequestID: logging.RequestID(r.Context()), RemoteAddr: r.RemoteAddr}
	if p := auth.FromContext(r.Context()); p != nil {
		g.KeyID = p.KeyID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, g)
	return body, s.broken
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// createImage validates with imageparams, as the real handler does, and
// records a render of the viewport's size (40x20 CSS pixels by default)
// times the device scale.
func (s *site) createImage(w http.ResponseWriter, r *http.Request) {
	if _, broken := s.record(r); broken {
		apierr.Write(w, r, apierr.Internal(errors.New("disk on fire")))
		return
	}
	o, err := field.DecodeAny(w, r, maxImageBody)
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	if id := r.PathValue("template_id"); id != "" {
		if id == "t-missing" {
			apierr.Write(w, r, apierr.NotFound("Template %s not found", id))
			return
		}
		writeJSON(w, 200, s.newImage(imageparams.Params{}))
		return
	}
	params, err := imageparams.Parse(o, imageparams.Options{MaxWaitCap: 5 * time.Second, RequireSource: true})
	if err != nil {
		apierr.Write(w, r, err)
		return
	}
	if params.HTML == holdHTML && s.held != nil {
		release := make(chan struct{})
		s.held <- release
		<-release
	}
	if params.HTML == overPlan {
		e := apierr.New(http.StatusTooManyRequests, "You've used 10000 of your 10000 image credits for this billing period; this request needs 1")
		e.Title = "Plan limit exceeded"
		apierr.Write(w, r, e)
		return
	}
	writeJSON(w, 200, s.newImage(params))
}

// overPlan is the html the test site refuses for want of credits.
const overPlan = "<p>one image too many</p>"

func (s *site) newImage(p imageparams.Params) link {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	id := fmt.Sprintf("0190b2c4-0000-7000-8000-%012d", s.n)
	w, h := 40, 20
	if p.Viewport != nil {
		w, h = p.Viewport.Width, p.Viewport.Height
	}
	scale := p.DeviceScale()
	if p.RenderWhenReady {
		s.failed[id] = "render_when_ready was set but the page never called ScreenshotReady()"
	}
	s.images[id] = noise(int(float64(w)*scale), int(float64(h)*scale))
	if p.StorageDestinationID == "keep-none" { // hcti_storage_disabled
		return link{URL: "https://pictor.test/v1/store/" + id, ID: id}
	}
	return link{URL: "https://pictor.test/v1/image/" + id, ID: id}
}

// noise is an image that compresses badly, so that sizes are predictable.
func noise(w, h int) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	x := uint32(2463534242)
	for i := range img.Pix {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		img.Pix[i] = byte(x)
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	return img
}

func (s *site) batch(w http.ResponseWriter, r *http.Request) {
	body, broken := s.record(r)
	if broken {
		apierr.Write(w, r, apierr.Internal(errors.New("disk on fire")))
		return
	}
	var req struct{ Variations []json.RawMessage }
	if json.Unmarshal(body, &req) != nil || len(req.Variations) < 1 || len(req.Variations) > maxBatch {
		apierr.Write(w, r, apierr.Field("variations", "must hold 1 to %d variations (got %d)", maxBatch, len(req.Variations)))
		return
	}
	out := struct {
		Images []link `json:"images"`
	}{}
	for range req.Variations {
		out.Images = append(out.Images, s.newImage(imageparams.Params{}))
	}
	writeJSON(w, 200, out)
}

// serveImage is the public GET of an image: PNG, JPG (quality 30) or a
// WebP stand-in a tenth of the PNG's size.
func (s *site) serveImage(w http.ResponseWriter, r *http.Request) {
	s.record(r)
	id, ext, _ := strings.Cut(r.PathValue("id"), ".")
	s.mu.Lock()
	img, failure := s.images[id], s.failed[id]
	s.mu.Unlock()
	switch {
	case img == nil:
		apierr.Write(w, r, apierr.NotFound("Image not found"))
		return
	case failure != "":
		apierr.Write(w, r, apierr.BadRequest("%s", failure))
		return
	}
	var b bytes.Buffer
	switch ext {
	case "", "png":
		w.Header().Set("Content-Type", "image/png")
		png.Encode(&b, img)
	case "jpg":
		w.Header().Set("Content-Type", "image/jpeg")
		jpeg.Encode(&b, img, &jpeg.Options{Quality: 30})
	case "webp":
		w.Header().Set("Content-Type", "image/webp")
		png.Encode(&b, img)
		b.Truncate(b.Len() / 10)
	default:
		apierr.Write(w, r, apierr.NotFound("Image not found"))
		return
	}
	w.Write(b.Bytes())
}

func (s *site) usage(w http.ResponseWriter, r *http.Request) {
	if _, broken := s.record(r); broken {
		apierr.Write(w, r, apierr.Internal(errors.New("disk on fire")))
		return
	}
	end := "2026-02-20T08:30:00Z"
	writeJSON(w, 200, usage.Report{
		Data: usage.Buckets{Hour: map[string]int64{"2026-03-10T11:00:00Z": 3}, Day: map[string]int64{}, Month: map[string]int64{}},
		PerBillingPeriod: []usage.PeriodReport{
			{TotalImages: 410, Start: "2026-01-20T08:30:00Z", End: &end},
			{TotalImages: 37, Start: "2026-02-20T08:30:00Z"},
		},
	})
}

func (s *site) saveTemplate(w http.ResponseWriter, r *http.Request) {
	if _, broken := s.record(r); broken {
		apierr.Write(w, r, apierr.Internal(errors.New("disk on fire")))
		return
	}
	if id := r.PathValue("id"); id != "" {
		writeJSON(w, 200, map[string]any{"template_id": id, "template_version": 2})
		return
	}
	writeJSON(w, 201, map[string]any{"template_id": "t-0190b2c4-0000-7000-8000-000000000001", "template_version": 1})
}

func (s *site) list(w http.ResponseWriter, r *http.Request) {
	if _, broken := s.record(r); broken {
		apierr.Write(w, r, apierr.Internal(errors.New("disk on fire")))
		return
	}
	writeJSON(w, 200, map[string]any{"data": []any{}, "pagination": map[string]any{"next_page_start": nil}})
}

// resource answers a create, get or update with the resource: its id and
// the name sent; a name "!" is refused as the real handlers refuse one.
func (s *site) resource(noun string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, broken := s.record(r)
		if broken {
			apierr.Write(w, r, apierr.Internal(errors.New("disk on fire")))
			return
		}
		var req struct{ Name string }
		json.Unmarshal(body, &req)
		if r.Method == "POST" && len(req.Name) < 3 {
			apierr.Write(w, r, apierr.Field("name", "must be 3 to 500 characters (got %d)", len(req.Name)))
			return
		}
		id := r.PathValue("id")
		if id == "" {
			id = "0190b2c4-0000-7000-8000-0000000000aa"
		}
		writeJSON(w, 200, map[string]any{"id": id, "name": req.Name, "kind": noun, "enabled": true})
	}
}

func (s *site) deleted(w http.ResponseWriter, r *http.Request) {
	s.record(r)
	w.WriteHeader(http.StatusNoContent)
}

func (s *site) externalID(w http.ResponseWriter, r *http.Request) {
	s.record(r)
	writeJSON(w, 200, map[string]any{"external_id": "pictor-abc"})
}

// bearerTransport sends the token and the request id with every request.
type bearerTransport struct {
	token string
	seen  func(*http.Response)
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	r.Header.Set(contract.HeaderRequestID, requestID)
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && b.seen != nil {
		b.seen(resp)
	}
	return resp, err
}

// connect opens an MCP session with the SDK's client as token's holder;
// seen, when set, sees every HTTP answer.
func (s *site) connect(token string, seen func(*http.Response)) *mcp.ClientSession {
	s.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "pictor-test", Version: "1.0.0"}, nil)
	transport := &mcp.StreamableClientTransport{Endpoint: s.srv.URL, DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerTransport{token: token, seen: seen}}}
	cs, err := client.Connect(context.Background(), transport, nil)
	if err != nil {
		s.t.Fatalf("connect: %v", err)
	}
	s.t.Cleanup(func() { cs.Close() })
	return cs
}

// call runs a tool and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// text is the first text content of a result.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	t.Fatalf("no text content in %+v", res.Content)
	return ""
}

// structured is the structured content of a result as a JSON object.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

// post sends a raw JSON-RPC message to /mcp, as the current protocol does.
func (s *site) post(token, body string, header map[string]string) *http.Response {
	s.t.Helper()
	req, err := http.NewRequest("POST", s.srv.URL, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { resp.Body.Close() })
	return resp
}
