// Package storage writes rendered files into an organization's own
// S3-compatible bucket (a storage destination): it maps each provider's
// connection settings to its real endpoint (endpoints.go), builds the
// client with aws-sdk-go-v2 (access keys, or an assumed AWS role with the
// organization's external id), runs the connection test and writes
// objects, retrying what S3 says is worth retrying.
//
// Details: docs/internals.md, "origin/storage".
package storage
