// Package mcpserver is Pictor's MCP endpoint: tools for AI assistants over
// the streamable HTTP transport, stateless, answering plain JSON. Each tool
// runs its REST twin in-process through the origin's router for the caller
// of the bearer token (api.WithCaller), so validation, credits, plan rules
// and the organization's management rate limits are exactly REST's.
package mcpserver
