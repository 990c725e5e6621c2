package origin_test

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/perm"
)

func allPermissionNames() []string {
	var out []string
	for _, p := range perm.All() {
		out = append(out, string(p))
	}
	return out
}

func TestKeyCreateValidation(t *testing.T) {
	o := startOrigin(t)
	long := strings.Repeat("é", 256)
	tests := []struct {
		name string
		body any
		raw  string
		path string // the field named in validation_errors
	}{
		{name: "permissions missing", body: map[string]any{"name": "x"}, path: "permissions"},
		{name: "permissions null", body: map[string]any{"permissions": nil}, path: "permissions"},
		{name: "permissions not array", body: map[string]any{"permissions": "images:create"}, path: "permissions"},
		{name: "permission not string", body: map[string]any{"permissions": []any{"images:create", 7}}, path: "permissions[1]"},
		{name: "unknown permission", body: map[string]any{"permissions": []string{"images:create", "images:fly"}}, path: "permissions[1]"},
		{name: "all future with permissions", body: map[string]any{"permissions": []string{"images:create"}, "all_future_permissions": true}, path: "permissions"},
		{name: "name too long", body: map[string]any{"permissions": []string{}, "name": long[:256*2-2] + "éé"}, path: "name"},
		{name: "name wrong type", body: map[string]any{"permissions": []string{}, "name": 12}, path: "name"},
		{name: "description too long", body: map[string]any{"permissions": []string{}, "description": strings.Repeat("d", 2001)}, path: "description"},
		{name: "disabled wrong type", body: map[string]any{"permissions": []string{}, "disabled": "yes"}, path: "disabled"},
		{name: "all future wrong type", body: map[string]any{"permissions": []string{}, "all_future_permissions": 1}, path: "all_future_permissions"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o.nextWindow()
			r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &o.Owner, JSON: tc.body})
			apitest.WantField(t, r, tc.path)
			if r.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("Cache-Control = %q on a key response", r.Header.Get("Cache-Control"))
			}
		})
	}
}

func TestKeyCreateBody(t *testing.T) {
	o := startOrigin(t)
	tests := []struct {
		name, contentType, raw string
		status                 int
	}{
		{name: "malformed JSON", contentType: "application/json", raw: `{"permissions": [`, status: 400},
		{name: "trailing data", contentType: "application/json", raw: `{"permissions": []} {}`, status: 400},
		{name: "array body", contentType: "application/json", raw: `[]`, status: 400},
		{name: "empty body", contentType: "application/json", raw: ``, status: 400},
		{name: "form body", contentType: "application/x-www-form-urlencoded", raw: `permissions=images:create`, status: 415},
		{name: "text body", contentType: "text/plain", raw: `{"permissions": []}`, status: 415},
		{name: "bad content type", contentType: "%%%", raw: `{"permissions": []}`, status: 415},
		{name: "oversized", contentType: "application/json", raw: `{"name":"` + strings.Repeat("a", 70<<10) + `","permissions":[]}`, status: 413},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o.nextWindow()
			r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &o.Owner, Raw: tc.raw, ContentType: tc.contentType})
			apitest.WantError(t, r, tc.status)
		})
	}
}

var defaultName = regexp.MustCompile(`^Key created (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)$`)

func TestKeyCreateAndDefaults(t *testing.T) {
	o := startOrigin(t)
	k := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"images:create", "images:create", "usage:read"}, "description": "   "})
	if k.APIKey == "" || len(k.APIKey) < 32 {
		t.Fatalf("create response secret %q: want at least 128 bits", k.APIKey)
	}
	if k.APIID == k.ID {
		t.Fatal("api_id must differ from id")
	}
	m := defaultName.FindStringSubmatch(k.Name)
	if m == nil {
		t.Fatalf("default name %q", k.Name)
	}
	created, err := time.Parse(time.RFC3339, k.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	if m[1] != created.UTC().Format("2006-01-02 15:04:05") {
		t.Fatalf("default name %q does not show created_at %s", k.Name, k.CreatedAt)
	}
	if k.Description != nil {
		t.Fatalf("blank description kept: %q", *k.Description)
	}
	if !k.Enabled || k.AllFuture {
		t.Fatalf("enabled=%v all_future=%v", k.Enabled, k.AllFuture)
	}
	if !slices.Equal(k.Permissions, []string{"images:create", "usage:read"}) {
		t.Fatalf("permissions = %v", k.Permissions)
	}

	named := o.createKey(t, o.Owner, map[string]any{"name": strings.Repeat("n", 255), "description": "ci", "permissions": []string{}, "disabled": true})
	if len(named.Name) != 255 || named.Description == nil || *named.Description != "ci" || named.Enabled {
		t.Fatalf("named key = %+v", named)
	}
	if r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: named.creds()}); r.Status != 401 {
		t.Fatalf("disabled-at-birth key authenticated: %d", r.Status)
	}

	future := o.createKey(t, o.Owner, map[string]any{"permissions": []string{}, "all_future_permissions": true})
	if !future.AllFuture || !slices.Equal(future.Permissions, allPermissionNames()) {
		t.Fatalf("all-future key = %+v", future)
	}
}

