package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	smithy "github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/pictorhq/pictor/origin/egress"
)

// Kinds of failure. Every error of a write or a connection test is an
// *Error whose Kind is one of these (match with errors.Is), or a
// *ConnectionError (ErrInvalidConnection), or the caller's context error.
var (
	// ErrInvalidConnection: a setting cannot be used; nothing was sent.
	ErrInvalidConnection = errors.New("invalid connection settings")
	// ErrBucketNotFound: the provider says the bucket does not exist
	// (NoSuchBucket).
	ErrBucketNotFound = errors.New("bucket does not exist")
	// ErrCredentials: the access key id is unknown or the secret does not
	// match it (InvalidAccessKeyId, SignatureDoesNotMatch, an invalid or
	// expired session token).
	ErrCredentials = errors.New("credentials not accepted")
	// ErrAccessDenied: the credentials are valid but may not write there
	// (AccessDenied).
	ErrAccessDenied = errors.New("access denied")
	// ErrRoleNotAssumable: STS refused to let the service assume the
	// organization's role (aws_s3), or could not be reached.
	ErrRoleNotAssumable = errors.New("role cannot be assumed")
	// ErrServiceCredentials: the service has no AWS credentials of its own
	// to assume roles with (an operator's configuration problem).
	ErrServiceCredentials = errors.New("no service AWS credentials to assume roles with")
	// ErrWrongRegion: the bucket lives in another region than the
	// connection names (PermanentRedirect, AuthorizationHeaderMalformed).
	ErrWrongRegion = errors.New("bucket is in another region")
	// ErrNotS3: something answered, but not as an S3 API: an HTML or JSON
	// page, a success without an ETag, a body the SDK cannot read.
	ErrNotS3 = errors.New("endpoint is not an S3 API")
	// ErrTLS: the TLS handshake failed (untrusted or mismatched
	// certificate, plain HTTP on an https endpoint, ...).
	ErrTLS = errors.New("TLS failure")
	// ErrTimeout: no complete answer within the operation's bound.
	ErrTimeout = errors.New("timed out")
	// ErrUnreachable: the host name does not resolve or no connection
	// could be made (refused, reset, no route).
	ErrUnreachable = errors.New("endpoint unreachable")
	// ErrBlockedEndpoint: the endpoint resolves to a loopback, private or
	// cloud metadata address, which destinations may not use.
	ErrBlockedEndpoint = errors.New("endpoint address not allowed")
	// ErrServerError: the provider kept failing (HTTP 5xx or throttling)
	// through every attempt.
	ErrServerError = errors.New("storage server error")
	// ErrRejected: the provider refused the request for another reason
	// (an S3 error code not listed above).
	ErrRejected = errors.New("request rejected")
	// ErrWrite: the write failed on our side (the body could not be read,
	// or was not the announced size).
	ErrWrite = errors.New("write failed")
)

// kinds lists every Kind with its metric label.
var kinds = []struct {
	kind  error
	label string
}{
	{ErrInvalidConnection, "invalid_connection"},
	{ErrBucketNotFound, "bucket_not_found"},
	{ErrCredentials, "credentials"},
	{ErrAccessDenied, "access_denied"},
	{ErrRoleNotAssumable, "role_not_assumable"},
	{ErrServiceCredentials, "service_credentials"},
	{ErrWrongRegion, "wrong_region"},
	{ErrNotS3, "not_s3"},
	{ErrTLS, "tls"},
	{ErrTimeout, "timeout"},
	{ErrUnreachable, "unreachable"},
	{ErrBlockedEndpoint, "blocked_endpoint"},
	{ErrServerError, "server_error"},
	{ErrRejected, "rejected"},
	{ErrWrite, "write"},
}

