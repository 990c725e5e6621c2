package ogconfig_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/ratelimit"
	"github.com/pictorhq/pictor/origin/template"
)

func TestMain(m *testing.M) {
	// The router's access log and the answers' debug lines are not what
	// these tests look at.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// orgs authenticates one owner key per organization: the api_id names
// the organization, whose plan is its suffix ("acme-pro" is on pro). A key
// "<org>-<plan>-readonly" holds og_configs:read only.
type orgs struct{}

func (orgs) Authenticate(_ context.Context, apiID, secret string) (*auth.Principal, error) {
	name, readOnly := strings.CutSuffix(apiID, "-readonly")
	i := strings.LastIndexByte(name, '-')
	if secret != "s3cret" || i < 0 {
		return nil, auth.ErrInvalid
	}
	o := &org.Org{ID: "org-" + name, Name: name, Plan: name[i+1:]}
	g := perm.Grant{AllFuture: true}
	if readOnly {
		g = perm.Grant{Permissions: []perm.Permission{perm.OGConfigsRead}}
	}
	return &auth.Principal{Org: o, KeyID: "key-" + apiID, APIID: apiID, Grant: g}, nil
}

var (
	pro      = &apitest.Creds{APIID: "acme-pro", APIKey: "s3cret"}
	other    = &apitest.Creds{APIID: "rival-pro", APIKey: "s3cret"}
	free     = &apitest.Creds{APIID: "tiny-free", APIKey: "s3cret"}
	readOnly = &apitest.Creds{APIID: "acme-pro-readonly", APIKey: "s3cret"}
)

func orgID(c *apitest.Creds) string { return "org-" + c.APIID }

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// templates is what the organizations hold: org id → template id →
// latest version.
type templates map[string]map[string]int

func (ts templates) Exists(orgID, id string, version int) error {
	latest, ok := ts[orgID][id]
	if !ok || version > latest {
		return fmt.Errorf("template %s version %d: %w", id, version, ogconfig.ErrTemplateNotFound)
	}
	return nil
}

// site serves the OG configuration routes as the origin does.
type site struct {
	base    string
	h       *ogconfig.Handler
	clock   *apitest.Clock // the store's
	limits  *apitest.Clock // the rate limiter's: moved a window on by do unless burst
	burst   bool
	mu      sync.Mutex
	changed []*ogconfig.Config // OnChange calls
	failOn  string             // OnChange fails for this id
}

func start(t *testing.T) *site {
	t.Helper()
	db, err := pebblekv.Open(filepath.Join(t.TempDir(), "db"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := &site{clock: apitest.NewClock(epoch), limits: apitest.NewClock(epoch)}
	s.h = &ogconfig.Handler{
		Store:   ogconfig.NewStore(db, s.clock.Now),
		Cursors: cursor.New([]byte("0123456789abcdef0123456789abcdef")),
		Templates: templates{
			orgID(pro):   {"t-card": 3},
			orgID(other): {"t-theirs": 1},
		},
		OnChange: func(_ context.Context, c *ogconfig.Config) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.changed = append(s.changed, c)
			if c.ID == s.failOn {
				return errors.New("edges unreachable")
			}
			return nil
		},
	}
	srv := httptest.NewServer(api.New(api.Config{Authenticator: orgs{}, Limiter: ratelimit.NewMemory(s.limits.Now)}, routes(s.h)))
	t.Cleanup(srv.Close)
	s.base = srv.URL
	return s
}

// routes is the route table the origin registers.
func routes(h *ogconfig.Handler) []api.Route {
	return []api.Route{
		{Method: http.MethodPost, Pattern: "/v1/og-configs", Permission: perm.OGConfigsCreateUpdate, Group: ratelimit.OGConfigWrite, Serve: h.Create},
		{Method: http.MethodGet, Pattern: "/v1/og-configs", Permission: perm.OGConfigsRead, Group: ratelimit.OGConfigRead, Serve: h.List},
		{Method: http.MethodGet, Pattern: "/v1/og-configs/{id}", Permission: perm.OGConfigsRead, Group: ratelimit.OGConfigRead, Serve: h.Get},
		{Method: http.MethodPost, Pattern: "/v1/og-configs/{id}", Permission: perm.OGConfigsCreateUpdate, Group: ratelimit.OGConfigWrite, Serve: h.Update},
		{Method: http.MethodDelete, Pattern: "/v1/og-configs/{id}", Permission: perm.OGConfigsDelete, Group: ratelimit.OGConfigWrite, Serve: h.Delete},
	}
}

func (s *site) do(t *testing.T, r apitest.Request) *apitest.Response {
	t.Helper()
	if !s.burst {
		s.limits.Advance(ratelimit.Window)
	}
	return apitest.Do(t, s.base, r)
}

func (s *site) changes() []*ogconfig.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.changed)
}

func (s *site) setFailOn(id string) {
	s.mu.Lock()
	s.failOn = id
	s.mu.Unlock()
}

