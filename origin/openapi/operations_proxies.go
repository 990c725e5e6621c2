package openapi

import "github.com/getkin/kin-openapi/openapi3"

// The operations of proxies: each is a route's Doc in the origin's table.

// CreateProxy documents POST /v1/proxies.
var CreateProxy = describe("createProxy", func(s *spec) operation {
	return operation{
		tag: tagProxies, summary: "Create a proxy", description: planNote,
		body: s.anyBody("The proxy.", schProxyRequest, schProxyForm),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("Created.", schProxy),
			400: s.invalid(),
		},
	}
})

// ListProxies documents GET /v1/proxies.
var ListProxies = describe("listProxies", func(s *spec) operation {
	return operation{
		tag: tagProxies, summary: "List proxies", description: planNote,
		params: s.refs(parCount, parPageStart),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("One page of proxies.", schProxyList),
			400: s.invalid(),
		},
	}
})

// GetProxy documents GET /v1/proxies/{id}.
var GetProxy = describe("getProxy", func(s *spec) operation {
	return operation{
		tag: tagProxies, summary: "Get a proxy", description: planNote,
		params: params(idParam("proxy")),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("The proxy.", schProxy),
			400: s.invalid(),
			404: s.notFound("No such proxy in the organization."),
		},
	}
})

// UpdateProxy documents POST /v1/proxies/{id}.
var UpdateProxy = describe("updateProxy", func(s *spec) operation {
	return operation{
		tag: tagProxies, summary: "Update a proxy",
		description: "Replaces the proxy. " + planNote,
		params:      params(idParam("proxy")),
		body:        s.anyBody("The proxy.", schProxyRequest, schProxyForm),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("Updated.", schProxy),
			400: s.invalid(),
			404: s.notFound("No such proxy in the organization."),
		},
	}
})

// DeleteProxy documents DELETE /v1/proxies/{id}.
var DeleteProxy = describe("deleteProxy", func(s *spec) operation {
	return operation{
		tag: tagProxies, summary: "Delete a proxy",
		description: "Images already made through it are unaffected. " + planNote,
		params:      params(idParam("proxy")),
		responses: map[int]*openapi3.Response{
			204: emptyResponse("Deleted."),
			400: s.invalid(),
			404: s.notFound("No such proxy in the organization."),
		},
	}
})