func TestKeySecretOnlyInCreateResponse(t *testing.T) {
	o := startOrigin(t)
	k := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"api_keys:read"}})
	for _, r := range []*apitest.Response{
		o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys/" + k.ID, Creds: &o.Owner}),
		o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys?include_disabled=true&count=100", Creds: &o.Owner}),
		o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys/" + k.ID, Creds: &o.Owner, JSON: map[string]any{"permissions": []string{"api_keys:read"}}}),
		o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: k.creds()}),
	} {
		apitest.WantStatus(t, r, 200)
		if strings.Contains(string(r.Body), k.APIKey) || strings.Contains(string(r.Body), o.Owner.APIKey) || strings.Contains(string(r.Body), `"api_key"`) {
			t.Fatalf("secret in response: %s", r.Body)
		}
		if r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("Cache-Control = %q", r.Header.Get("Cache-Control"))
		}
	}
	// Wrong secrets and failed calls are logged without any secret.
	o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &apitest.Creds{APIID: k.APIID, APIKey: k.APIKey + "x"}})
	for _, secret := range []string{k.APIKey, o.Owner.APIKey} {
		if strings.Contains(logs.String(), secret) {
			t.Fatal("a secret appears in the logs")
		}
	}
}

func TestKeyGetAndUpdate(t *testing.T) {
	o := startOrigin(t)
	k := o.createKey(t, o.Owner, map[string]any{"name": "ci", "description": "deploys", "permissions": []string{"images:create"}})

	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys/" + k.ID, Creds: &o.Owner})
	apitest.WantStatus(t, r, 200)
	var got key
	r.Decode(t, &got)
	if got.ID != k.ID || got.APIID != k.APIID || got.Name != "ci" || *got.Description != "deploys" {
		t.Fatalf("get = %+v", got)
	}

	o.Clock.Advance(90 * time.Second)
	// A complete replacement: omitted optional fields reset to defaults.
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys/" + k.ID, Creds: &o.Owner,
		JSON: map[string]any{"permissions": []string{"images:create", "images:read"}, "name": " "}})
	apitest.WantStatus(t, r, 200)
	var upd key
	r.Decode(t, &upd)
	if upd.Description != nil {
		t.Fatalf("omitted description kept: %q", *upd.Description)
	}
	m := defaultName.FindStringSubmatch(upd.Name)
	created, _ := time.Parse(time.RFC3339, k.CreatedAt)
	if m == nil || m[1] != created.UTC().Format("2006-01-02 15:04:05") {
		t.Fatalf("blank name became %q, want the original creation time %s", upd.Name, k.CreatedAt)
	}
	if upd.UpdatedAt == upd.CreatedAt || upd.CreatedAt != k.CreatedAt {
		t.Fatalf("timestamps: created %s updated %s", upd.CreatedAt, upd.UpdatedAt)
	}
	if !slices.Equal(upd.Permissions, []string{"images:create", "images:read"}) {
		t.Fatalf("permissions = %v", upd.Permissions)
	}

	// Disable, then enable again: the same credentials come back.
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys/" + k.ID, Creds: &o.Owner,
		JSON: map[string]any{"permissions": []string{"api_keys:read"}, "disabled": true}})
	apitest.WantStatus(t, r, 200)
	if r.Object(t)["enabled"] != false {
		t.Fatalf("disabled key shows enabled: %s", r.Body)
	}
	apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: k.creds()}), 401)
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys/" + k.ID, Creds: &o.Owner,
		JSON: map[string]any{"permissions": []string{"api_keys:read"}, "disabled": false}})
	apitest.WantStatus(t, r, 200)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: k.creds()}), 200)

	// Validation applies to updates too.
	apitest.WantField(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys/" + k.ID, Creds: &o.Owner,
		JSON: map[string]any{"permissions": []string{"nope"}}}), "permissions[0]")
}