// view is a configuration as the API shows it.
type view struct {
	ID                      string                     `json:"id"`
	DomainID                string                     `json:"domain_id"`
	ConfigType              string                     `json:"config_type"`
	Name                    string                     `json:"name"`
	Description             string                     `json:"description"`
	BaseURL                 string                     `json:"base_url"`
	Enabled                 bool                       `json:"enabled"`
	RefreshIntervalS        int64                      `json:"refresh_interval_s"`
	OptimizationMode        string                     `json:"optimization_mode"`
	ExtractValues           bool                       `json:"extract_values"`
	DefaultOptions          map[string]json.RawMessage `json:"default_options"`
	TemplateID              *string                    `json:"template_id"`
	TemplateVersion         *int                       `json:"template_version"`
	TemplateValuesMapping   []map[string]string        `json:"template_values_mapping"`
	Headers                 map[string]string          `json:"headers"`
	AdditionalHeaderOrigins []string                   `json:"additional_header_origins"`
	MaxNewImagesPerDay      *int64                     `json:"max_new_images_per_day"`
	MaxNewImagesPerPeriod   *int64                     `json:"max_new_images_per_period"`
	Limits                  limitsView                 `json:"limits"`
	CreatedAt               string                     `json:"created_at"`
	UpdatedAt               string                     `json:"updated_at"`
}

type limitsView struct {
	NewImagesPerDay    int64 `json:"new_images_per_day"`
	NewImagesPerPeriod int64 `json:"new_images_per_period"`
	UsedToday          int64 `json:"used_today"`
	UsedThisPeriod     int64 `json:"used_this_period"`
	OrgCredits         int64 `json:"organization_og_credits_per_period"`
	OrgCreditsUsed     int64 `json:"organization_og_credits_used_this_period"`
}

// proDefaults are the limits of a pro configuration without caps of its
// own, before any image.
var proDefaults = limitsView{NewImagesPerDay: 200, NewImagesPerPeriod: 2000, OrgCredits: 5000}

type page struct {
	Data       []view `json:"data"`
	Pagination struct {
		NextPageStart *string `json:"next_page_start"`
	} `json:"pagination"`
}

// save creates a configuration (POST /v1/og-configs) or replaces one
// (POST /v1/og-configs/{id}) and returns it.
func (s *site) save(t *testing.T, creds *apitest.Creds, id string, body map[string]any) view {
	t.Helper()
	path := "/v1/og-configs"
	if id != "" {
		path += "/" + id
	}
	r := s.do(t, apitest.Request{Method: "POST", Path: path, Creds: creds, JSON: body})
	apitest.WantStatus(t, r, http.StatusOK)
	var v view
	r.Decode(t, &v)
	return v
}

func (s *site) get(t *testing.T, creds *apitest.Creds, id string) view {
	t.Helper()
	r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs/" + id, Creds: creds})
	apitest.WantStatus(t, r, http.StatusOK)
	var v view
	r.Decode(t, &v)
	return v
}

func htmlCSS(base string, extra ...any) map[string]any {
	m := map[string]any{"config_type": "html_css", "base_url": base}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

var uuidShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestCreateDefaults: a minimal configuration answers every field with
// its default, and reads back the same; the answer is not cacheable and
// counts against og-config:write.
func TestCreateDefaults(t *testing.T) {
	s := start(t)
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: pro, JSON: htmlCSS("HTTPS://Blog.Example.com:443/")})
	apitest.WantStatus(t, r, http.StatusOK)
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control %q", cc)
	}
	if p := r.Header.Get("RateLimit-Policy"); p != `"og-config:write";q=20;w=60` {
		t.Fatalf("RateLimit-Policy %q", p)
	}
	var raw map[string]any
	r.Decode(t, &raw)
	want := map[string]any{
		"config_type": "html_css", "name": "", "description": "", "base_url": "https://blog.example.com", "enabled": true,
		"refresh_interval_s": 86400.0, "optimization_mode": "post_process", "extract_values": true, "default_options": map[string]any{},
		"template_id": nil, "template_version": nil, "template_values_mapping": []any{}, "headers": map[string]any{},
		"additional_header_origins": []any{}, "created_at": "2026-03-01T12:00:00.000Z", "updated_at": "2026-03-01T12:00:00.000Z",
		"max_new_images_per_day": nil, "max_new_images_per_period": nil,
		"limits": map[string]any{"new_images_per_day": 200.0, "new_images_per_period": 2000.0, "used_today": 0.0, "used_this_period": 0.0,
			"organization_og_credits_per_period": 5000.0, "organization_og_credits_used_this_period": 0.0},
	}
	for k, v := range want {
		if got, ok := raw[k]; !ok || !reflect.DeepEqual(got, v) {
			t.Errorf("%s = %#v, want %#v", k, got, v)
		}
	}
	if len(raw) != len(want)+2 {
		t.Errorf("answer has %d fields: %s", len(raw), r.Body)
	}
	id, _ := raw["id"].(string)
	domainID, _ := raw["domain_id"].(string)
	if !uuidShape.MatchString(id) || !regexp.MustCompile(`^[a-z2-7]{26}$`).MatchString(domainID) {
		t.Fatalf("id %q, domain_id %q", id, domainID)
	}
	if got := s.get(t, pro, id); got.ID != id || got.DomainID != domainID || got.BaseURL != "https://blog.example.com" {
		t.Fatalf("read back %+v", got)
	}
	if p := s.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs/" + id, Creds: pro}).Header.Get("RateLimit-Policy"); p != `"og-config:read";q=100;w=60` {
		t.Fatalf("read RateLimit-Policy %q", p)
	}
	if got := s.changes(); len(got) != 0 {
		t.Fatalf("a creation announced a change: %+v", got)
	}
}

