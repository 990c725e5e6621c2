package template_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/ratelimit"
	"github.com/pictorhq/pictor/origin/template"
)

// orgs authenticates one owner key per organization: the api_id names
// the organization, whose plan is its suffix ("acme-pro" is on pro).
type orgs struct{}

func (orgs) Authenticate(_ context.Context, apiID, secret string) (*auth.Principal, error) {
	i := strings.LastIndexByte(apiID, '-')
	if secret != "s3cret" || i < 0 {
		return nil, auth.ErrInvalid
	}
	o := &org.Org{ID: "org-" + apiID, Name: apiID, Plan: apiID[i+1:]}
	return &auth.Principal{Org: o, KeyID: "key-" + apiID, APIID: apiID, Grant: perm.Grant{AllFuture: true}}, nil
}

var (
	pro   = &apitest.Creds{APIID: "acme-pro", APIKey: "s3cret"}
	other = &apitest.Creds{APIID: "rival-pro", APIKey: "s3cret"}
	free  = &apitest.Creds{APIID: "tiny-free", APIKey: "s3cret"}
)

// site serves the template routes as the origin does.
type site struct {
	base    string
	h       *template.Handler
	clock   *apitest.Clock
	mu      sync.Mutex
	changed []string // OnChange calls
	failOn  string   // OnChange fails for this id
}

func start(t *testing.T) *site {
	t.Helper()
	s := &site{clock: apitest.NewClock(epoch)}
	s.h = &template.Handler{Store: template.NewStore(openKV(t), s.clock.Now), Engine: engine,
		Cursors: cursor.New([]byte("0123456789abcdef0123456789abcdef")),
		OnChange: func(_ context.Context, id string) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.changed = append(s.changed, id)
			if id == s.failOn {
				return errors.New("edges unreachable")
			}
			return nil
		}}
	srv := httptest.NewServer(api.New(api.Config{Authenticator: orgs{}, Limiter: ratelimit.NewMemory(nil)}, []api.Route{
		{Method: http.MethodPost, Pattern: "/v1/template", Permission: perm.TemplatesCreateUpdate, Serve: s.h.Create},
		{Method: http.MethodGet, Pattern: "/v1/template", Permission: perm.TemplatesRead, Serve: s.h.List},
		{Method: http.MethodGet, Pattern: "/v1/template/{id}", Permission: perm.TemplatesRead, Serve: s.h.Versions},
		{Method: http.MethodPost, Pattern: "/v1/template/{id}", Permission: perm.TemplatesCreateUpdate, Serve: s.h.Update},
		{Method: http.MethodDelete, Pattern: "/v1/template/{id}", Permission: perm.TemplatesDelete, Serve: s.h.Delete},
	}))
	t.Cleanup(srv.Close)
	s.base = srv.URL
	return s
}

func (s *site) do(t *testing.T, r apitest.Request) *apitest.Response {
	t.Helper()
	return apitest.Do(t, s.base, r)
}

func (s *site) changes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.changed)
}

type saved struct {
	TemplateID      string `json:"template_id"`
	TemplateVersion int    `json:"template_version"`
}

// save creates a template and returns its id.
func (s *site) save(t *testing.T, creds *apitest.Creds, body map[string]any) string {
	t.Helper()
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: creds, JSON: body})
	apitest.WantStatus(t, r, http.StatusCreated)
	var out saved
	r.Decode(t, &out)
	if !strings.HasPrefix(out.TemplateID, "t-") || out.TemplateVersion != 1 {
		t.Fatalf("saved %s", r.Body)
	}
	return out.TemplateID
}

// view is a version as the API shows it.
type view struct {
	ID              string   `json:"id"`
	Version         int      `json:"version"`
	Name            string   `json:"name"`
	Description     string   `json:"description"`
	HTML            string   `json:"html"`
	CSS             string   `json:"css"`
	DeviceScale     *float64 `json:"device_scale"`
	ViewportWidth   *int64   `json:"viewport_width"`
	ColorScheme     *string  `json:"color_scheme"`
	RenderWhenReady bool     `json:"render_when_ready"`
	RenderCount     int64    `json:"render_count"`
	CreatedAt       string   `json:"created_at"`
	UpdatedAt       string   `json:"updated_at"`
}

