// Package api is the origin's HTTP machinery: one route table that names the
// permission and rate-limit group of every route, and the middleware every
// request passes through (request id, recovery, access log, metrics,
// authentication, permission check, management rate limit), with unknown
// routes and wrong methods answered in the standard error body.
package api