// TestCreateEveryField: every field is stored and answered as normalized.
func TestCreateEveryField(t *testing.T) {
	s := start(t)
	v := s.save(t, pro, "", map[string]any{
		"config_type": "templated", "name": "Blog cards", "description": "Cards of the blog", "base_url": "https://example.com",
		"disabled": true, "refresh_interval_s": 3600, "optimization_mode": "set_viewport", "extract_values": false,
		"default_options":           map[string]any{"viewport_width": "1200", "viewport_height": 630, "color_scheme": "dark", "unknown_option": 1},
		"template_id":               "t-card",
		"template_version":          2,
		"template_values_mapping":   []any{map[string]any{"template_key": "title", "meta_key": "og:title"}, map[string]any{"template_key": "desc", "fallback": "descriptions"}},
		"headers":                   map[string]any{"x-preview-token": "abc"},
		"additional_header_origins": []any{"https://CDN.example.com/"},
		"max_new_images_per_day":    12,
		"max_new_images_per_period": 300,
	})
	if v.MaxNewImagesPerDay == nil || *v.MaxNewImagesPerDay != 12 || v.MaxNewImagesPerPeriod == nil || *v.MaxNewImagesPerPeriod != 300 ||
		v.Limits != (limitsView{NewImagesPerDay: 12, NewImagesPerPeriod: 300, OrgCredits: 5000}) {
		t.Fatalf("caps %v %v, limits %+v", v.MaxNewImagesPerDay, v.MaxNewImagesPerPeriod, v.Limits)
	}
	if v.ConfigType != "templated" || v.Name != "Blog cards" || v.Description != "Cards of the blog" || v.Enabled || v.RefreshIntervalS != 3600 ||
		v.OptimizationMode != "set_viewport" || v.ExtractValues || v.TemplateID == nil || *v.TemplateID != "t-card" ||
		v.TemplateVersion == nil || *v.TemplateVersion != 2 {
		t.Fatalf("saved %+v", v)
	}
	if b, _ := json.Marshal(v.DefaultOptions); string(b) != `{"color_scheme":"dark","viewport_height":630,"viewport_width":1200}` {
		t.Fatalf("default_options %s", b)
	}
	if !reflect.DeepEqual(v.TemplateValuesMapping, []map[string]string{{"template_key": "title", "meta_key": "og:title"}, {"template_key": "desc", "fallback": "descriptions"}}) {
		t.Fatalf("mapping %+v", v.TemplateValuesMapping)
	}
	if !reflect.DeepEqual(v.Headers, map[string]string{"X-Preview-Token": "abc"}) || !slices.Equal(v.AdditionalHeaderOrigins, []string{"https://cdn.example.com"}) {
		t.Fatalf("headers %v, origins %v", v.Headers, v.AdditionalHeaderOrigins)
	}
	// What the OG serving path reads.
	c, err := s.h.Store.ByDomainID(t.Context(), v.DomainID)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != v.ID || c.OrgID != orgID(pro) || !c.Disabled || c.RefreshInterval != time.Hour || c.TemplateVersion != 2 || c.Revision != 1 ||
		string(c.DefaultOptions["viewport_width"]) != "1200" || c.Headers["X-Preview-Token"] != "abc" {
		t.Fatalf("ByDomainID: %+v", c)
	}
	// The answer is a valid request: sent back, it changes nothing but
	// updated_at (enabled is not a request field: disabled is sent).
	var m map[string]any
	b, _ := json.Marshal(v)
	json.Unmarshal(b, &m)
	m["disabled"] = !v.Enabled
	s.clock.Advance(time.Second)
	again := s.save(t, pro, v.ID, m)
	v.UpdatedAt = "2026-03-01T12:00:01.000Z"
	if !reflect.DeepEqual(again, v) {
		t.Fatalf("round trip\n got %+v\nwant %+v", again, v)
	}
}