type page struct {
	Data       []view `json:"data"`
	Pagination struct {
		NextPageStart *string `json:"next_page_start"`
	} `json:"pagination"`
}

func (s *site) versions(t *testing.T, creds *apitest.Creds, id string) []view {
	t.Helper()
	r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/template/" + id, Creds: creds})
	apitest.WantStatus(t, r, 200)
	var p page
	r.Decode(t, &p)
	return p.Data
}

// TestSaveValidation: a save names every invalid field, checks the
// Handlebars of html and css in the sandbox, and validates the render
// defaults as creation parameters.
func TestSaveValidation(t *testing.T) {
	s := start(t)
	tests := []struct {
		name     string
		body     map[string]any
		fields   []string // invalid fields, all named; none: saved
		fragment string   // in the message
	}{
		{name: "html only", body: map[string]any{"html": "<p>{{title}}</p>"}},
		{name: "html required", body: map[string]any{"css": "p{}"}, fields: []string{"html"}, fragment: "html is required"},
		{name: "html not a string", body: map[string]any{"html": 42}, fields: []string{"html"}},
		{name: "html null", body: map[string]any{"html": nil}, fields: []string{"html"}},
		{name: "name of 64 characters", body: map[string]any{"html": "x", "name": strings.Repeat("é", template.MaxName)}},
		{name: "name of 65 characters", body: map[string]any{"html": "x", "name": strings.Repeat("é", template.MaxName+1)}, fields: []string{"name"}, fragment: "at most 64 characters"},
		{name: "description at the limit", body: map[string]any{"html": "x", "description": strings.Repeat("d", template.MaxDescription)}},
		{name: "description too long", body: map[string]any{"html": "x", "description": strings.Repeat("d", template.MaxDescription+1)}, fields: []string{"description"}},
		{name: "name not a string", body: map[string]any{"html": "x", "name": []string{"a"}}, fields: []string{"name"}},
		{name: "several at once", body: map[string]any{"name": strings.Repeat("n", 65), "description": strings.Repeat("d", 1025), "device_scale": 9},
			fields: []string{"html", "name", "description", "device_scale"}, fragment: "(and 3 more)"},
		{name: "html syntax error", body: map[string]any{"html": "<p>\n  {{#if x}}open"}, fields: []string{"html"}, fragment: "line "},
		{name: "css syntax error", body: map[string]any{"html": "x", "css": "p{color:{{/each}}}"}, fields: []string{"css"}, fragment: "css line 1, column"},
		{name: "html too large for the sandbox", body: map[string]any{"html": strings.Repeat("x", 600<<10)}, fields: []string{"html"}},
		{name: "css too large for the sandbox", body: map[string]any{"html": "x", "css": strings.Repeat("x", 600<<10)}, fields: []string{"css"}},
		{name: "valid defaults", body: map[string]any{"html": "x", "device_scale": 2, "viewport_width": 800, "viewport_height": 600, "color_scheme": "dark"}},
		{name: "invalid default", body: map[string]any{"html": "x", "device_scale": 9}, fields: []string{"device_scale"}},
		{name: "default of the wrong type", body: map[string]any{"html": "x", "viewport_width": "wide", "viewport_height": 600}, fields: []string{"viewport_width"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: pro, JSON: tc.body})
			if len(tc.fields) == 0 {
				apitest.WantStatus(t, r, http.StatusCreated)
				return
			}
			for _, f := range tc.fields {
				apitest.WantField(t, r, f)
			}
			var body struct {
				Message          string                  `json:"message"`
				ValidationErrors []struct{ Path string } `json:"validation_errors"`
			}
			r.Decode(t, &body)
			if len(body.ValidationErrors) != len(tc.fields) {
				t.Fatalf("validation errors %+v, want exactly %v", body.ValidationErrors, tc.fields)
			}
			if !strings.Contains(body.Message, tc.fragment) {
				t.Fatalf("message %q does not mention %q", body.Message, tc.fragment)
			}
		})
	}
	// A syntax error names its line and column.
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: pro, JSON: map[string]any{"html": "<p>\n  {{#if x}}open"}})
	if m := apitest.WantError(t, r, 400); !regexp.MustCompile(`line \d+, column \d+`).MatchString(m["message"].(string)) {
		t.Fatalf("syntax error message %q", m["message"])
	}
	// Bodies that are not a request.
	for _, tc := range []struct {
		name, raw, ct string
		status        int
	}{
		{"not JSON", "{", "application/json", 400},
		{"not an object", "[1]", "application/json", 400},
		{"unknown content type", "html=x", "text/plain", 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apitest.WantError(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: pro, Raw: tc.raw, ContentType: tc.ct}), tc.status)
		})
	}
}

