package oauth

import (
	"net/http"

	"github.com/pictorhq/pictor/origin/respond"
)

// metadataCacheControl lets clients and proxies keep the public documents
// (metadata, JWKS) for five minutes: they change only when the service is
// reconfigured or its key replaced.
const metadataCacheControl = "public, max-age=300"

// cors lets browser-based clients read the answer.
func cors(w http.ResponseWriter) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Expose-Headers", "WWW-Authenticate")
}

// Preflight answers CORS preflight requests for the metadata documents and
// the register, token, revoke and JWKS endpoints.
func (s *Server) Preflight(w http.ResponseWriter, r *http.Request) {
	cors(w)
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) scopeNames() []string {
	out := make([]string, len(s.scopes))
	for i, p := range s.scopes {
		out[i] = string(p)
	}
	return out
}

// ProtectedResourceMetadata serves the MCP endpoint's metadata (RFC 9728).
func (s *Server) ProtectedResourceMetadata(w http.ResponseWriter, r *http.Request) {
	cors(w)
	w.Header().Set("Cache-Control", metadataCacheControl)
	respond.JSON(w, r, http.StatusOK, map[string]any{
		"resource":                 s.cfg.Resource,
		"authorization_servers":    []string{s.issuer},
		"scopes_supported":         s.scopeNames(),
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "Pictor",
	})
}

// ServerMetadata serves the authorization server's metadata (RFC 8414), also
// at /.well-known/openid-configuration where some clients look.
func (s *Server) ServerMetadata(w http.ResponseWriter, r *http.Request) {
	cors(w)
	w.Header().Set("Cache-Control", metadataCacheControl)
	authMethods := []string{"none", "client_secret_basic", "client_secret_post"}
	respond.JSON(w, r, http.StatusOK, map[string]any{
		"issuer":                                         s.issuer,
		"authorization_endpoint":                         s.issuer + pathAuthorize,
		"token_endpoint":                                 s.issuer + pathToken,
		"registration_endpoint":                          s.issuer + pathRegister,
		"revocation_endpoint":                            s.issuer + pathRevoke,
		"jwks_uri":                                       s.issuer + pathJWKS,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          authMethods,
		"revocation_endpoint_auth_methods_supported":     authMethods,
		"scopes_supported":                               s.scopeNames(),
		"authorization_response_iss_parameter_supported": true,
	})
}

// JWKS serves the public signing key, and the previous ones still
// accepted, as a JWK Set.
func (s *Server) JWKS(w http.ResponseWriter, r *http.Request) {
	cors(w)
	w.Header().Set("Cache-Control", metadataCacheControl)
	respond.JSON(w, r, http.StatusOK, map[string]any{"keys": append([]jwk{s.jwk}, s.previousJWKs...)})
}