// TestValidation: over HTTP, invalid requests are 400s naming each field;
// bodies that are not requests are refused as elsewhere.
func TestValidation(t *testing.T) {
	s := start(t)
	tests := []struct {
		name   string
		creds  *apitest.Creds
		body   map[string]any
		fields []string
	}{
		{"empty", pro, map[string]any{}, []string{"config_type", "base_url"}},
		{"several at once", pro, map[string]any{"config_type": "templated", "base_url": "https://example.com/blog", "name": strings.Repeat("n", 256),
			"description": strings.Repeat("d", 1024), "refresh_interval_s": 59, "optimization_mode": "fast", "disabled": "no",
			"default_options":         map[string]any{"viewport_width": 0, "viewport_height": 630, "url": "https://example.com"},
			"template_values_mapping": []any{map[string]any{"template_key": "a"}}, "headers": map[string]any{"Host": "x"},
			"additional_header_origins": []any{"https://a.example/x"}},
			[]string{"base_url", "name", "description", "refresh_interval_s", "optimization_mode", "disabled", "default_options.viewport_width",
				"default_options.url", "template_id", "template_values_mapping[0]", "headers.Host", "additional_header_origins[0]"}},
		{"private base_url", pro, htmlCSS("http://10.0.0.1"), []string{"base_url"}},
		{"plan cap on max_wait_ms", free, htmlCSS("https://example.com", "default_options", map[string]any{"max_wait_ms": 6000}), []string{"default_options.max_wait_ms"}},
		{"html_css with a template", pro, htmlCSS("https://example.com", "template_id", "t-card"), []string{"template_id"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: tc.creds, JSON: tc.body})
			for _, f := range tc.fields {
				apitest.WantField(t, r, f)
			}
			var body struct {
				ValidationErrors []struct{ Path string } `json:"validation_errors"`
			}
			r.Decode(t, &body)
			if len(body.ValidationErrors) != len(tc.fields) {
				t.Fatalf("validation errors %+v, want exactly %v", body.ValidationErrors, tc.fields)
			}
		})
	}
	// The plan's cap is the caller's: pro may wait 10 s.
	s.save(t, pro, "", htmlCSS("https://example.com", "default_options", map[string]any{"max_wait_ms": 10000}))

	for _, tc := range []struct {
		name, raw, ct string
		status        int
	}{
		{"not JSON", "{", "application/json", 400},
		{"not an object", `[{"config_type":"html_css"}]`, "application/json", 400},
		{"unknown content type", "config_type=html_css", "text/plain", 415},
		{"too large", `{"name":"` + strings.Repeat("x", 3<<20) + `"}`, "application/json", 413},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apitest.WantError(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: pro, Raw: tc.raw, ContentType: tc.ct}), tc.status)
		})
	}
	// A malformed id: the kit's check (resource.TestRoutesAdmission), in
	// the configurations' words.
	bad := s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/not-an-id", Creds: pro, JSON: htmlCSS("https://example.org")})
	apitest.WantField(t, bad, "id")
	apitest.WantMessage(t, apitest.WantError(t, bad, http.StatusBadRequest), "is not a valid OG configuration id")
	// Permissions are the router's: a read-only key reads, writes nothing.
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs", Creds: readOnly}), 200)
	apitest.WantError(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: readOnly, JSON: htmlCSS("https://example.net")}), 403)
}

// TestForms: URL-encoded and multipart forms save what the same JSON
// request saves.
func TestForms(t *testing.T) {
	s := start(t)
	asJSON := s.save(t, pro, "", map[string]any{
		"config_type": "templated", "base_url": "https://json.example", "name": "Cards", "disabled": true, "refresh_interval_s": 600,
		"optimization_mode": "no_optimization", "extract_values": false, "template_id": "t-card",
		"default_options":           map[string]any{"device_scale": 1.5, "render_when_ready": true},
		"template_values_mapping":   []any{map[string]any{"template_key": "t", "fallback": "titles"}},
		"headers":                   map[string]any{"X-A": "1", "X-B": "2"},
		"additional_header_origins": []any{"https://a.example", "https://b.example"},
	})
	fields := [][2]string{
		{"config_type", "templated"}, {"name", "Cards"}, {"disabled", "true"}, {"refresh_interval_s", "600"},
		{"optimization_mode", "no_optimization"}, {"extract_values", "false"}, {"template_id", "t-card"},
		{"default_options", `{"device_scale":"1.5","render_when_ready":true}`},
		{"template_values_mapping", `[{"template_key":"t","fallback":"titles"}]`},
		{"headers", "X-A:1"}, {"headers", "X-B: 2"},
		{"additional_header_origins", "https://b.example"}, {"additional_header_origins", "https://a.example/"},
		{"ignored", "x"},
	}
	urlencoded := func(base string) (string, string) {
		v := url.Values{"base_url": {base}}
		for _, f := range fields {
			v.Add(f[0], f[1])
		}
		return v.Encode(), "application/x-www-form-urlencoded"
	}
	multipartForm := func(base string) (string, string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		w.WriteField("base_url", base)
		for _, f := range fields {
			w.WriteField(f[0], f[1])
		}
		w.Close()
		return b.String(), w.FormDataContentType()
	}
	for _, tc := range []struct {
		name   string
		encode func(base string) (string, string)
	}{
		{"urlencoded", urlencoded},
		{"multipart", multipartForm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := "https://" + tc.name + ".example"
			raw, ct := tc.encode(base)
			r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: pro, Raw: raw, ContentType: ct})
			apitest.WantStatus(t, r, 200)
			var got view
			r.Decode(t, &got)
			want := asJSON
			want.ID, want.DomainID, want.BaseURL = got.ID, got.DomainID, base
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("form saved\n%+v\nJSON saved\n%+v", got, want)
			}
			// An update by form, and its errors.
			raw, ct = tc.encode("https://" + tc.name + ".example/path")
			r = s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + got.ID, Creds: pro, Raw: raw, ContentType: ct})
			apitest.WantField(t, r, "base_url")
		})
	}
}