// TestSaveAsForm: a form saves the same template as JSON, its defaults
// read as the creation parameters they name.
func TestSaveAsForm(t *testing.T) {
	s := start(t)
	form := url.Values{"html": {"<p>{{t}}</p>"}, "name": {"Card"}, "device_scale": {"2"}, "render_when_ready": {"true"}}
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: pro, Raw: form.Encode(), ContentType: "application/x-www-form-urlencoded"})
	apitest.WantStatus(t, r, http.StatusCreated)
	var out saved
	r.Decode(t, &out)
	v := s.versions(t, pro, out.TemplateID)
	if len(v) != 1 || v[0].HTML != "<p>{{t}}</p>" || v[0].Name != "Card" || v[0].DeviceScale == nil || *v[0].DeviceScale != 2 || !v[0].RenderWhenReady {
		t.Fatalf("form-saved template %+v", v)
	}
	bad := url.Values{"html": {"x"}, "device_scale": {"huge"}}
	apitest.WantField(t, s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: pro, Raw: bad.Encode(), ContentType: "application/x-www-form-urlencoded"}), "device_scale")
}

// TestPlanLimit: the plan's template allowance is a 429 with its own
// title, naming the plan.
func TestPlanLimit(t *testing.T) {
	s := start(t)
	s.save(t, free, map[string]any{"html": "one"})
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: free, JSON: map[string]any{"html": "two"}})
	m := apitest.WantError(t, r, http.StatusTooManyRequests)
	if m["error"] != "Plan limit exceeded" || m["message"] != "The free plan is limited to 1 template" {
		t.Fatalf("plan limit body %s", r.Body)
	}
	// Another organization is not held by it.
	s.save(t, pro, map[string]any{"html": "one"})
}

