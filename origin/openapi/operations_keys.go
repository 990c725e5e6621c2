package openapi

import "github.com/getkin/kin-openapi/openapi3"

// The operations of API keys: each is a route's Doc in the origin's table.

// CreateAPIKey documents POST /v1/api-keys.
var CreateAPIKey = describe("createAPIKey", func(s *spec) operation {
	return operation{
		tag: tagKeys, summary: "Create an API key",
		description: "The new key's permissions must be no broader than the caller's. An organization holds at most 100 keys, disabled ones included.",
		body:        s.jsonBody("The key.", schKeyRequest),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("Created: the key with its secret, shown only now.", schKeyCreated),
			400: s.invalid(),
			403: s.errorResponse("Missing permission; insufficient authority (the request grants permissions the caller lacks); or the limit of 100 keys."),
		},
	}
})

// ListAPIKeys documents GET /v1/api-keys.
var ListAPIKeys = describe("listAPIKeys", func(s *spec) operation {
	return operation{
		tag: tagKeys, summary: "List API keys",
		params: append(s.refs(parCount, parPageStart),
			&openapi3.ParameterRef{Value: query("include_disabled", "true (or 1) lists disabled keys too (default false).", withDefault(false, boolean("")))},
			&openapi3.ParameterRef{Value: &openapi3.Parameter{Name: "with_permission", In: openapi3.ParameterInQuery,
				Description: "Only keys holding every permission named (repeat the parameter; all-future keys hold them all).",
				Style:       openapi3.SerializationForm, Explode: openapi3.Ptr(true),
				Schema: openapi3.NewSchemaRef("", arrayOf("", s.ref(schPermission)))}},
		),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("One page of keys.", schKeyList),
			400: s.invalid(),
		},
	}
})

// GetAPIKey documents GET /v1/api-keys/{id}.
var GetAPIKey = describe("getAPIKey", func(s *spec) operation {
	return operation{
		tag: tagKeys, summary: "Get an API key",
		params: params(idParam("API key")),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("The key (disabled keys included), without its secret.", schKey),
			400: s.invalid(),
			404: s.notFound("No such key in the organization."),
		},
	}
})

// UpdateAPIKey documents POST /v1/api-keys/{id}.
var UpdateAPIKey = describe("updateAPIKey", func(s *spec) operation {
	return operation{
		tag: tagKeys, summary: "Update an API key",
		description: "Replaces the key (no rotation: the credentials stay). The caller needs authority over both the key's current permissions and the requested ones.",
		params:      params(idParam("API key")),
		body:        s.jsonBody("The key.", schKeyRequest),
		responses: map[int]*openapi3.Response{
			200: s.jsonResponse("Updated, without its secret.", schKey),
			400: s.invalid(),
			403: s.errorResponse("Missing permission, or insufficient authority over the key's or the requested permissions."),
			404: s.notFound("No such key in the organization."),
		},
	}
})

// DeleteAPIKey documents DELETE /v1/api-keys/{id}.
var DeleteAPIKey = describe("deleteAPIKey", func(s *spec) operation {
	return operation{
		tag: tagKeys, summary: "Disable an API key",
		description: "Disables the key (idempotent): it stays listed with include_disabled and keeps its slot. Its MCP connections are revoked and what its signed URLs produced is purged.",
		params:      params(idParam("API key")),
		responses: map[int]*openapi3.Response{
			204: emptyResponse("Disabled."),
			400: s.invalid(),
			403: s.errorResponse("Missing permission, or insufficient authority over the key's permissions."),
			404: s.notFound("No such key in the organization."),
		},
	}
})
