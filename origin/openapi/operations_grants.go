package openapi

import "github.com/getkin/kin-openapi/openapi3"

// The MCP connections (OAuth grants) of the organization: each lets an
// assistant act through the MCP endpoint with some of one API key's
// permissions.

const (
	schOAuthGrant     = "OAuthGrant"
	schOAuthGrantList = "OAuthGrantList"
)

func (s *spec) defineOAuthGrants() {
	s.schema(schOAuthGrant, withExamples(object("An MCP connection: what a key's owner let an assistant (an OAuth client) do. No token or secret is ever shown.",
		req("id", uuidString("The connection's id, used in /v1/oauth-grants/{id}.")),
		req("client_id", str("The OAuth client's id, from its registration.")),
		req("client_name", nullable(str("The name the client gave itself at registration (chosen by the client, not verified); null when none, or when the client was removed."))),
		reqRef("permissions", openapi3.NewSchemaRef("", arrayOf("The permissions approved, sorted; the client acts with those the key still holds.", s.ref(schPermission)))),
		req("key_id", uuidString("The id of the API key the client acts as.")),
		req("api_id", nullable(uuidString("That key's API ID; null when the key is gone."))),
		req("key_name", nullable(str("That key's name; null when the key is gone."))),
		req("created_at", timestamp("When the connection was approved")),
		req("last_used_at", nullable(timestamp("When one of its tokens was last used (written down at most once an hour); null until then"))),
	), map[string]any{"id": "0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8d", "client_id": "3c6e0b8a-5f1d-4e2b-9a7c-8d0f1e2a3b4c", "client_name": "Claude",
		"permissions": []any{"images:create", "images:read"}, "key_id": "0190b2c4-7a1e-7d2f-9c3b-2f4e5a6b7c8e",
		"api_id": "4a8f2e1c-3b5d-4e6f-8a9b-0c1d2e3f4a5b", "key_name": "CI",
		"created_at": "2026-03-14T15:09:26.000Z", "last_used_at": "2026-03-14T16:00:00.000Z"}))
	s.listEnvelope(schOAuthGrantList, "One page of live MCP connections, newest first (spec §2.5 list envelope). Revoked and expired ones are not listed.", "The connections.", schOAuthGrant)
}

// oauthGrants are the organization's MCP connections.
var oauthGrants = resource{tag: tagConnections, name: "connection", missing: "No live connection with this id in the organization.",
	one: schOAuthGrant, page: schOAuthGrantList}

// ListOAuthGrants documents GET /v1/oauth-grants.
var ListOAuthGrants = describe("listOAuthGrants", oauthGrants.list(crud{
	summary:     "List MCP connections",
	description: "The assistants connected to the MCP endpoint through OAuth, each acting as the API key that approved it. Needs api_keys:read: a connection is a delegation of a key.",
	ok:          "One page of connections.",
}))

// RevokeOAuthGrant documents DELETE /v1/oauth-grants/{id}.
var RevokeOAuthGrant = describe("revokeOAuthGrant", oauthGrants.delete(crud{
	summary: "Revoke an MCP connection",
	description: "Revokes the connection for good: its access and refresh tokens are refused from now on, and the assistant must ask for a new approval. " +
		"Needs api_keys:delete and every permission the connection grants, as disabling a key does. A revoked connection is no longer listed, and revoking it again is a 404.",
	ok:     "Revoked.",
	errors: map[int]string{403: "Missing permission, or insufficient authority over the connection's permissions."},
}))
