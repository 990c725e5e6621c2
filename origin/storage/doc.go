// Package storage writes rendered files into an organization's own
// S3-compatible bucket (a storage destination): it maps each provider's
// connection settings to its real endpoint (endpoints.go), builds the
// client with aws-sdk-go-v2 (access keys, or an assumed AWS role with the
// organization's external id), runs the connection test and writes
// objects, retrying what S3 says is worth retrying.
//
// A Connector (New) holds what every destination shares: one HTTP
// transport whose dials go through egress.Check (no loopback, private or
// cloud metadata address unless AllowPrivate, metadata never), the
// service's own AWS identity for sts:AssumeRole, and the metrics.
// Connector.Open gives a destination's Writer (cached per settings),
// Writer.Put writes one object, and Connector.Test is the connection
// test: a small text object under <prefix>/.hcti/connection-tests/, left
// in place. Failures are *Error values whose Kind (ErrBucketNotFound,
// ErrCredentials, ErrNotS3, ErrTimeout, ...) matches with errors.Is, and
// Describe words them for last_test_error without secrets, signatures or
// server text.
//
// Tests of this and other packages get a real S3 server from s3test.
package storage
