// Package oauth is the OAuth 2.1 authorization server in front of Pictor's MCP
// endpoint: metadata (RFC 8414, RFC 9728), dynamic client registration, a
// server-rendered consent page where a person signs in with one of their API
// keys and approves a subset of its permissions, the token and revocation
// endpoints, and Verify for the EdDSA-signed access tokens it issues.
package oauth