// TestConflict: one enabled configuration per exact origin and
// organization; the 409 names the holder.
func TestConflict(t *testing.T) {
	s := start(t)
	first := s.save(t, pro, "", htmlCSS("https://example.com"))
	conflict := func(t *testing.T, r *apitest.Response) {
		t.Helper()
		m := apitest.WantError(t, r, http.StatusConflict)
		apitest.WantMessage(t, m, "Conflicting OG configuration", first.ID, "https://example.com")
	}
	// The same origin in other spellings.
	for _, base := range []string{"https://example.com", "HTTPS://EXAMPLE.com:443/", " https://example.com/ "} {
		conflict(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: pro, JSON: htmlCSS(base)}))
	}
	// Other origins, disabled twins, other organizations.
	s.save(t, pro, "", htmlCSS("http://example.com"))
	s.save(t, pro, "", htmlCSS("https://example.com:8443"))
	s.save(t, pro, "", htmlCSS("https://www.example.com"))
	twin := s.save(t, pro, "", htmlCSS("https://example.com", "disabled", true))
	s.save(t, pro, "", htmlCSS("https://example.com", "disabled", true))
	s.save(t, other, "", htmlCSS("https://example.com"))

	// Enabling the twin, or moving another enabled one onto the origin.
	conflict(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + twin.ID, Creds: pro, JSON: htmlCSS("https://example.com")}))
	mover := s.save(t, pro, "", htmlCSS("https://mover.example"))
	conflict(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + mover.ID, Creds: pro, JSON: htmlCSS("https://example.com")}))
	if got := s.get(t, pro, twin.ID); got.Enabled || got.UpdatedAt != twin.UpdatedAt {
		t.Fatalf("a refused update changed the twin: %+v", got)
	}
	if n := len(s.changes()); n != 0 {
		t.Fatalf("refused updates announced %d changes", n)
	}
	// An update of the holder itself is no conflict.
	s.save(t, pro, first.ID, htmlCSS("https://example.com", "name", "renamed"))

	// Disabling the holder frees the origin; so does deleting it.
	s.save(t, pro, first.ID, htmlCSS("https://example.com", "disabled", true))
	s.save(t, pro, twin.ID, htmlCSS("https://example.com"))
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/og-configs/" + twin.ID, Creds: pro}), 204)
	s.save(t, pro, mover.ID, htmlCSS("https://example.com"))
}

// TestConcurrentCreates: creations of one origin at once over HTTP:
// exactly one wins, every other one is a 409 naming it.
func TestConcurrentCreates(t *testing.T) {
	s := start(t)
	const n = ratelimit.WriteQuota
	s.limits.Advance(ratelimit.Window)
	responses := make([]*apitest.Response, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			responses[i], errs[i] = apitest.Send(s.base, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: pro,
				JSON: htmlCSS("https://race.example", "name", fmt.Sprint("racer ", i))})
		})
	}
	wg.Wait()
	var winner string
	for i, r := range responses {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if r.Status == 200 {
			if winner != "" {
				t.Fatalf("two winners: %s and %s", winner, r.Body)
			}
			var v view
			r.Decode(t, &v)
			winner = v.ID
		}
	}
	if winner == "" {
		t.Fatal("no winner")
	}
	for _, r := range responses {
		if r.Status != 200 {
			apitest.WantMessage(t, apitest.WantError(t, r, http.StatusConflict), winner)
		}
	}
	var p page
	r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs?count=100", Creds: pro})
	r.Decode(t, &p)
	if len(p.Data) != 1 || p.Data[0].ID != winner {
		t.Fatalf("listed %+v, want only %s", p.Data, winner)
	}
}

// TestTemplated: the template (and version) must be the organization's.
func TestTemplated(t *testing.T) {
	s := start(t)
	templated := func(base string, extra ...any) map[string]any {
		m := htmlCSS(base, extra...)
		m["config_type"] = "templated"
		return m
	}
	latest := s.save(t, pro, "", templated("https://a.example", "template_id", "t-card"))
	if latest.TemplateID == nil || *latest.TemplateID != "t-card" || latest.TemplateVersion != nil {
		t.Fatalf("saved %+v", latest)
	}
	if v := s.save(t, pro, "", templated("https://b.example", "template_id", "t-card", "template_version", 3)); *v.TemplateVersion != 3 {
		t.Fatalf("saved %+v", v)
	}
	for _, tc := range []struct {
		name    string
		creds   *apitest.Creds
		body    map[string]any
		message string
	}{
		{"unknown template", pro, templated("https://c.example", "template_id", "t-nope"), "Template t-nope not found"},
		{"another organization's template", pro, templated("https://c.example", "template_id", "t-theirs"), "Template t-theirs not found"},
		{"another organization's template, by it", other, templated("https://c.example", "template_id", "t-card"), "Template t-card not found"},
		{"unknown version", pro, templated("https://c.example", "template_id", "t-card", "template_version", 4), "Template t-card has no version 4"},
		{"unknown template and version", pro, templated("https://c.example", "template_id", "t-nope", "template_version", 1), "Template t-nope not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: tc.creds, JSON: tc.body})
			apitest.WantMessage(t, apitest.WantError(t, r, http.StatusNotFound), tc.message)
		})
	}
	// An update to a foreign template is refused the same way and changes nothing.
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + latest.ID, Creds: pro, JSON: templated("https://a.example", "template_id", "t-theirs")})
	apitest.WantError(t, r, http.StatusNotFound)
	if got := s.get(t, pro, latest.ID); *got.TemplateID != "t-card" {
		t.Fatalf("after a refused update: %+v", got)
	}
	// Without a template checker, templated configurations are refused.
	s.h.Templates = nil
	apitest.WantError(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: pro, JSON: templated("https://d.example", "template_id", "t-card")}), 404)
	s.save(t, pro, "", htmlCSS("https://d.example"))
}

