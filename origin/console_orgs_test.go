package origin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestHostileConsoleOtherOrganization: a session of another
// organization's key, even its owner's, never shows this organization's
// images, templates or OG configurations, by list or by id, and cannot
// delete them.
func TestHostileConsoleOtherOrganization(t *testing.T) {
	o := startOrigin(t)
	var img struct{ ID string }
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/image", Creds: &o.Owner, JSON: map[string]any{"html": "<p>ours</p>"}})
	apitest.WantStatus(t, r, 200)
	r.Decode(t, &img)
	var tpl struct {
		TemplateID string `json:"template_id"`
	}
	r = o.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &o.Owner, JSON: map[string]any{"name": "Secret plans", "html": "<p>{{x}}</p>"}})
	apitest.WantStatus(t, r, http.StatusCreated)
	r.Decode(t, &tpl)
	site := newSite(t, map[string]string{"/": doc("<p>site</p>")})
	cfg, _ := o.ogConfig(t, map[string]any{"config_type": "html_css", "base_url": site.URL})

	_, stranger := o.newOrg(context.Background(), t, "pro")
	c := &consoleClient{t: t, base: o.URL}
	c.signIn(stranger)
	for _, path := range []string{"/console/overview", "/console/images", "/console/templates", "/console/og"} {
		a := c.send("GET", path, nil)
		if a.status != 200 || strings.Contains(a.body, img.ID) || strings.Contains(a.body, tpl.TemplateID) || strings.Contains(a.body, "Secret plans") || strings.Contains(a.body, cfg) {
			t.Errorf("%s shows another organization's records: %d", path, a.status)
		}
	}
	for _, path := range []string{"/console/images/" + img.ID, "/console/templates/" + tpl.TemplateID, "/console/og/" + cfg, "/console/og/" + cfg + "/preview?path=/"} {
		a := c.send("GET", path, nil)
		if a.status != http.StatusNotFound || strings.Contains(a.body, "Secret plans") || strings.Contains(a.body, "ours") {
			t.Errorf("%s: %d", path, a.status)
		}
	}
	csrf := csrfOf(t, c.send("GET", "/console/images", nil).body)
	c.send("POST", "/console/images/delete", url.Values{"csrf": {csrf}, "id": {img.ID}})
	c.send("POST", "/console/templates/"+tpl.TemplateID+"/delete", url.Values{"csrf": {csrf}})
	c.send("POST", "/console/og/"+cfg+"/delete", url.Values{"csrf": {csrf}})
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/images/" + img.ID, Creds: &o.Owner}), 200)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/template/" + tpl.TemplateID, Creds: &o.Owner}), 200)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/og-configs/" + cfg, Creds: &o.Owner}), 200)
}
