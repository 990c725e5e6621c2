package openapi

import "github.com/getkin/kin-openapi/openapi3"

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
		path: "/v1/og/{domain_id}/{path}",
		tag:  tagOG, summary: "Get the social-card image of a page",
		description: "Public. The social-card image of the page at the same path of the configuration's base_url, sized for the crawler that asks (by User-Agent). " +
			"The home page is /v1/og/{domain_id} (or with a final /). The query string is ignored. The page's metadata is reused until its refresh interval ends; then the current image is served at once and the page read again in the background.",
		params: params(ogDomainParam(), &openapi3.Parameter{Name: "path", In: openapi3.ParameterInPath, Required: true,
			Description: "The page's path on the site, which may hold further / (sent as they are, not percent-encoded).",
			Schema:      openapi3.NewSchemaRef("", str("")), AllowReserved: false}),
		responses: s.ogResponses(),
	}
})

// CreateOGConfig documents POST /v1/og-configs.
var CreateOGConfig = describe("createOGConfig", func(s *spec) operation {
	return operation{
		tag: tagOG, summary: "Create an OG configuration",
		body: s.anyBody("The configuration.", schOGRequest, schOGForm),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("Created.", schOG),
			400: s.invalid(),
			404: s.notFound("The template or version named is not the organization's."),
			409: s.errorResponse("Another enabled configuration of the organization has this base_url; the message names it."),
		},
	}
})

// ListOGConfigs documents GET /v1/og-configs.
var ListOGConfigs = describe("listOGConfigs", func(s *spec) operation {
	return operation{
		tag: tagOG, summary: "List OG configurations",
		params: s.refs(parCount, parPageStart),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("One page of configurations.", schOGList),
			400: s.invalid(),
		},
	}
})

// GetOGConfig documents GET /v1/og-configs/{id}.
var GetOGConfig = describe("getOGConfig", func(s *spec) operation {
	return operation{
		tag: tagOG, summary: "Get an OG configuration",
		params: params(idParam("OG configuration")),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("The configuration.", schOG),
			400: s.invalid(),
			404: s.notFound("No such configuration in the organization."),
		},
	}
})

// UpdateOGConfig documents POST /v1/og-configs/{id}.
var UpdateOGConfig = describe("updateOGConfig", func(s *spec) operation {
	return operation{
		tag: tagOG, summary: "Update an OG configuration",
		description: "Replaces the configuration; every edge drops its images before the answer.",
		params:      params(idParam("OG configuration")),
		body:        s.anyBody("The configuration.", schOGRequest, schOGForm),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("Updated.", schOG),
			400: s.invalid(),
			404: s.notFound("No such configuration in the organization, or the template or version named is not the organization's."),
			409: s.errorResponse("Another enabled configuration of the organization has this base_url; the message names it."),
		},
	}
})

// RefreshOGConfig documents POST /v1/og-configs/{id}/refresh.
var RefreshOGConfig = describe("refreshOGConfig", (*spec).ogRefreshOperation)

// DeleteOGConfig documents DELETE /v1/og-configs/{id}.
var DeleteOGConfig = describe("deleteOGConfig", func(s *spec) operation {
	return operation{
		tag: tagOG, summary: "Delete an OG configuration",
		description: "Deletes the configuration; every edge drops its images before the answer.",
		params:      params(idParam("OG configuration")),
		responses: map[int]*openapi3.Response{
			204: emptyResponse("Deleted."),
			400: s.invalid(),
			404: s.notFound("No such configuration in the organization."),
		},
	}
})