// TestUpdate: an update replaces everything (omitted fields take their
// defaults), keeps id, domain_id and created_at, grows the revision, and
// is announced; an announcement that fails answers 500 after saving.
func TestUpdate(t *testing.T) {
	s := start(t)
	v := s.save(t, pro, "", htmlCSS("https://example.com", "name", "Blog", "description", "d", "refresh_interval_s", 600,
		"optimization_mode", "set_viewport", "extract_values", false, "default_options", map[string]any{"css": "h1{}"},
		"headers", map[string]any{"X-A": "1"}, "additional_header_origins", []any{"https://cdn.example"},
		"max_new_images_per_day", 5, "max_new_images_per_period", 6))
	if v.Limits.NewImagesPerDay != 5 || v.Limits.NewImagesPerPeriod != 6 {
		t.Fatalf("limits %+v", v.Limits)
	}
	s.clock.Advance(time.Minute)
	u := s.save(t, pro, v.ID, htmlCSS("https://example.com"))
	want := view{ID: v.ID, DomainID: v.DomainID, ConfigType: "html_css", BaseURL: "https://example.com", Enabled: true, RefreshIntervalS: 86400,
		OptimizationMode: "post_process", ExtractValues: true, DefaultOptions: map[string]json.RawMessage{},
		TemplateValuesMapping: []map[string]string{}, Headers: map[string]string{}, AdditionalHeaderOrigins: []string{}, Limits: proDefaults,
		CreatedAt: "2026-03-01T12:00:00.000Z", UpdatedAt: "2026-03-01T12:01:00.000Z"}
	if !reflect.DeepEqual(u, want) {
		t.Fatalf("after a full replacement\n got %+v\nwant %+v", u, want)
	}
	if got := s.get(t, pro, v.ID); !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v", got)
	}
	moved := s.save(t, pro, v.ID, htmlCSS("https://moved.example", "disabled", true))
	if moved.DomainID != v.DomainID || moved.BaseURL != "https://moved.example" || moved.Enabled {
		t.Fatalf("moved %+v", moved)
	}
	changes := s.changes()
	if len(changes) != 2 || changes[0].ID != v.ID || changes[0].Revision != 2 || changes[1].Revision != 3 ||
		changes[1].BaseURL != "https://moved.example" || changes[1].DomainID != v.DomainID {
		t.Fatalf("OnChange calls %+v", changes)
	}

	// A failed announcement: saved, answered 500; the retry announces again.
	s.setFailOn(v.ID)
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + v.ID, Creds: pro, JSON: htmlCSS("https://example.com", "name", "after")})
	apitest.WantError(t, r, http.StatusInternalServerError)
	s.setFailOn("")
	if got := s.get(t, pro, v.ID); got.Name != "after" {
		t.Fatalf("the update whose announcement failed was not saved: %+v", got)
	}
	s.save(t, pro, v.ID, htmlCSS("https://example.com", "name", "after"))
	if n := len(s.changes()); n != 4 {
		t.Fatalf("%d OnChange calls, want 4", n)
	}
}

