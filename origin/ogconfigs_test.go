package origin_test

import (
	"path/filepath"
	"testing"

	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestOGConfigs drives the OG configuration API through the whole origin:
// the route table's permissions, the purge channel on update and delete,
// the conflict on a second enabled configuration for one origin, and
// another organization's view.
func TestOGConfigs(t *testing.T) {
	o := startOrigin(t)
	rec := &purgeLog{}
	_, stop := subscribe(t, o, filepath.Join(t.TempDir(), "edge.state"), rec)
	defer stop()

	body := map[string]any{"config_type": "html_css", "name": "site", "base_url": "https://Example.com:443/"}
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: &o.Owner, JSON: body})
	apitest.WantStatus(t, r, 200)
	var created struct {
		ID       string
		DomainID string `json:"domain_id"`
		BaseURL  string `json:"base_url"`
		Enabled  bool
	}
	r.Decode(t, &created)
	if created.ID == "" || created.DomainID == "" || created.DomainID == created.ID {
		t.Fatalf("id %q, domain_id %q: want both, distinct", created.ID, created.DomainID)
	}
	if created.BaseURL != "https://example.com" || !created.Enabled {
		t.Fatalf("base_url %q enabled %v", created.BaseURL, created.Enabled)
	}

	// A second enabled configuration for the same origin: 409 naming the first.
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: &o.Owner, JSON: body})
	apitest.WantMessage(t, apitest.WantError(t, r, 409), created.ID)

	// An update keeps domain_id and purges the configuration's OG images.
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs/" + created.ID, Creds: &o.Owner,
		JSON: map[string]any{"config_type": "html_css", "name": "renamed", "base_url": "https://example.com", "refresh_interval_s": 3600}})
	apitest.WantStatus(t, r, 200)
	var updated struct {
		DomainID         string `json:"domain_id"`
		Name             string
		RefreshIntervalS int `json:"refresh_interval_s"`
	}
	r.Decode(t, &updated)
	if updated.DomainID != created.DomainID || updated.Name != "renamed" || updated.RefreshIntervalS != 3600 {
		t.Fatalf("after update: %+v", updated)
	}
	tag := contract.OGConfigTag(created.ID)
	if !rec.has(&rec.tags, tag) {
		t.Fatalf("the update answered before the edge purged %s (tags %v)", tag, rec.tags)
	}

	// Another organization sees nothing of it.
	_, other := o.newOrg(t.Context(), t, "pro")
	apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs/" + created.ID, Creds: &other}), 404)
	r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs", Creds: &other})
	apitest.WantStatus(t, r, 200)
	var list struct{ Data []map[string]any }
	r.Decode(t, &list)
	if len(list.Data) != 0 {
		t.Fatalf("another organization lists %d configurations", len(list.Data))
	}

	// A key without the permission is refused.
	k := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"images:create"}})
	apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs", Creds: &apitest.Creds{APIID: k.APIID, APIKey: k.APIKey}}), 403)

	// Delete: 204, purged, then 404.
	rec.mu.Lock()
	rec.tags = nil
	rec.mu.Unlock()
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/og-configs/" + created.ID, Creds: &o.Owner}), 204)
	if !rec.has(&rec.tags, tag) {
		t.Fatal("the delete answered before the edge purged the configuration's images")
	}
	apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs/" + created.ID, Creds: &o.Owner}), 404)
	// The origin is free again.
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "POST", Path: "/v1/og-configs", Creds: &o.Owner, JSON: body}), 200)
}
