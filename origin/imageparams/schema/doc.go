// Package schema is the one description of the image creation parameters
// (spec §2.2) as JSON Schema: names, types, ranges, enumerations, examples
// and what a caller needs to know to use them. The MCP tools
// (origin/mcpserver) and the OpenAPI document (origin/openapi) both derive
// their schemas from it, and its tests hold it to imageparams.Parse: every
// property is a parameter Parse reads, and every field of Params is set by
// some parameter of the table.
package schema
