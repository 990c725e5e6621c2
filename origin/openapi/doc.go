// Package openapi builds Pictor's OpenAPI 3.1 description of its public REST
// API from the origin's route table: every route of the table is documented
// here or skipped with a reason, and every documented operation is a route
// of the table, or Build fails. The image creation parameters come from the
// table shared with the MCP tools (origin/imageparams/schema). The generated
// document is committed, embedded, in origin/contract/openapi.
package openapi
