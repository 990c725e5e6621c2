package oauth

import (
	"net/http"

	"github.com/pictorhq/pictor/origin/api"
)

// hidden is why the OpenAPI document leaves the endpoints out.
const hidden = "OAuth 2.1 authorization server of the MCP endpoint: endpoints defined by their RFCs (8414, 9728, 7591, 6749, 7009, 7517) " +
	"that clients find through their own metadata documents, not operations of the REST API"

// Routes returns every endpoint as a public route of the origin's table:
// the endpoints authenticate their callers by themselves.
func (s *Server) Routes() []api.Route {
	route := func(method, pattern string, h http.HandlerFunc, note string) api.Route {
		return api.Route{Method: method, Pattern: pattern, Public: true, Handler: h, Hidden: hidden + note}
	}
	const consent, preflight = " (the consent page, HTML)", " (CORS preflight)"
	routes := []api.Route{
		route(http.MethodGet, pathProtectedResource, s.ProtectedResourceMetadata, ""),
		route(http.MethodGet, pathServerMetadata, s.ServerMetadata, ""),
		route(http.MethodGet, pathOpenIDConfiguration, s.ServerMetadata, ""),
		route(http.MethodGet, pathJWKS, s.JWKS, ""),
		route(http.MethodPost, pathRegister, s.Register, ""),
		route(http.MethodGet, pathAuthorize, s.Authorize, consent),
		route(http.MethodPost, pathAuthorize, s.Consent, consent),
		route(http.MethodPost, pathToken, s.Token, ""),
		route(http.MethodPost, pathRevoke, s.Revoke, ""),
		route(http.MethodOptions, pathProtectedResource, s.Preflight, preflight),
		route(http.MethodOptions, pathServerMetadata, s.Preflight, preflight),
		route(http.MethodOptions, pathOpenIDConfiguration, s.Preflight, preflight),
		route(http.MethodOptions, pathJWKS, s.Preflight, preflight),
		route(http.MethodOptions, pathRegister, s.Preflight, preflight),
		route(http.MethodOptions, pathToken, s.Preflight, preflight),
		route(http.MethodOptions, pathRevoke, s.Preflight, preflight),
	}
	if s.resourcePath != "" {
		routes = append(routes,
			route(http.MethodGet, pathProtectedResource+s.resourcePath, s.ProtectedResourceMetadata, ""),
			route(http.MethodOptions, pathProtectedResource+s.resourcePath, s.Preflight, preflight))
	}
	return routes
}
