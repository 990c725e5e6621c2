// Package apidocs is the reference page of Pictor's REST API at /docs: a
// static HTML page that renders the OpenAPI document (GET /v1/openapi.json)
// with Redoc, whose standalone bundle, pinned at RedocVersion, is embedded
// with its licenses. It lives under origin/contract so the edge can serve
// it; `make apidocs` refetches the bundle (fetch-redoc.sh).
package apidocs
