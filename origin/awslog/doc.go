// Package awslog hands the log lines of the AWS SDK for Go v2 to slog.
// Pictor enables only the SDK's retry lines (ClientLogMode LogRetries):
// request and response logging would log signatures and session tokens.
package awslog