// TestEditAndVersions: over HTTP, an edit replaces an unrendered latest
// version and adds one after renders; the versions are listed newest
// first with their defaults; every change and deletion is announced
// (OnChange), creations not.
func TestEditAndVersions(t *testing.T) {
	s := start(t)
	id := s.save(t, pro, map[string]any{"html": "<p>{{a}}</p>", "name": "Card", "description": "a card", "device_scale": 1.5, "viewport_width": 640, "viewport_height": 480})
	if got := s.changes(); len(got) != 0 {
		t.Fatalf("a creation announced a change: %q", got)
	}

	edit := func(body map[string]any) int {
		t.Helper()
		r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id, Creds: pro, JSON: body})
		apitest.WantStatus(t, r, 200)
		var out saved
		r.Decode(t, &out)
		if out.TemplateID != id {
			t.Fatalf("edit answered %s", r.Body)
		}
		return out.TemplateVersion
	}
	s.clock.Advance(time.Second)
	if v := edit(map[string]any{"html": "<p>{{a}}!</p>", "name": "Card"}); v != 1 {
		t.Fatalf("an edit of the unrendered version made version %d", v)
	}
	if err := s.h.CountRenders(t.Context(), id, 1, 2); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(time.Second)
	if v := edit(map[string]any{"html": "<p>{{b}}</p>", "color_scheme": "dark"}); v != 2 {
		t.Fatalf("an edit after renders made version %d", v)
	}
	if got := s.changes(); !slices.Equal(got, []string{id, id}) {
		t.Fatalf("OnChange calls %q, want two for %s", got, id)
	}

	got := s.versions(t, pro, id)
	if len(got) != 2 {
		t.Fatalf("versions %+v", got)
	}
	v2, v1 := got[0], got[1]
	if v2.Version != 2 || v2.HTML != "<p>{{b}}</p>" || v2.ColorScheme == nil || *v2.ColorScheme != "dark" || v2.DeviceScale != nil || v2.RenderCount != 0 {
		t.Fatalf("version 2 %+v", v2)
	}
	if v1.Version != 1 || v1.HTML != "<p>{{a}}!</p>" || v1.RenderCount != 2 || v1.Name != "Card" || v1.Description != "" {
		t.Fatalf("version 1 %+v", v1)
	}
	if v1.CreatedAt != "2026-03-01T12:00:00.000Z" || v1.UpdatedAt != "2026-03-01T12:00:01.000Z" || v2.CreatedAt != "2026-03-01T12:00:02.000Z" {
		t.Fatalf("timestamps: v1 %s/%s, v2 %s", v1.CreatedAt, v1.UpdatedAt, v2.CreatedAt)
	}

	// Refused edits change nothing and announce nothing.
	for _, tc := range []struct {
		name   string
		creds  *apitest.Creds
		id     string
		body   map[string]any
		status int
	}{
		{"invalid body", pro, id, map[string]any{"html": "{{#each}}"}, 400},
		{"another organization's template", other, id, map[string]any{"html": "mine now"}, 404},
		{"unknown template", pro, "t-nope", map[string]any{"html": "x"}, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + tc.id, Creds: tc.creds, JSON: tc.body})
			m := apitest.WantError(t, r, tc.status)
			if tc.status == 404 {
				apitest.WantMessage(t, m, "Template "+tc.id+" not found")
			}
		})
	}
	if after := s.versions(t, pro, id); len(after) != 2 || after[0].HTML != "<p>{{b}}</p>" || len(s.changes()) != 2 {
		t.Fatalf("after refused edits: versions %+v, changes %q", after, s.changes())
	}
	apitest.WantError(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/template/" + id, Creds: other}), 404)

	// An edit whose announcement fails is saved but answers 500: the
	// caller retries, and the retry replaces the unrendered version.
	s.mu.Lock()
	s.failOn = id
	s.mu.Unlock()
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id, Creds: pro, JSON: map[string]any{"html": "v3"}})
	apitest.WantError(t, r, 500)
	s.mu.Lock()
	s.failOn = ""
	s.mu.Unlock()
	if v := edit(map[string]any{"html": "v3"}); v != 2 {
		t.Fatalf("the retry made version %d", v)
	}

	// Deletion.
	apitest.WantError(t, s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/template/" + id, Creds: other}), 404)
	r = s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/template/" + id, Creds: pro})
	apitest.WantStatus(t, r, http.StatusNoContent)
	if n := len(s.changes()); n != 5 || s.changes()[4] != id {
		t.Fatalf("OnChange calls after the deletion: %q", s.changes())
	}
	apitest.WantError(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/template/" + id, Creds: pro}), 404)
	apitest.WantError(t, s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/template/" + id, Creds: pro}), 404)
}

// TestList: pages of templates, newest first, with cursors that only
// this organization's next page accepts; count and page_start are
// validated.
func TestList(t *testing.T) {
	s := start(t)
	var ids []string
	for _, html := range []string{"a", "b", "c"} {
		ids = append(ids, s.save(t, pro, map[string]any{"html": html}))
	}
	s.save(t, other, map[string]any{"html": "theirs"})

	list := func(creds *apitest.Creds, query string) page {
		t.Helper()
		r := s.do(t, apitest.Request{Method: "GET", Path: "/v1/template" + query, Creds: creds})
		apitest.WantStatus(t, r, 200)
		var p page
		r.Decode(t, &p)
		return p
	}
	all := list(pro, "")
	if len(all.Data) != 3 || all.Data[0].ID != ids[2] || all.Data[2].ID != ids[0] || all.Pagination.NextPageStart != nil {
		t.Fatalf("default page %+v", all)
	}
	first := list(pro, "?count=2")
	if len(first.Data) != 2 || first.Data[0].HTML != "c" || first.Pagination.NextPageStart == nil {
		t.Fatalf("first page %+v", first)
	}
	cursor := *first.Pagination.NextPageStart
	second := list(pro, "?count=2&page_start="+url.QueryEscape(cursor))
	if len(second.Data) != 1 || second.Data[0].ID != ids[0] || second.Pagination.NextPageStart != nil {
		t.Fatalf("second page %+v", second)
	}
	if last := list(pro, "?count=5&count=1"); len(last.Data) != 1 {
		t.Fatalf("a repeated count: the last one counts; got %d templates", len(last.Data))
	}

	tests := []struct {
		name, query, field string
		creds              *apitest.Creds
	}{
		{"count zero", "?count=0", "count", pro},
		{"count too large", "?count=101", "count", pro},
		{"count not a number", "?count=ten", "count", pro},
		{"forged cursor", "?page_start=" + url.QueryEscape(strings.Repeat("A", 40)), "page_start", pro},
		{"another organization's cursor", "?page_start=" + url.QueryEscape(cursor), "page_start", other},
		{"malformed query", "?count=%zz", "count", pro},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			apitest.WantField(t, s.do(t, apitest.Request{Method: "GET", Path: "/v1/template" + tc.query, Creds: tc.creds}), tc.field)
		})
	}
}