// TestKeyPathIDs: a key's path id is its id, not its api_id; the kit's id
// check and another organization's key in the keys' words (the rest of
// that matrix is resource.TestRoutes and resource.TestRoutesAdmission),
// and a deletion, which disables, leaves another organization's key
// enabled.
func TestKeyPathIDs(t *testing.T) {
	o := startOrigin(t)
	k := o.createKey(t, o.Owner, map[string]any{"permissions": []string{}})
	_, other := o.newOrg(t.Context(), t, "pro")
	foreign := o.createKey(t, other, map[string]any{"permissions": []string{}})

	missing := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys/01a20000-0000-7000-8000-000000000000", Creds: &o.Owner})
	apitest.WantError(t, missing, 404)
	tests := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{name: "api_id is not a path id", method: "GET", path: "/v1/api-keys/" + k.APIID, status: 404},
		{name: "other org get", method: "GET", path: "/v1/api-keys/" + foreign.ID, status: 404},
		{name: "other org delete", method: "DELETE", path: "/v1/api-keys/" + foreign.ID, status: 404},
		{name: "malformed id", method: "GET", path: "/v1/api-keys/not-a-uuid", status: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := o.do(t, apitest.Request{Method: tc.method, Path: tc.path, Creds: &o.Owner, JSON: tc.body})
			m := apitest.WantError(t, r, tc.status)
			if tc.status == 404 && string(r.Body) != string(missing.Body) {
				t.Fatalf("404 body differs from a missing id's:\n%s\n%s", r.Body, missing.Body)
			}
			if tc.status == 400 {
				apitest.WantField(t, r, "id")
				apitest.WantMessage(t, m, "is not a valid API key id")
			}
		})
	}
	// The foreign key is untouched.
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys/" + foreign.ID, Creds: &other})
	apitest.WantStatus(t, r, 200)
	if r.Object(t)["enabled"] != true {
		t.Fatal("another organization's key was disabled")
	}
}

func TestKeyDeleteDisables(t *testing.T) {
	o := startOrigin(t)
	k := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"api_keys:read"}})
	for range 2 { // idempotent
		r := o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + k.ID, Creds: &o.Owner})
		apitest.WantStatus(t, r, 204)
		if len(r.Body) != 0 {
			t.Fatalf("204 with body %q", r.Body)
		}
	}
	apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: k.creds()}), 401)
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys/" + k.ID, Creds: &o.Owner})
	apitest.WantStatus(t, r, 200)
	if r.Object(t)["enabled"] != false {
		t.Fatalf("deleted key: %s", r.Body)
	}
	ids := func(query string) []string {
		var l struct{ Data []key }
		o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys" + query, Creds: &o.Owner}).Decode(t, &l)
		var out []string
		for _, k := range l.Data {
			out = append(out, k.ID)
		}
		return out
	}
	if slices.Contains(ids(""), k.ID) {
		t.Fatal("disabled key listed without include_disabled")
	}
	if !slices.Contains(ids("?include_disabled=true"), k.ID) {
		t.Fatal("disabled key missing with include_disabled=true")
	}
}

