// Package openapi builds Pictor's OpenAPI 3.1 description of its public REST
// API from the origin's route table: each route carries its Operation (a Doc
// of this package, in operations_*.go) or is Hidden with a reason, and every
// Operation is a route's, or Build fails. The image creation parameters come
// from the table shared with the MCP tools (origin/imageparams/schema). The
// generated document is committed, embedded, in origin/contract/openapi.
package openapi
