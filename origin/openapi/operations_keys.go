package openapi

import "github.com/getkin/kin-openapi/openapi3"

// The operations of API keys: each is a route's Doc in the origin's table.

// apiKeys are the organization's API keys.
var apiKeys = resource{tag: tagKeys, name: "API key", missing: "No such key in the organization.",
	body: "The key.", request: schKeyRequest, one: schKey, page: schKeyList}

// CreateAPIKey documents POST /v1/api-keys.
var CreateAPIKey = describe("createAPIKey", apiKeys.create(crud{
	summary:     "Create an API key",
	description: "The new key's permissions must be no broader than the caller's. An organization holds at most 100 keys, disabled ones included.",
	ok:          "Created: the key with its secret, shown only now.", schema: schKeyCreated,
	errors: map[int]string{403: "Missing permission; insufficient authority (the request grants permissions the caller lacks); or the limit of 100 keys."},
}))

// ListAPIKeys documents GET /v1/api-keys.
var ListAPIKeys = describe("listAPIKeys", func(s *spec) operation {
	op := apiKeys.list(crud{summary: "List API keys", ok: "One page of keys."})(s)
	op.params = append(op.params,
		&openapi3.ParameterRef{Value: query("include_disabled", "true (or 1) lists disabled keys too (default false).", withDefault(false, boolean("")))},
		&openapi3.ParameterRef{Value: &openapi3.Parameter{Name: "with_permission", In: openapi3.ParameterInQuery,
			Description: "Only keys holding every permission named (repeat the parameter; all-future keys hold them all).",
			Style:       openapi3.SerializationForm, Explode: openapi3.Ptr(true),
			Schema: openapi3.NewSchemaRef("", arrayOf("", s.ref(schPermission)))}},
	)
	return op
})

// GetAPIKey documents GET /v1/api-keys/{id}.
var GetAPIKey = describe("getAPIKey", apiKeys.get(crud{summary: "Get an API key", ok: "The key (disabled keys included), without its secret."}))

// UpdateAPIKey documents POST /v1/api-keys/{id}.
var UpdateAPIKey = describe("updateAPIKey", apiKeys.update(crud{
	summary:     "Update an API key",
	description: "Replaces the key (no rotation: the credentials stay). The caller needs authority over both the key's current permissions and the requested ones.",
	ok:          "Updated, without its secret.",
	errors:      map[int]string{403: "Missing permission, or insufficient authority over the key's or the requested permissions."},
}))

// DeleteAPIKey documents DELETE /v1/api-keys/{id}.
var DeleteAPIKey = describe("deleteAPIKey", apiKeys.delete(crud{
	summary:     "Disable an API key",
	description: "Disables the key (idempotent): it stays listed with include_disabled and keeps its slot. Its MCP connections are revoked and what its signed URLs produced is purged.",
	ok:          "Disabled.",
	errors:      map[int]string{403: "Missing permission, or insufficient authority over the key's permissions."},
}))