// TestExpand: a request naming a template becomes a plain HTML request:
// html and css evaluated with template_values, the version's defaults
// under the request's own options, the template fields gone.
func TestExpand(t *testing.T) {
	s := start(t)
	id := s.save(t, pro, map[string]any{"html": "<p>{{title}}</p>", "css": "p{color:{{ink}} }", "device_scale": 1, "viewport_width": 300, "viewport_height": 200})
	if err := s.h.CountRenders(t.Context(), id, 1, 1); err != nil {
		t.Fatal(err)
	}
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template/" + id, Creds: pro, JSON: map[string]any{"html": "<h1>{{title}}</h1>"}})
	apitest.WantStatus(t, r, 200)
	orgID := "org-" + pro.APIID

	obj := func(m map[string]any) *field.Object {
		raw := map[string]json.RawMessage{}
		for k, v := range m {
			raw[k], _ = json.Marshal(v)
		}
		return field.FromJSON(raw)
	}
	values := map[string]any{"title": "<b>Hi</b>", "ink": "red"}
	tests := []struct {
		name        string
		req         map[string]any
		pathID      string
		pathVersion int
		want        map[string]any // fields of the expanded request; nil value: absent
		wantVersion int
	}{
		{"latest by template_id", map[string]any{"template_id": id, "template_values": values},
			"", 0, map[string]any{"html": "<h1>&lt;b&gt;Hi&lt;/b&gt;</h1>", "css": nil, "device_scale": nil, "template_id": nil, "template_values": nil}, 2},
		{"a version by template_version", map[string]any{"template_id": id, "template_version": 1, "template_values": values},
			"", 0, map[string]any{"html": "<p>&lt;b&gt;Hi&lt;/b&gt;</p>", "css": "p{color:red }", "device_scale": 1.0, "viewport_width": 300.0, "template_version": nil}, 1},
		{"the request wins over the defaults", map[string]any{"template_values": values, "viewport_width": 500},
			id, 1, map[string]any{"viewport_width": 500.0, "device_scale": 1.0}, 1},
		{"no values", map[string]any{}, id, 1, map[string]any{"html": "<p></p>", "css": "p{color: }"}, 1},
		{"the request's html is replaced", map[string]any{"html": "<script>", "template_values": values}, id, 0, map[string]any{"html": "<h1>&lt;b&gt;Hi&lt;/b&gt;</h1>"}, 2},
		// imageparams.Merge's rule: a null removes the default.
		{"a null unsets a default", map[string]any{"device_scale": nil, "template_values": values},
			id, 1, map[string]any{"device_scale": nil, "viewport_width": 300.0, "html": "<p>&lt;b&gt;Hi&lt;/b&gt;</p>"}, 1},
		{"a null without a default", map[string]any{"timezone": nil}, id, 1, map[string]any{"timezone": nil, "device_scale": 1.0}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, gotID, gotVersion, err := s.h.Expand(context.Background(), orgID, obj(tc.req), tc.pathID, tc.pathVersion)
			if err != nil {
				t.Fatal(err)
			}
			if gotID != id || gotVersion != tc.wantVersion {
				t.Fatalf("expanded %s version %d, want %s version %d", gotID, gotVersion, id, tc.wantVersion)
			}
			for k, want := range tc.want {
				raw, ok := out.Raw(k)
				if want == nil {
					if ok {
						t.Fatalf("%s = %s, want it absent", k, raw)
					}
					continue
				}
				var got any
				if !ok || json.Unmarshal(raw, &got) != nil || got != want {
					t.Fatalf("%s = %s, want %v", k, raw, want)
				}
			}
		})
	}

	// A form unsets a default with an empty value.
	form, _, _, err := s.h.Expand(context.Background(), orgID, field.FromForm(url.Values{"device_scale": {""}}), id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if vs := form.FormValues("device_scale"); len(vs) != 1 || vs[0] != "" {
		t.Fatalf("form: device_scale %q, want the empty value that unsets it", vs)
	}
	if vs := form.FormValues("viewport_width"); len(vs) != 1 || vs[0] != "300" {
		t.Fatalf("form: viewport_width %q, want the default 300", vs)
	}

	failures := []struct {
		name        string
		orgID       string
		req         map[string]any
		pathID      string
		pathVersion int
		status      int
		field       string
		fragment    string
	}{
		{"unknown template", orgID, map[string]any{"template_id": "t-nope"}, "", 0, 404, "", "Template t-nope not found"},
		{"unknown version", orgID, map[string]any{}, id, 9, 404, "", "has no version 9"},
		{"another organization", "org-" + other.APIID, map[string]any{}, id, 0, 404, "", "not found"},
		{"values not an object", orgID, map[string]any{"template_values": []int{1}}, id, 0, 400, "template_values", ""},
		{"values a string", orgID, map[string]any{"template_values": "{}"}, id, 0, 400, "template_values", ""},
		{"version out of range", orgID, map[string]any{"template_id": id, "template_version": 0}, "", 0, 400, "template_version", ""},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := s.h.Expand(context.Background(), tc.orgID, obj(tc.req), tc.pathID, tc.pathVersion)
			wantAPIError(t, err, tc.status, tc.field, tc.fragment)
		})
	}

	// Errors name the field under the request's prefix (a batch variation).
	o := obj(map[string]any{"template_values": 7})
	o.Prefix = "variations[2]."
	_, _, _, err = s.h.Expand(context.Background(), orgID, o, id, 0)
	wantAPIError(t, err, 400, "variations[2].template_values", "")

	// A render fault is the caller's: a 400 naming template_values. (A
	// save refuses this template now; one saved before still renders.)
	helper, _, err := s.h.Store.Create(context.Background(), orgID, 1000, template.Version{HTML: "{{shout title}}"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, err = s.h.Expand(context.Background(), orgID, obj(map[string]any{"template_values": values}), helper.ID, 0)
	wantAPIError(t, err, 400, "template_values", "")

	if owner, err := s.h.Owner(t.Context(), id); err != nil || owner != orgID {
		t.Fatalf("Owner = %q, %v", owner, err)
	}
	if _, err := s.h.Owner(t.Context(), "t-nope"); !errors.Is(err, template.ErrNotFound) {
		t.Fatalf("Owner of an unknown template: %v", err)
	}
}

// apiWrite answers err as a handler does.
func apiWrite(w http.ResponseWriter, err error) {
	apierr.Write(w, httptest.NewRequest("POST", "/v1/image", nil), err)
}

// wantAPIError checks an error as the API would answer it.
func wantAPIError(t *testing.T, err error, status int, path, fragment string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	rec := httptest.NewRecorder()
	apiWrite(rec, err)
	r := &apitest.Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	if path != "" {
		apitest.WantField(t, r, path)
		return
	}
	apitest.WantMessage(t, apitest.WantError(t, r, status), fragment)
}