func TestKeyAuthority(t *testing.T) {
	o := startOrigin(t)
	// The caller may manage keys and create images, nothing else.
	caller := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"api_keys:create_update", "api_keys:delete", "api_keys:read", "images:create"}})
	narrow := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"images:create"}})
	broad := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"images:create", "images:read"}})
	future := o.createKey(t, o.Owner, map[string]any{"permissions": []string{}, "all_future_permissions": true})
	o.nextWindow()

	tests := []struct {
		name, method, path string
		body               any
		status             int
		mention            string
	}{
		{name: "grant a permission it lacks", method: "POST", path: "/v1/api-keys", body: map[string]any{"permissions": []string{"images:read"}}, status: 403, mention: "images:read"},
		{name: "grant all future", method: "POST", path: "/v1/api-keys", body: map[string]any{"permissions": []string{}, "all_future_permissions": true}, status: 403, mention: "all_future_permissions"},
		{name: "grant what it has", method: "POST", path: "/v1/api-keys", body: map[string]any{"permissions": []string{"images:create", "api_keys:read"}}, status: 200},
		{name: "rename a broader key", method: "POST", path: "/v1/api-keys/" + broad.ID, body: map[string]any{"permissions": []string{"images:create"}, "name": "x"}, status: 403, mention: "images:read"},
		{name: "disable a broader key", method: "POST", path: "/v1/api-keys/" + broad.ID, body: map[string]any{"permissions": []string{"images:create", "images:read"}, "disabled": true}, status: 403},
		{name: "rename an all-future key", method: "POST", path: "/v1/api-keys/" + future.ID, body: map[string]any{"permissions": []string{}, "all_future_permissions": true, "name": "x"}, status: 403},
		{name: "widen a narrow key", method: "POST", path: "/v1/api-keys/" + narrow.ID, body: map[string]any{"permissions": []string{"images:create", "images:delete"}}, status: 403, mention: "images:delete"},
		{name: "rename a narrow key", method: "POST", path: "/v1/api-keys/" + narrow.ID, body: map[string]any{"permissions": []string{"images:create"}, "name": "renamed"}, status: 200},
		{name: "delete a broader key", method: "DELETE", path: "/v1/api-keys/" + broad.ID, status: 403, mention: "images:read"},
		{name: "delete an all-future key", method: "DELETE", path: "/v1/api-keys/" + future.ID, status: 403},
		{name: "delete a narrow key", method: "DELETE", path: "/v1/api-keys/" + narrow.ID, status: 204},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := o.do(t, apitest.Request{Method: tc.method, Path: tc.path, Creds: caller.creds(), JSON: tc.body})
			if tc.status >= 400 {
				m := apitest.WantError(t, r, tc.status)
				if tc.mention != "" {
					apitest.WantMessage(t, m, tc.mention)
				}
				return
			}
			apitest.WantStatus(t, r, tc.status)
		})
	}
	// The refused writes changed nothing.
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys/" + broad.ID, Creds: &o.Owner})
	if m := r.Object(t); m["enabled"] != true || m["name"] == "x" {
		t.Fatalf("refused update applied: %s", r.Body)
	}
}

func TestKeyPermissionsGateRoutes(t *testing.T) {
	o := startOrigin(t)
	none := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"images:create"}})
	target := o.createKey(t, o.Owner, map[string]any{"permissions": []string{}})
	tests := []struct {
		method, path string
		want         string
	}{
		{"POST", "/v1/api-keys", "api_keys:create_update"},
		{"GET", "/v1/api-keys", "api_keys:read"},
		{"GET", "/v1/api-keys/" + target.ID, "api_keys:read"},
		{"POST", "/v1/api-keys/" + target.ID, "api_keys:create_update"},
		{"DELETE", "/v1/api-keys/" + target.ID, "api_keys:delete"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := o.do(t, apitest.Request{Method: tc.method, Path: tc.path, Creds: none.creds(), JSON: map[string]any{"permissions": []string{}}})
			apitest.WantMessage(t, apitest.WantError(t, r, 403), tc.want)
		})
	}
}

