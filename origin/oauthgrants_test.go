package origin_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// grantItem is a connection as GET /v1/oauth-grants answers it.
type grantItem struct {
	ID          string   `json:"id"`
	ClientID    string   `json:"client_id"`
	ClientName  *string  `json:"client_name"`
	Permissions []string `json:"permissions"`
	KeyID       string   `json:"key_id"`
	APIID       *string  `json:"api_id"`
	KeyName     *string  `json:"key_name"`
	CreatedAt   string   `json:"created_at"`
	LastUsedAt  *string  `json:"last_used_at"`
}

type grantPage struct {
	Data       []grantItem `json:"data"`
	Pagination struct {
		NextPageStart *string `json:"next_page_start"`
	} `json:"pagination"`
}

// grantsPage reads one page of the connections as creds.
func (o *testOrigin) grantsPage(t *testing.T, creds apitest.Creds, query string) (grantPage, *apitest.Response) {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/oauth-grants" + query, Creds: &creds})
	apitest.WantStatus(t, r, http.StatusOK)
	var p grantPage
	r.Decode(t, &p)
	return p, r
}

// grantOf returns the listed connection of the client, nil when none.
func (o *testOrigin) grantOf(t *testing.T, creds apitest.Creds, clientID string) *grantItem {
	t.Helper()
	p, _ := o.grantsPage(t, creds, "?count=100")
	for _, g := range p.Data {
		if g.ClientID == clientID {
			return &g
		}
	}
	return nil
}

// keyIDOf returns the id of the key whose API ID creds hold.
func (o *testOrigin) keyIDOf(t *testing.T, creds apitest.Creds) string {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys?count=100", Creds: &creds})
	apitest.WantStatus(t, r, http.StatusOK)
	var list struct{ Data []key }
	r.Decode(t, &list)
	for _, k := range list.Data {
		if k.APIID == creds.APIID {
			return k.ID
		}
	}
	t.Fatalf("key %s not listed", creds.APIID)
	return ""
}

// wantGrantRefused checks that a revoked connection's tokens are refused:
// its access token at the MCP endpoint, its refresh token at the token
// endpoint.
func wantGrantRefused(t *testing.T, o *testOrigin, g mcpGrant) {
	t.Helper()
	mcpWantUnauthorized(t, mcpPost(t, o.URL+origin.MCPPath, g.Access, mcpToolsList), o.URL, "token revoked")
	r := mcpRefresh(t, o.URL, g, g.Refresh)
	apitest.WantStatus(t, r, http.StatusBadRequest)
	if e := r.Object(t); e["error"] != "invalid_grant" {
		t.Fatalf("refresh of a revoked connection: %s", r.Body)
	}
}

