// Package framing is the HTTP/1.1 request framing both tiers accept. A
// Checker reads a connection's bytes as they arrive, before the server's
// own parser, finds where each request and its body end, and reports the
// first byte that makes a request's framing malformed or ambiguous (RFC
// 9112): the edge (fasthttp) and the origin (net/http) give their parser
// only what it passed, so that neither reads a request a proxy in front of
// it may have read differently.
package framing