// TestDelete: 204, then "OG configuration not found", the domain id gone,
// announced (another organization's attempt is not). That every route
// then answers 404 is the kit's (resource.TestRoutes).
func TestDelete(t *testing.T) {
	s := start(t)
	v := s.save(t, pro, "", htmlCSS("https://example.com"))
	keep := s.save(t, pro, "", htmlCSS("https://keep.example"))

	apitest.WantError(t, s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/og-configs/" + v.ID, Creds: other}), 404)
	r := s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/og-configs/" + v.ID, Creds: pro})
	apitest.WantStatus(t, r, http.StatusNoContent)
	if len(r.Body) != 0 {
		t.Fatalf("204 with a body: %q", r.Body)
	}
	if c := s.changes(); len(c) != 1 || c[0].ID != v.ID || c[0].DomainID != v.DomainID {
		t.Fatalf("OnChange calls %+v", c)
	}
	apitest.WantMessage(t, apitest.WantError(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs/" + v.ID, Creds: pro}), 404), "OG configuration not found")
	if _, err := s.h.Store.ByDomainID(t.Context(), v.DomainID); !errors.Is(err, ogconfig.ErrNotFound) {
		t.Fatalf("ByDomainID after the deletion: %v", err)
	}
	if got := s.get(t, pro, keep.ID); got.ID != keep.ID {
		t.Fatalf("the other configuration: %+v", got)
	}

	// A failed announcement: deleted, answered 500.
	s.setFailOn(keep.ID)
	apitest.WantError(t, s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/og-configs/" + keep.ID, Creds: pro}), 500)
	apitest.WantError(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs/" + keep.ID, Creds: pro}), 404)
}

// TestIsolation: another organization's configuration is a 404 exactly
// like an unknown one to a read and to an update (the handler's own), and
// never listed or changed. A deletion's answer is the kit's
// (resource.TestRoutes; TestDelete checks nothing is announced).
func TestIsolation(t *testing.T) {
	s := start(t)
	mine := s.save(t, pro, "", htmlCSS("https://example.com"))
	theirs := s.save(t, other, "", htmlCSS("https://example.com"))
	unknown := "0190a0b0-c0d0-7e0f-8a0b-0c0d0e0f0a0b"
	for _, m := range []string{"GET", "POST"} {
		t.Run(m, func(t *testing.T) {
			foreign := s.do(t, apitest.Request{Method: m, Path: "/v1/og-configs/" + theirs.ID, Creds: pro, JSON: htmlCSS("https://x.example")})
			missing := s.do(t, apitest.Request{Method: m, Path: "/v1/og-configs/" + unknown, Creds: pro, JSON: htmlCSS("https://x.example")})
			apitest.WantError(t, foreign, 404)
			if !bytes.Equal(foreign.Body, missing.Body) {
				t.Fatalf("foreign %s, unknown %s", foreign.Body, missing.Body)
			}
		})
	}
	if got := s.get(t, other, theirs.ID); got.BaseURL != "https://example.com" || !got.Enabled {
		t.Fatalf("their configuration after my attempts: %+v", got)
	}
	var p page
	s.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs", Creds: pro}).Decode(t, &p)
	if len(p.Data) != 1 || p.Data[0].ID != mine.ID {
		t.Fatalf("my list %+v", p.Data)
	}
}

// TestList: newest first, disabled included, paged with the
// configurations' cursors (the handler's own page), which only this
// organization's next page accepts. The paging mechanics (count bounds,
// forged cursors, exact and empty pages) are the kit's
// (resource.TestServeList, resource.TestRoutesList, cursor.TestNewPage).
func TestList(t *testing.T) {
	s := start(t)
	var ids []string
	for i := range 5 {
		v := s.save(t, pro, "", htmlCSS(fmt.Sprintf("https://%d.example", i), "disabled", i%2 == 1))
		ids = append(ids, v.ID)
	}
	s.save(t, other, "", htmlCSS("https://theirs.example"))
	slices.Reverse(ids) // newest first

	list := func(creds *apitest.Creds, query string) page {
		t.Helper()
		r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs" + query, Creds: creds})
		apitest.WantStatus(t, r, 200)
		var p page
		r.Decode(t, &p)
		return p
	}
	idsOf := func(p page) []string {
		var out []string
		for _, v := range p.Data {
			out = append(out, v.ID)
		}
		return out
	}
	if all := list(pro, ""); !slices.Equal(idsOf(all), ids) || all.Pagination.NextPageStart != nil {
		t.Fatalf("default page %q, want %q (next %v)", idsOf(all), ids, all.Pagination.NextPageStart)
	}
	var walked []string
	var cursors []string
	query := "?count=2"
	for range 10 {
		p := list(pro, query)
		walked = append(walked, idsOf(p)...)
		if p.Pagination.NextPageStart == nil {
			break
		}
		cursors = append(cursors, *p.Pagination.NextPageStart)
		query = "?count=2&page_start=" + url.QueryEscape(*p.Pagination.NextPageStart)
	}
	if !slices.Equal(walked, ids) || len(cursors) != 2 {
		t.Fatalf("pages of 2 walked %q with %d cursors, want %q", walked, len(cursors), ids)
	}
	apitest.WantField(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs?page_start=" + url.QueryEscape(cursors[0]), Creds: other}), "page_start")
}

// TestRateLimit: writes share og-config:write (20 a minute), reads
// og-config:read.
func TestRateLimit(t *testing.T) {
	s := start(t)
	s.limits.Advance(ratelimit.Window)
	s.burst = true
	for i := range ratelimit.WriteQuota {
		s.save(t, pro, "", htmlCSS(fmt.Sprintf("https://%d.example", i)))
	}
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: pro, JSON: htmlCSS("https://late.example")})
	apitest.WantMessage(t, apitest.WantError(t, r, http.StatusTooManyRequests), "og-config:write")
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs", Creds: pro}), 200)
	s.save(t, other, "", htmlCSS("https://late.example"))
}

// TestTemplateStoreAdapter: origin/template's Store, adapted as the
// origin wires it, answers Exists as Templates requires.
func TestTemplateStoreAdapter(t *testing.T) {
	db, err := pebblekv.Open(filepath.Join(t.TempDir(), "db"), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tpls := template.NewStore(db, nil)
	// As in origin/routes.go.
	var adapter ogconfig.Templates = ogconfig.TemplatesFunc(func(orgID, id string, version int) error {
		_, _, err := tpls.Version(t.Context(), orgID, id, version)
		if errors.Is(err, template.ErrNotFound) {
			return fmt.Errorf("%w: %w", ogconfig.ErrTemplateNotFound, err)
		}
		return err
	})
	tpl, _, err := tpls.Create(context.Background(), "org-a", 10, template.Version{HTML: "<p>{{title}}</p>", Defaults: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		orgID   string
		id      string
		version int
		found   bool
	}{
		{"latest", "org-a", tpl.ID, 0, true},
		{"version 1", "org-a", tpl.ID, 1, true},
		{"version 2", "org-a", tpl.ID, 2, false},
		{"another organization", "org-b", tpl.ID, 0, false},
		{"unknown", "org-a", "t-nope", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := adapter.Exists(tc.orgID, tc.id, tc.version)
			if tc.found != (err == nil) || (err != nil && !errors.Is(err, ogconfig.ErrTemplateNotFound)) {
				t.Fatalf("Exists = %v, want found %v", err, tc.found)
			}
		})
	}
}

// TestImageCaps: the caps on new images are bounded by the plan's credits
// (400 naming the field), read from forms as from JSON, answered as set
// (null for the default) beside the limits in force and what was counted
// against them, in every answer (list included).
func TestImageCaps(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	fields := func(r *apitest.Response) []string {
		t.Helper()
		apitest.WantError(t, r, http.StatusBadRequest)
		var body struct {
			ValidationErrors []struct{ Path, Message string } `json:"validation_errors"`
		}
		r.Decode(t, &body)
		var out []string
		for _, f := range body.ValidationErrors {
			out = append(out, f.Path)
			if f.Path == "max_new_images_per_day" && !strings.Contains(f.Message, "50") {
				t.Errorf("%s: %q does not name the plan's 50 credits", f.Path, f.Message)
			}
		}
		return out
	}
	// The free plan has 50 credits a period.
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: free,
		JSON: htmlCSS("https://example.com", "max_new_images_per_day", 51, "max_new_images_per_period", "10")})
	if got := fields(r); !slices.Equal(got, []string{"max_new_images_per_day", "max_new_images_per_period"}) {
		t.Fatalf("fields %v", got)
	}
	form := url.Values{"config_type": {"html_css"}, "base_url": {"https://example.com"}, "max_new_images_per_day": {"51"}}
	r = s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: free, Raw: form.Encode(), ContentType: "application/x-www-form-urlencoded"})
	if got := fields(r); !slices.Equal(got, []string{"max_new_images_per_day"}) {
		t.Fatalf("form fields %v", got)
	}

	form.Set("max_new_images_per_day", "50")
	form.Set("max_new_images_per_period", "")
	r = s.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: free, Raw: form.Encode(), ContentType: "application/x-www-form-urlencoded"})
	apitest.WantStatus(t, r, http.StatusOK)
	var v view
	r.Decode(t, &v)
	if v.MaxNewImagesPerDay == nil || *v.MaxNewImagesPerDay != 50 || v.MaxNewImagesPerPeriod != nil ||
		v.Limits != (limitsView{NewImagesPerDay: 50, NewImagesPerPeriod: 10, OrgCredits: 25}) {
		t.Fatalf("free configuration: day %v period %v limits %+v", v.MaxNewImagesPerDay, v.MaxNewImagesPerPeriod, v.Limits)
	}

	// Counted images show in the answers.
	c, err := s.h.Store.Get(ctx, orgID(free), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	o := &org.Org{ID: orgID(free), Plan: "free"}
	for range 3 {
		if _, err := s.h.Store.Reserve(ctx, c, o, 1); err != nil {
			t.Fatal(err)
		}
	}
	want := limitsView{NewImagesPerDay: 50, NewImagesPerPeriod: 10, UsedToday: 3, UsedThisPeriod: 3, OrgCredits: 25, OrgCreditsUsed: 3}
	if got := s.get(t, free, v.ID).Limits; got != want {
		t.Fatalf("limits %+v, want %+v", got, want)
	}
	r = s.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs", Creds: free})
	apitest.WantStatus(t, r, http.StatusOK)
	var list page
	r.Decode(t, &list)
	if len(list.Data) != 1 || list.Data[0].Limits != want {
		t.Fatalf("list %+v", list.Data)
	}
	// An update is a full replacement: without the fields, the defaults;
	// the counts stay the configuration's.
	u := s.save(t, free, v.ID, htmlCSS("https://example.com", "max_new_images_per_period", 0))
	want.NewImagesPerDay, want.NewImagesPerPeriod = 10, 0
	if u.MaxNewImagesPerDay != nil || u.MaxNewImagesPerPeriod == nil || *u.MaxNewImagesPerPeriod != 0 || u.Limits != want {
		t.Fatalf("after the update: day %v period %v limits %+v", u.MaxNewImagesPerDay, u.MaxNewImagesPerPeriod, u.Limits)
	}
	c, _ = s.h.Store.Get(ctx, orgID(free), v.ID)
	if _, err := s.h.Store.Reserve(ctx, c, o, 1); !errors.Is(err, ogconfig.ErrCapped) {
		t.Fatalf("a reservation under a period cap of 0: %v", err)
	}
}
