// Package api is the origin's HTTP machinery: one route table that names the
// permission and rate-limit group of every route, and the middleware every
// request passes through (request id, recovery, access log, metrics,
// minimum body transfer rate, authentication, permission check, management
// rate limit, strict query strings), with unknown routes and wrong methods
// answered in the standard error body. A route's handler (HandlerFunc)
// returns its error, and the router writes it in the standard body once,
// unless the answer already started. Its Listener gives the standard body
// to the answers net/http writes before any handler runs, and lets a
// forced stop close every connection.
package api