// kindLabel is err's metric label: "ok", a kind's label, "canceled" or
// "other".
func kindLabel(err error) string {
	if err == nil {
		return "ok"
	}
	for _, k := range kinds {
		if errors.Is(err, k.kind) {
			return k.label
		}
	}
	if errors.Is(err, context.Canceled) {
		return "canceled"
	}
	return "other"
}

// Error is a failed write or connection test: its Kind, what happened in
// words for the organization (Message, never holding a secret or a
// signature: the API stores it as last_test_error) and the underlying
// error for logs.
type Error struct {
	Kind    error  // one of the Err* kinds above
	Message string // one line in plain words
	Err     error  // the SDK's or the network's error; may be nil
}

func (e *Error) Error() string {
	if e.Err == nil {
		return "storage: " + e.Message
	}
	return "storage: " + e.Message + ": " + e.Err.Error()
}

// Unwrap lets errors.Is match the Kind and errors.As reach the SDK's error.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// ConnectionError is a Connection setting this package cannot use. It
// matches ErrInvalidConnection.
type ConnectionError struct {
	Field   string // as the API spells it: region, endpoint, bucket, ...
	Problem string // "must be ...", "is required"
}

func (e *ConnectionError) Error() string {
	return "storage: invalid connection: " + e.Field + " " + e.Problem
}

// Unwrap lets errors.Is match ErrInvalidConnection.
func (e *ConnectionError) Unwrap() error { return ErrInvalidConnection }

