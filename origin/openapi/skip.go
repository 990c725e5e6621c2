package openapi

import "github.com/pictorhq/pictor/origin/contract"

// skip is a route of the table the document leaves out, and why.
type skip struct {
	reason string
	// mcp marks the routes of the MCP endpoint and its authorization
	// server, served only when MCP is on (a public URL without a path):
	// the table holds all of them or none.
	mcp bool
}

const (
	reasonOAuth = "OAuth 2.1 authorization server of the MCP endpoint: endpoints defined by their RFCs (8414, 9728, 7591, 6749, 7009, 7517) " +
		"that clients find through their own metadata documents, not operations of the REST API"
	reasonMCP = "the MCP endpoint: JSON-RPC over streamable HTTP, whose operations are MCP tools described by its own tools/list"
)

// skipped are the routes of the table that are not part of the public REST
// API. Build checks it against the table like the documentation.
var skipped = map[string]skip{
	"GET /healthz":                {reason: "internal: the operators' liveness probe"},
	"GET /metrics":                {reason: "internal: Prometheus metrics for the operators"},
	"POST " + contract.StreamPath: {reason: "internal: the edges' purge channel, authenticated with the edge token"},

	"GET /.well-known/oauth-protected-resource":         {reasonOAuth, true},
	"GET /.well-known/oauth-protected-resource/mcp":     {reasonOAuth, true},
	"GET /.well-known/oauth-authorization-server":       {reasonOAuth, true},
	"GET /.well-known/openid-configuration":             {reasonOAuth, true},
	"GET /oauth/jwks":                                   {reasonOAuth, true},
	"POST /oauth/register":                              {reasonOAuth, true},
	"GET /oauth/authorize":                              {reasonOAuth + " (the consent page, HTML)", true},
	"POST /oauth/authorize":                             {reasonOAuth + " (the consent page, HTML)", true},
	"POST /oauth/token":                                 {reasonOAuth, true},
	"POST /oauth/revoke":                                {reasonOAuth, true},
	"OPTIONS /.well-known/oauth-protected-resource":     {reasonOAuth + " (CORS preflight)", true},
	"OPTIONS /.well-known/oauth-protected-resource/mcp": {reasonOAuth + " (CORS preflight)", true},
	"OPTIONS /.well-known/oauth-authorization-server":   {reasonOAuth + " (CORS preflight)", true},
	"OPTIONS /.well-known/openid-configuration":         {reasonOAuth + " (CORS preflight)", true},
	"OPTIONS /oauth/jwks":                               {reasonOAuth + " (CORS preflight)", true},
	"OPTIONS /oauth/register":                           {reasonOAuth + " (CORS preflight)", true},
	"OPTIONS /oauth/token":                              {reasonOAuth + " (CORS preflight)", true},
	"OPTIONS /oauth/revoke":                             {reasonOAuth + " (CORS preflight)", true},
	"POST /mcp":                                         {reasonMCP, true},
	"GET /mcp":                                          {reasonMCP, true},
	"DELETE /mcp":                                       {reasonMCP, true},
	"OPTIONS /mcp":                                      {reasonMCP + " (CORS preflight)", true},
}

// Skipped returns the routes ("METHOD pattern") the document leaves out on
// purpose, with the reason. The MCP routes are among them whether or not
// the origin serves MCP.
func Skipped() map[string]string {
	out := make(map[string]string, len(skipped))
	for k, v := range skipped {
		out[k] = v.reason
	}
	return out
}
