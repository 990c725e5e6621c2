package origin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/images"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/openapi"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/proxy"
	"github.com/pictorhq/pictor/origin/ratelimit"
	"github.com/pictorhq/pictor/origin/seal"
	"github.com/pictorhq/pictor/origin/storage"
	"github.com/pictorhq/pictor/origin/storedest"
	"github.com/pictorhq/pictor/origin/template"
)

// routes is the route table: every route of the origin with the permission
// it requires, its rate-limit group, and its description in the OpenAPI
// document (Doc, an operation of origin/openapi) or why the document leaves
// it out (Hidden). Nothing is served that is not here.
func (o *Origin) routes(ctx context.Context, box *seal.Box) []api.Route {
	keys := &apikey.Handler{Store: o.keys, Cursors: o.cursors(box), OnDisable: func(ctx context.Context, apiID string) error {
		if err := o.revokeConnections(ctx, apiID); err != nil {
			return err
		}
		return o.purge(ctx, contract.KeyDisabled, []string{contract.KeyTag(apiID)})
	}}
	grants := &oauthGrants{server: o.oauth, keys: o.keys, cursors: o.cursors(box)}
	templates := o.templates
	images := &images.Handler{Service: o.images, Orgs: o.orgs, PublicURL: o.PublicURL(), AllowPrivate: o.cfg.AllowPrivateURLs,
		Keys: signers{keys: o.keys, orgs: o.orgs}, Cursors: o.cursors(box), Templates: templates, Proxies: proxyRoutes{o.proxies},
		Previews: images.PreviewLimit{Limiter: o.limiter, PerMinute: o.cfg.PreviewsPerMinute}}
	ogConfigs := &ogconfig.Handler{Store: o.ogcs, Cursors: o.cursors(box), AllowPrivate: o.cfg.AllowPrivateURLs,
		Templates: ogconfig.TemplatesFunc(func(orgID, id string, version int) error {
			_, _, err := o.tpls.Version(ctx, orgID, id, version)
			if errors.Is(err, template.ErrNotFound) {
				return fmt.Errorf("%w: %w", ogconfig.ErrTemplateNotFound, err)
			}
			return err
		}),
		OnChange: func(ctx context.Context, c *ogconfig.Config) error {
			if _, err := o.ogcs.Get(ctx, c.OrgID, c.ID); errors.Is(err, ogconfig.ErrNotFound) {
				if err := o.og.Forget(ctx, c.ID); err != nil {
					return err
				}
			}
			return o.purge(ctx, contract.TagsPurged, []string{contract.OGConfigTag(c.ID)})
		},
		Refresher: o.og, Previewer: o.og, PublicURL: o.PublicURL(),
		OnRefresh: func(ctx context.Context, c *ogconfig.Config, path string) error {
			tag := contract.OGConfigTag(c.ID)
			if path != "" {
				tag = contract.OGPageTag(c.ID, path)
			}
			return o.purge(ctx, contract.TagsPurged, []string{tag})
		}}
	proxies := &proxy.Handler{Store: o.proxies, Cursors: o.cursors(box), AllowPrivate: o.cfg.AllowPrivateURLs}
	// Delivery options need a plan with them: refused before the rate
	// limit, so the refusal costs no allowance.
	delivery := func(p *auth.Principal) error { return proxy.CheckPlan(p.Org) }
	dests := &storedest.Handler{Store: o.dests, Cursors: o.cursors(box), AllowPrivate: o.cfg.AllowPrivateURLs,
		Test: o.storage.Test, Describe: storage.Describe}
	destPlan := func(p *auth.Principal) error { return storedest.CheckPlan(p.Org) }
	return append([]api.Route{
		{Method: http.MethodGet, Pattern: "/healthz", Public: true, Handler: o.healthz, Hidden: "internal: the operators' liveness probe"},
		{Method: http.MethodGet, Pattern: "/metrics", Public: true, Handler: o.metrics(), Hidden: "internal: Prometheus metrics for the operators"},
		// The purge channel authenticates edges with the edge token itself.
		{Method: http.MethodPost, Pattern: contract.StreamPath, Public: true, Handler: o.hub.ServeHTTP, Hidden: "internal: the edges' purge channel, authenticated with the edge token"},

		{Method: http.MethodPost, Pattern: "/v1/image", Permission: perm.ImagesCreate, Serve: images.Create, Doc: openapi.CreateImage},
		{Method: http.MethodPost, Pattern: "/v1/image/batch", Permission: perm.ImagesCreate, Serve: images.Batch, Doc: openapi.CreateImages},
		// Not stored, not charged: limited per organization instead
		// (PreviewLimit). Template ids start with t-, so no template is
		// "preview" (and the mux prefers this literal anyway).
		{Method: http.MethodPost, Pattern: "/v1/image/preview", Permission: perm.ImagesCreate, Serve: images.Preview, Doc: openapi.PreviewImage},
		{Method: http.MethodGet, Pattern: "/v1/image/{id}", Public: true, Serve: images.Get, Doc: openapi.GetImage},
		{Method: http.MethodDelete, Pattern: "/v1/image/{id}", Permission: perm.ImagesDelete, Serve: images.Delete, Doc: openapi.DeleteImage},
		{Method: http.MethodDelete, Pattern: "/v1/image/batch", Permission: perm.ImagesDelete, Serve: images.DeleteBatch, Doc: openapi.DeleteImages},
		{Method: http.MethodGet, Pattern: "/v1/images", Permission: perm.ImagesRead, Serve: images.List, Doc: openapi.ListImages},
		{Method: http.MethodGet, Pattern: "/v1/images/{id}", Permission: perm.ImagesRead, Serve: images.Info, Doc: openapi.GetImageInfo},
		{Method: http.MethodGet, Pattern: "/v1/image/create-and-render/{api_id}/{token}", Public: true, Serve: images.CreateAndRender, Doc: openapi.RenderSignedImage},
		{Method: http.MethodGet, Pattern: "/v1/image/create-and-render/{api_id}/{token}/{format}", Public: true, Serve: images.CreateAndRender, Doc: openapi.RenderSignedImageAs},
		// Writes an image to its storage destination (spec §4.1, §2.7): no
		// rate-limit group, like the image routes.
		{Method: http.MethodPut, Pattern: "/v1/store/{id}", Permission: perm.ImagesStore, Serve: images.Store, Doc: openapi.StoreImage},
		{Method: http.MethodGet, Pattern: "/v1/usage", Permission: perm.UsageRead, Serve: o.usageReport, Doc: openapi.GetUsage},

		{Method: http.MethodPost, Pattern: "/v1/image/{template_id}", Permission: perm.ImagesCreate, Serve: images.Create, Doc: openapi.RenderTemplate},
		{Method: http.MethodPost, Pattern: "/v1/image/{template_id}/{template_version}", Permission: perm.ImagesCreate, Serve: images.Create, Doc: openapi.RenderTemplateVersion},
		{Method: http.MethodGet, Pattern: "/v1/image/{template_id}/{token}", Public: true, Serve: images.TemplateURL, Doc: openapi.RenderSignedTemplate},
		{Method: http.MethodGet, Pattern: "/v1/image/{template_id}/{token}/{format}", Public: true, Serve: images.TemplateURL, Doc: openapi.RenderSignedTemplateAs},
		{Method: http.MethodPost, Pattern: "/v1/template", Permission: perm.TemplatesCreateUpdate, Serve: templates.Create, Doc: openapi.CreateTemplate},
		{Method: http.MethodGet, Pattern: "/v1/template", Permission: perm.TemplatesRead, Serve: templates.List, Doc: openapi.ListTemplates},
		{Method: http.MethodGet, Pattern: "/v1/template/{id}", Permission: perm.TemplatesRead, Serve: templates.Versions, Doc: openapi.ListTemplateVersions},
		{Method: http.MethodPost, Pattern: "/v1/template/{id}", Permission: perm.TemplatesCreateUpdate, Serve: templates.Update, Doc: openapi.UpdateTemplate},
		{Method: http.MethodDelete, Pattern: "/v1/template/{id}", Permission: perm.TemplatesDelete, Serve: templates.Delete, Doc: openapi.DeleteTemplate},
		// Signed with the caller's own key: its first GET renders as that key.
		{Method: http.MethodPost, Pattern: "/v1/template/{id}/signed-url", Permission: perm.ImagesCreate, Serve: images.SignTemplateURL, Doc: openapi.SignTemplateURL},

		{Method: http.MethodGet, Pattern: "/v1/og/{domain_id}", Public: true, Handler: o.og.ServeHTTP, Doc: openapi.GetOGImageOfRoot},
		{Method: http.MethodGet, Pattern: "/v1/og/{domain_id}/{path...}", Public: true, Handler: o.og.ServeHTTP, Doc: openapi.GetOGImage},
		{Method: http.MethodPost, Pattern: "/v1/og-configs", Permission: perm.OGConfigsCreateUpdate, Group: ratelimit.OGConfigWrite, Serve: ogConfigs.Create, Doc: openapi.CreateOGConfig},
		{Method: http.MethodGet, Pattern: "/v1/og-configs", Permission: perm.OGConfigsRead, Group: ratelimit.OGConfigRead, Serve: ogConfigs.List, Doc: openapi.ListOGConfigs},
		{Method: http.MethodGet, Pattern: "/v1/og-configs/{id}", Permission: perm.OGConfigsRead, Group: ratelimit.OGConfigRead, Serve: ogConfigs.Get, Doc: openapi.GetOGConfig},
		{Method: http.MethodPost, Pattern: "/v1/og-configs/{id}", Permission: perm.OGConfigsCreateUpdate, Group: ratelimit.OGConfigWrite, Serve: ogConfigs.Update, Doc: openapi.UpdateOGConfig},
		{Method: http.MethodDelete, Pattern: "/v1/og-configs/{id}", Permission: perm.OGConfigsDelete, Group: ratelimit.OGConfigWrite, Serve: ogConfigs.Delete, Doc: openapi.DeleteOGConfig},
		{Method: http.MethodPost, Pattern: "/v1/og-configs/{id}/refresh", Permission: perm.OGConfigsCreateUpdate, Group: ratelimit.OGConfigWrite, Serve: ogConfigs.Refresh, Doc: openapi.RefreshOGConfig},
		{Method: http.MethodGet, Pattern: "/v1/og-configs/{id}/preview", Permission: perm.OGConfigsRead, Group: ratelimit.OGConfigRead, Serve: ogConfigs.Preview, Doc: openapi.PreviewOGConfig},

		{Method: http.MethodPost, Pattern: "/v1/proxies", Permission: perm.ProxiesCreateUpdate, Group: ratelimit.ProxyWrite, Check: delivery, Serve: proxies.Create, Doc: openapi.CreateProxy},
		{Method: http.MethodGet, Pattern: "/v1/proxies", Permission: perm.ProxiesRead, Group: ratelimit.ProxyRead, Check: delivery, Serve: proxies.List, Doc: openapi.ListProxies},
		{Method: http.MethodGet, Pattern: "/v1/proxies/{id}", Permission: perm.ProxiesRead, Group: ratelimit.ProxyRead, Check: delivery, Serve: proxies.Get, Doc: openapi.GetProxy},
		{Method: http.MethodPost, Pattern: "/v1/proxies/{id}", Permission: perm.ProxiesCreateUpdate, Group: ratelimit.ProxyWrite, Check: delivery, Serve: proxies.Update, Doc: openapi.UpdateProxy},
		{Method: http.MethodDelete, Pattern: "/v1/proxies/{id}", Permission: perm.ProxiesDelete, Group: ratelimit.ProxyWrite, Check: delivery, Serve: proxies.Delete, Doc: openapi.DeleteProxy},

		{Method: http.MethodPost, Pattern: "/v1/storage-destinations", Permission: perm.StorageDestinationsCreateUpdate, Group: ratelimit.StorageDestinationWrite, Check: destPlan, Serve: dests.Create, Doc: openapi.CreateStorageDestination},
		{Method: http.MethodGet, Pattern: "/v1/storage-destinations", Permission: perm.StorageDestinationsRead, Group: ratelimit.StorageDestinationRead, Check: destPlan, Serve: dests.List, Doc: openapi.ListStorageDestinations},
		{Method: http.MethodGet, Pattern: "/v1/storage-destinations/aws-external-id", Permission: perm.StorageDestinationsRead, Group: ratelimit.StorageDestinationRead, Check: destPlan, Serve: dests.ExternalID, Doc: openapi.GetAWSExternalID},
		{Method: http.MethodGet, Pattern: "/v1/storage-destinations/{id}", Permission: perm.StorageDestinationsRead, Group: ratelimit.StorageDestinationRead, Check: destPlan, Serve: dests.Get, Doc: openapi.GetStorageDestination},
		{Method: http.MethodPost, Pattern: "/v1/storage-destinations/{id}", Permission: perm.StorageDestinationsCreateUpdate, Group: ratelimit.StorageDestinationWrite, Check: destPlan, Serve: dests.Update, Doc: openapi.UpdateStorageDestination},
		{Method: http.MethodDelete, Pattern: "/v1/storage-destinations/{id}", Permission: perm.StorageDestinationsDelete, Group: ratelimit.StorageDestinationWrite, Check: destPlan, Serve: dests.Delete, Doc: openapi.DeleteStorageDestination},

		{Method: http.MethodPost, Pattern: "/v1/api-keys", Permission: perm.APIKeysCreateUpdate, Group: ratelimit.APIKeyWrite, Serve: keys.Create, Doc: openapi.CreateAPIKey},
		{Method: http.MethodGet, Pattern: "/v1/api-keys", Permission: perm.APIKeysRead, Group: ratelimit.APIKeyRead, Serve: keys.List, Doc: openapi.ListAPIKeys},
		{Method: http.MethodGet, Pattern: "/v1/api-keys/{id}", Permission: perm.APIKeysRead, Group: ratelimit.APIKeyRead, Serve: keys.Get, Doc: openapi.GetAPIKey},
		{Method: http.MethodPost, Pattern: "/v1/api-keys/{id}", Permission: perm.APIKeysCreateUpdate, Group: ratelimit.APIKeyWrite, Serve: keys.Update, Doc: openapi.UpdateAPIKey},
		{Method: http.MethodDelete, Pattern: "/v1/api-keys/{id}", Permission: perm.APIKeysDelete, Group: ratelimit.APIKeyWrite, Serve: keys.Delete, Doc: openapi.DeleteAPIKey},

		// MCP connections delegate a key's permissions: the keys' permissions and limits.
		{Method: http.MethodGet, Pattern: "/v1/oauth-grants", Permission: perm.APIKeysRead, Group: ratelimit.APIKeyRead, Serve: grants.List, Doc: openapi.ListOAuthGrants},
		{Method: http.MethodDelete, Pattern: "/v1/oauth-grants/{id}", Permission: perm.APIKeysDelete, Group: ratelimit.APIKeyWrite, Serve: grants.Revoke, Doc: openapi.RevokeOAuthGrant},
	}, o.oauthRoutes()...)
}