func invalid(field, format string, args ...any) *ConnectionError {
	return &ConnectionError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// maxDescription bounds Describe's answer, in bytes.
const maxDescription = 500

// Describe puts err in words for the organization: what the API stores as
// a destination's last_test_error and answers in a store result. It holds
// no secret, signature or server-sent text, only this package's own
// sentences with the provider's error code and HTTP status.
func Describe(err error) string {
	var s string
	var e *Error
	var ce *ConnectionError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		s = e.Message
	case errors.As(err, &ce):
		s = "invalid connection setting " + ce.Field + ": " + ce.Problem
	case errors.Is(err, context.Canceled):
		s = "canceled before it finished"
	case errors.Is(err, context.DeadlineExceeded):
		s = "timed out"
	default:
		s = "unexpected error"
	}
	for len(s) > maxDescription {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// opInfo is what the words of an error need to know of the operation.
type opInfo struct {
	bucket    string
	keyPrefix string
	host      string // the endpoint's host, as people know it
	stsHost   string // aws_s3: STS's host
	region    string
	roleARN   string
	timeout   time.Duration
}

// notS3Answer is an answer that no S3 API gives: see checkAnswer.
type notS3Answer struct {
	status      int
	contentType string
	missingETag bool
}

func (a *notS3Answer) Error() string {
	if a.missingETag {
		return fmt.Sprintf("HTTP %d answer without an ETag", a.status)
	}
	return fmt.Sprintf("HTTP %d answer of type %q", a.status, a.contentType)
}

// classify turns an error of the SDK (or of our own middleware) into an
// *Error. A cancellation of the caller's context is returned as is.
func classify(ctx context.Context, err error, op opInfo) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return err
	}
	wrap := func(kind error, format string, args ...any) *Error {
		return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Err: err}
	}

	var be *bodyError
	if errors.As(err, &be) {
		switch {
		case be.err != nil:
			return wrap(ErrWrite, "the file to write could not be read")
		case be.long:
			return wrap(ErrWrite, "the file to write was longer than the announced %d bytes", be.want)
		}
		return wrap(ErrWrite, "the file to write was %d bytes, not the announced %d", be.got, be.want)
	}
	if errors.Is(err, errNoServiceCredentials) {
		return wrap(ErrServiceCredentials, "the service has no AWS credentials of its own to assume role %s with (a configuration problem of the service, not of the destination)", op.roleARN)
	}

	// aws_s3: credentials come from STS; its failures are the role's.
	if stsErr := findSTSError(err); stsErr != nil {
		if code, ok := apiCode(stsErr); ok {
			return wrap(ErrRoleNotAssumable, "role %s cannot be assumed (%s from STS): its trust policy must allow the service's AWS account with the organization's external id", op.roleARN, code)
		}
		if network, _ := describeNetwork(stsErr, op.stsHost, op.timeout); network != "" {
			return wrap(ErrRoleNotAssumable, "role %s cannot be assumed: %s", op.roleARN, network)
		}
		return wrap(ErrRoleNotAssumable, "role %s cannot be assumed: STS failed", op.roleARN)
	}

	var answer *notS3Answer
	if errors.As(err, &answer) {
		if answer.missingETag {
			return wrap(ErrNotS3, "%s answered HTTP %d without an ETag, which no S3 API does: check that the endpoint is the S3 API", op.host, answer.status)
		}
		return wrap(ErrNotS3, "%s answered HTTP %d with %s, not an S3 API response: check that the endpoint is the S3 API", op.host, answer.status, mediaType(answer.contentType))
	}

	if network, kind := describeNetwork(err, op.host, op.timeout); kind != nil {
		return wrap(kind, "%s", network)
	}

	if code, ok := apiCode(err); ok {
		status := httpStatus(err)
		switch code {
		case "NoSuchBucket":
			return wrap(ErrBucketNotFound, "bucket %q does not exist at %s (NoSuchBucket)", op.bucket, op.host)
		case "InvalidAccessKeyId", "XAdminUserNotFound": // the second is versitygw's
			return wrap(ErrCredentials, "the access key id is not known to %s (%s): check the access key id", op.host, code)
		case "SignatureDoesNotMatch":
			return wrap(ErrCredentials, "the secret access key does not match the access key id (SignatureDoesNotMatch): check the secret access key")
		case "InvalidToken", "ExpiredToken", "TokenRefreshRequired", "InvalidSecurity":
			return wrap(ErrCredentials, "%s refused the session credentials (%s)", op.host, code)
		case "AccessDenied", "AllAccessDisabled", "AccountProblem", "Forbidden":
			where := fmt.Sprintf("bucket %q", op.bucket)
			if op.keyPrefix != "" {
				where += fmt.Sprintf(" under %q", op.keyPrefix+"/")
			}
			return wrap(ErrAccessDenied, "access denied writing to %s (%s): the credentials must allow s3:PutObject there", where, code)
		case "PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException":
			msg := fmt.Sprintf("bucket %q is not in region %s (%s)", op.bucket, op.region, code)
			if r := bucketRegion(err); r != "" {
				msg += ": it is in " + r
			}
			return wrap(ErrWrongRegion, "%s", msg)
		case "SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequests", "TooManyRequestsException", "ServiceUnavailable", "InternalError":
			return wrap(ErrServerError, "%s kept failing (%s, HTTP %d) through every attempt: try again later", op.host, code, status)
		}
		if status >= 500 || status == http.StatusTooManyRequests {
			return wrap(ErrServerError, "%s kept failing (%s, HTTP %d) through every attempt: try again later", op.host, code, status)
		}
		if status == http.StatusForbidden {
			return wrap(ErrAccessDenied, "access denied writing to bucket %q (%s, HTTP 403)", op.bucket, code)
		}
		return wrap(ErrRejected, "%s refused the write (%s, HTTP %d)", op.host, code, status)
	}

	var de *smithy.DeserializationError
	if errors.As(err, &de) {
		return wrap(ErrNotS3, "%s answered with something that is not an S3 API response: check that the endpoint is the S3 API", op.host)
	}
	return wrap(ErrRejected, "the write to %s failed", op.host)
}