func TestKeyListPagination(t *testing.T) {
	o := startOrigin(t)
	for i := range 25 {
		if i%20 == 19 {
			o.nextWindow()
		}
		perms := []string{"images:create"}
		if i%3 == 0 {
			perms = append(perms, "images:read")
		}
		o.createKey(t, o.Owner, map[string]any{"name": fmt.Sprintf("k%02d", i), "permissions": perms, "disabled": i%5 == 4})
	}
	o.nextWindow()

	walk := func(t *testing.T, query string) []string {
		t.Helper()
		var names []string
		next := ""
		for page := 0; ; page++ {
			q := query
			if next != "" {
				q += "&page_start=" + next
			}
			r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys?" + q, Creds: &o.Owner})
			apitest.WantStatus(t, r, 200)
			var l struct {
				Data       []key
				Pagination struct {
					NextPageStart *string `json:"next_page_start"`
				}
			}
			r.Decode(t, &l)
			for _, k := range l.Data {
				names = append(names, k.Name)
			}
			if l.Pagination.NextPageStart == nil {
				if len(l.Data) == 0 && page > 0 {
					t.Fatal("a cursor led to an empty last page")
				}
				return names
			}
			next = *l.Pagination.NextPageStart
		}
	}
	want := func(pred func(i int) bool, owner bool) []string {
		var out []string
		for i := 24; i >= 0; i-- {
			if pred(i) {
				out = append(out, fmt.Sprintf("k%02d", i))
			}
		}
		if owner {
			out = append(out, "Owner key")
		}
		return out
	}
	tests := []struct {
		name, query string
		want        []string
	}{
		{name: "default", query: "", want: want(func(i int) bool { return i%5 != 4 }, true)},
		{name: "small pages", query: "count=3", want: want(func(i int) bool { return i%5 != 4 }, true)},
		{name: "include disabled", query: "count=7&include_disabled=true", want: want(func(int) bool { return true }, true)},
		{name: "with permission", query: "count=2&with_permission=images:read", want: want(func(i int) bool { return i%3 == 0 && i%5 != 4 }, true)},
		{name: "all of two", query: "count=4&with_permission=images:read&with_permission=images:create&include_disabled=true", want: want(func(i int) bool { return i%3 == 0 }, true)},
		{name: "max page", query: "count=100&include_disabled=true", want: want(func(int) bool { return true }, true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := walk(t, tc.query); !slices.Equal(got, tc.want) {
				t.Fatalf("got  %v\nwant %v", got, tc.want)
			}
		})
	}

	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys?count=2", Creds: &o.Owner})
	tok := *func() *string {
		var l struct {
			Pagination struct {
				NextPageStart *string `json:"next_page_start"`
			}
		}
		r.Decode(t, &l)
		return l.Pagination.NextPageStart
	}()
	tampered := []byte(tok)
	tampered[2] ^= 0x01
	_, other := o.newOrg(t.Context(), t, "free")
	// The cursor's own checks are cursor.TestParseList's and
	// resource.TestServeList's; here, that the keys' query passes them on
	// with its own.
	bad := []struct{ name, path, field string }{
		{"count zero", "/v1/api-keys?count=0", "count"},
		{"tampered cursor", "/v1/api-keys?page_start=" + string(tampered), "page_start"},
		{"unknown permission", "/v1/api-keys?with_permission=images:create&with_permission=root", "with_permission[1]"},
		{"include_disabled not boolean", "/v1/api-keys?include_disabled=maybe", "include_disabled"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			apitest.WantField(t, o.do(t, apitest.Request{Method: "GET", Path: tc.path, Creds: &o.Owner}), tc.field)
		})
	}
	// A cursor of one organization is no good in another.
	apitest.WantField(t, apitest.Do(t, o.URL, apitest.Request{Method: "GET", Path: "/v1/api-keys?page_start=" + tok, Creds: &other}), "page_start")
}

func TestKeyLimitPerOrganization(t *testing.T) {
	o := startOrigin(t)
	// The owner key is the first of 100; disabled keys keep their slot.
	var last key
	for i := 1; i < 100; i++ {
		if i%20 == 0 {
			o.nextWindow()
		}
		last = o.createKey(t, o.Owner, map[string]any{"permissions": []string{}})
	}
	o.nextWindow()
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + last.ID, Creds: &o.Owner}), 204)
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &o.Owner, JSON: map[string]any{"permissions": []string{}}})
	m := apitest.WantError(t, r, http.StatusForbidden)
	apitest.WantMessage(t, m, "100")
	// Another organization is not affected.
	_, other := o.newOrg(t.Context(), t, "free")
	apitest.WantStatus(t, apitest.Do(t, o.URL, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &other, JSON: map[string]any{"permissions": []string{}}}), 200)
}
