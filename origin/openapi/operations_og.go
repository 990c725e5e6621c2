package openapi

// The operations of OG images and their configurations (the refresh is in
// ogrefresh.go): each is a route's Doc in the origin's table.

// GetOGImageOfRoot documents GET /v1/og/{domain_id}.
var GetOGImageOfRoot = describe("getOGImageOfRoot", func(s *spec) operation {
	return operation{
		tag: tagOG, summary: "Get the social-card image of a site's home page",
		description: "getOGImage for the path /.",
		params:      params(ogDomainParam()),
		responses:   s.ogResponses(),
	}
})

// GetOGImage documents GET /v1/og/{domain_id}/{path...}.
var GetOGImage = describe("getOGImage", func(s *spec) operation {
	return operation{
		tag: tagOG, summary: "Get the social-card image of a page",
		description: "Public. The social-card image of the page at the same path of the configuration's base_url, sized for the crawler that asks (by User-Agent). " +
			"The home page is /v1/og/{domain_id} (or with a final /). The query string is ignored. The page's metadata is reused until its refresh interval ends; then the current image is served at once and the page read again in the background.",
		params:    params(ogDomainParam(), pathParam("path", "The page's path on the site, which may hold further / (sent as they are, not percent-encoded).", str(""))),
		responses: s.ogResponses(),
	}
})

// ogConfigs are the organization's OG configurations.
var ogConfigs = resource{tag: tagOG, name: "OG configuration", missing: "No such configuration in the organization.",
	body: "The configuration.", request: schOGRequest, form: schOGForm, one: schOG, page: schOGList}

// sameBaseURL is the 409 of a create or update.
const sameBaseURL = "Another enabled configuration of the organization has this base_url; the message names it."

// CreateOGConfig documents POST /v1/og-configs.
var CreateOGConfig = describe("createOGConfig", ogConfigs.create(crud{summary: "Create an OG configuration", ok: "Created.",
	errors: map[int]string{404: "The template or version named is not the organization's.", 409: sameBaseURL}}))

// ListOGConfigs documents GET /v1/og-configs.
var ListOGConfigs = describe("listOGConfigs", ogConfigs.list(crud{summary: "List OG configurations", ok: "One page of configurations."}))

// GetOGConfig documents GET /v1/og-configs/{id}.
var GetOGConfig = describe("getOGConfig", ogConfigs.get(crud{summary: "Get an OG configuration", ok: "The configuration."}))

// UpdateOGConfig documents POST /v1/og-configs/{id}.
var UpdateOGConfig = describe("updateOGConfig", ogConfigs.update(crud{
	summary: "Update an OG configuration", description: "Replaces the configuration; every edge drops its images before the answer.", ok: "Updated.",
	errors: map[int]string{404: "No such configuration in the organization, or the template or version named is not the organization's.", 409: sameBaseURL},
}))

// RefreshOGConfig documents POST /v1/og-configs/{id}/refresh.
var RefreshOGConfig = describe("refreshOGConfig", (*spec).ogRefreshOperation)

// PreviewOGConfig documents GET /v1/og-configs/{id}/preview.
var PreviewOGConfig = describe("previewOGConfig", (*spec).ogPreviewOperation)

// DeleteOGConfig documents DELETE /v1/og-configs/{id}.
var DeleteOGConfig = describe("deleteOGConfig", ogConfigs.delete(crud{
	summary: "Delete an OG configuration", description: "Deletes the configuration; every edge drops its images before the answer.", ok: "Deleted.",
}))