// describeNetwork words a transport failure reaching host and gives its
// Kind; "" and nil if err is not one.
func describeNetwork(err error, host string, timeout time.Duration) (text string, kind error) {
	var (
		dns        *net.DNSError
		opErr      *net.OpError
		timeoutErr interface{ Timeout() bool }
	)
	switch tlsFault := egress.TLSFaultOf(err); {
	case errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &timeoutErr) && timeoutErr.Timeout() && !errors.As(err, &dns):
		return fmt.Sprintf("no answer from %s within %s", host, timeout), ErrTimeout
	case tlsFault == egress.UnknownAuthority:
		return fmt.Sprintf("TLS with %s failed: its certificate is not signed by a trusted authority", host), ErrTLS
	case tlsFault == egress.WrongHost:
		return fmt.Sprintf("TLS with %s failed: its certificate is not valid for that host name", host), ErrTLS
	case tlsFault == egress.InvalidCertificate:
		return fmt.Sprintf("TLS with %s failed: its certificate is expired or otherwise invalid", host), ErrTLS
	case tlsFault == egress.Unverified:
		return fmt.Sprintf("TLS with %s failed: its certificate could not be verified", host), ErrTLS
	case errors.Is(err, http.ErrSchemeMismatch), tlsFault == egress.NotTLS:
		return fmt.Sprintf("TLS with %s failed: it answered plain HTTP on an https endpoint", host), ErrTLS
	case tlsFault == egress.HandshakeRefused:
		return fmt.Sprintf("TLS with %s failed: the server refused the handshake", host), ErrTLS
	case errors.Is(err, egress.ErrBlockedAddress):
		return fmt.Sprintf("%s resolves to a loopback, private or internal address, which storage destinations may not use", host), ErrBlockedEndpoint
	case errors.As(err, &dns), errors.Is(err, egress.ErrResolve):
		return fmt.Sprintf("cannot resolve host %s", host), ErrUnreachable
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("connection to %s refused", host), ErrUnreachable
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Sprintf("%s closed the connection", host), ErrUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Sprintf("no route to %s", host), ErrUnreachable
	case errors.As(err, &opErr):
		return fmt.Sprintf("cannot connect to %s", host), ErrUnreachable
	}
	return "", nil
}

// networkKind is the Kind of a transport failure (describeNetwork's), nil
// for another error.
func networkKind(err error) error {
	_, kind := describeNetwork(err, "", 0)
	return kind
}

// apiCode is the S3 or STS error code in err's chain.
func apiCode(err error) (string, bool) {
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() != "" {
		return ae.ErrorCode(), true
	}
	return "", false
}

func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// bucketRegion is the region S3 says the bucket is in (x-amz-bucket-region
// of a redirect or a wrong-region answer), "" if it does not say.
func bucketRegion(err error) string {
	var re interface{ HTTPResponse() *smithyhttp.Response }
	if !errors.As(err, &re) || re.HTTPResponse() == nil {
		return ""
	}
	r := re.HTTPResponse().Header.Get("X-Amz-Bucket-Region")
	if !awsRegionShape.MatchString(r) {
		return ""
	}
	return r
}

// findSTSError is the STS operation error in err's chain: credentials of
// aws_s3 are retrieved inside the S3 operation, so STS's error comes
// wrapped in S3's.
func findSTSError(err error) error {
	var found error
	walk(err, func(e error) bool {
		if oe, ok := e.(*smithy.OperationError); ok && oe.ServiceID == "STS" {
			found = oe
			return true
		}
		return false
	})
	return found
}

// walk calls f on err and on every error it wraps, depth first, until f
// returns true.
func walk(err error, f func(error) bool) bool {
	if err == nil {
		return false
	}
	if f(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return walk(u.Unwrap(), f)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if walk(e, f) {
				return true
			}
		}
	}
	return false
}

// mediaType words a Content-Type for an error message.
func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	switch {
	case mt == "":
		return "a body of no declared type"
	case strings.Contains(mt, "html"):
		return "an HTML page"
	case strings.Contains(mt, "json"):
		return "JSON"
	}
	if len(mt) > 64 {
		mt = mt[:64]
	}
	return "a " + mt + " body"
}
