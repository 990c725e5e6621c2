// Package s3test runs a real S3-compatible server for tests: versitygw
// (pinned, built by `make test-deps` into .tools/versitygw-v1.8.0/) with
// its posix backend over a temporary directory, on a free loopback port.
// Only tests import it.
package s3test
