//go:build tools

// The generated client of the OpenAPI document (cmd/pictor/openapi_client_test.go)
// needs oapi-codegen's runtime: required here so go.mod pins it and the
// test builds offline from the module cache.
package main

import _ "github.com/oapi-codegen/runtime"