func TestOAuthGrants(t *testing.T) {
	o := startOrigin(t)
	_, pro := o.newOrg(t.Context(), t, "pro")
	_, other := o.newOrg(t.Context(), t, "pro")
	endpoint := o.URL + origin.MCPPath

	if p, _ := o.grantsPage(t, pro, ""); len(p.Data) != 0 || p.Pagination.NextPageStart != nil {
		t.Fatalf("connections before any: %+v", p)
	}

	created := o.Clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	var grants []mcpGrant // oldest first
	for range 3 {
		grants = append(grants, mcpConnect(t, o, pro, nil))
	}
	keyID := o.keyIDOf(t, pro)

	t.Run("list", func(t *testing.T) {
		p, r := o.grantsPage(t, pro, "")
		if len(p.Data) != 3 || p.Pagination.NextPageStart != nil {
			t.Fatalf("list: %s", r.Body)
		}
		for i, item := range p.Data {
			g := grants[len(grants)-1-i] // newest first
			want := strings.Fields(g.Scope)
			if item.ClientID != g.ClientID || item.ClientName == nil || *item.ClientName != "MCP integration test" ||
				!slices.Equal(item.Permissions, want) || item.KeyID != keyID || item.APIID == nil || *item.APIID != pro.APIID ||
				item.KeyName == nil || item.LastUsedAt != nil || item.ID == "" || item.CreatedAt[:20] != created[:20] {
				t.Errorf("item %d: %+v, want client %s, scopes %v, key %s created %s", i, item, g.ClientID, want, keyID, created)
			}
		}
		for _, g := range grants {
			if strings.Contains(string(r.Body), g.Access) || strings.Contains(string(r.Body), g.Refresh) {
				t.Fatal("the list holds a token")
			}
		}
		// Another organization sees none of them.
		if p, _ := o.grantsPage(t, other, ""); len(p.Data) != 0 {
			t.Fatalf("another organization lists %+v", p.Data)
		}
	})

	t.Run("paging", func(t *testing.T) {
		first, r := o.grantsPage(t, pro, "?count=2")
		if len(first.Data) != 2 || first.Pagination.NextPageStart == nil {
			t.Fatalf("first page: %s", r.Body)
		}
		second, r := o.grantsPage(t, pro, "?count=2&page_start="+url.QueryEscape(*first.Pagination.NextPageStart))
		if len(second.Data) != 1 || second.Pagination.NextPageStart != nil {
			t.Fatalf("second page: %s", r.Body)
		}
		var got []string
		for _, item := range append(first.Data, second.Data...) {
			got = append(got, item.ClientID)
		}
		if want := []string{grants[2].ClientID, grants[1].ClientID, grants[0].ClientID}; !slices.Equal(got, want) {
			t.Fatalf("pages list clients %v, want %v", got, want)
		}
		// A cursor is the organization's: another one's is a 400.
		r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/oauth-grants?page_start=" + url.QueryEscape(*first.Pagination.NextPageStart), Creds: &other})
		apitest.WantField(t, r, "page_start")
		apitest.WantField(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/oauth-grants?count=0", Creds: &pro}), "count")
	})

	t.Run("permissions", func(t *testing.T) {
		target := o.grantOf(t, pro, grants[1].ClientID)
		if target == nil {
			t.Fatal("connection not listed")
		}
		images := o.createKey(t, pro, map[string]any{"permissions": []string{"images:read"}})
		reader := o.createKey(t, pro, map[string]any{"permissions": []string{"api_keys:read"}})
		narrow := o.createKey(t, pro, map[string]any{"permissions": []string{"api_keys:read", "api_keys:delete"}})
		apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/oauth-grants", Creds: images.creds()}), http.StatusForbidden)
		if p, _ := o.grantsPage(t, *reader.creds(), ""); len(p.Data) != 3 {
			t.Fatalf("api_keys:read lists %d connections, want 3", len(p.Data))
		}
		del := apitest.Request{Method: "DELETE", Path: "/v1/oauth-grants/" + target.ID}
		for _, k := range []key{images, reader} {
			del.Creds = k.creds()
			apitest.WantError(t, o.do(t, del), http.StatusForbidden)
		}
		del.Creds = narrow.creds()
		e := apitest.WantError(t, o.do(t, del), http.StatusForbidden)
		if msg, _ := e["message"].(string); !strings.Contains(msg, "Insufficient authority") || !strings.Contains(msg, "images:create") {
			t.Fatalf("revocation without authority over the connection: %v", e)
		}
		// Still working.
		apitest.WantStatus(t, mcpPost(t, endpoint, grants[1].Access, mcpToolsList), http.StatusOK)
	})

	t.Run("another organization's id", func(t *testing.T) {
		target := o.grantOf(t, pro, grants[1].ClientID)
		unknown := o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/oauth-grants/0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", Creds: &other})
		theirs := o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/oauth-grants/" + target.ID, Creds: &other})
		a, b := apitest.WantError(t, unknown, http.StatusNotFound), apitest.WantError(t, theirs, http.StatusNotFound)
		if a["message"] != b["message"] {
			t.Fatalf("another organization's id answers %v, an unknown one %v", b, a)
		}
		apitest.WantField(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/oauth-grants/not-a-uuid", Creds: &pro}), "id")
		apitest.WantStatus(t, mcpPost(t, endpoint, grants[1].Access, mcpToolsList), http.StatusOK)
	})

	t.Run("revoke", func(t *testing.T) {
		g := grants[1]
		target := o.grantOf(t, pro, g.ClientID)
		r := o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/oauth-grants/" + target.ID, Creds: &pro})
		apitest.WantStatus(t, r, http.StatusNoContent)
		wantGrantRefused(t, o, g)
		if o.grantOf(t, pro, g.ClientID) != nil {
			t.Fatal("a revoked connection is still listed")
		}
		apitest.WantError(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/oauth-grants/" + target.ID, Creds: &pro}), http.StatusNotFound)
		// The others are untouched.
		for _, g := range []mcpGrant{grants[0], grants[2]} {
			apitest.WantStatus(t, mcpPost(t, endpoint, g.Access, mcpToolsList), http.StatusOK)
		}
	})

	// Last, as it moves the clock past the access tokens' lifetime.
	t.Run("last use", func(t *testing.T) {
		g := grants[0]
		apitest.WantStatus(t, mcpPost(t, endpoint, g.Access, mcpToolsList), http.StatusOK)
		first := o.Clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")
		item := o.grantOf(t, pro, g.ClientID)
		if item == nil || item.LastUsedAt == nil || *item.LastUsedAt != first {
			t.Fatalf("after a use at %s: %+v", first, item)
		}
		// Written down at most once an hour: a refresh 55 minutes later
		// leaves it, a use an hour later writes it again.
		o.Clock.Advance(55 * time.Minute)
		r := mcpRefresh(t, o.URL, g, g.Refresh)
		apitest.WantStatus(t, r, http.StatusOK)
		var rotated struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		}
		r.Decode(t, &rotated)
		if item := o.grantOf(t, pro, g.ClientID); item == nil || item.LastUsedAt == nil || *item.LastUsedAt != first {
			t.Fatalf("after a refresh within the hour: %+v, want %s", item, first)
		}
		o.Clock.Advance(6 * time.Minute)
		apitest.WantStatus(t, mcpPost(t, endpoint, rotated.AccessToken, mcpToolsList), http.StatusOK)
		later := o.Clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")
		if item := o.grantOf(t, pro, g.ClientID); item == nil || item.LastUsedAt == nil || *item.LastUsedAt != later {
			t.Fatalf("after a use an hour later: %+v, want %s", item, later)
		}
	})

}

// TestOAuthGrantsWithoutMCP: behind a public URL with a path MCP is off:
// no connection can exist, the list is empty, any id is a 404, and the
// console says why there is nothing to connect to.
func TestOAuthGrantsWithoutMCP(t *testing.T) {
	o := startOrigin(t, func(c *origin.Config) { c.PublicURL = "http://img.example.com/pictor" })
	if p, r := o.grantsPage(t, o.Owner, ""); len(p.Data) != 0 || p.Pagination.NextPageStart != nil {
		t.Fatalf("list without MCP: %s", r.Body)
	}
	apitest.WantError(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/oauth-grants/0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", Creds: &o.Owner}), http.StatusNotFound)
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(o.Owner)
	if a := c.send("GET", "/console/assistants", nil); a.status != 200 || !strings.Contains(a.body, "The MCP endpoint is off on this server") {
		t.Fatalf("the console without MCP: %d\n%s", a.status, a.body)
	}
}
