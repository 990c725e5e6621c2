package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/storage"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// The service's own AWS identity in these tests, which signs AssumeRole.
const (
	serviceKey    = "AKIDPICTORSERVICE"
	serviceSecret = "pictor-service-secret-key-abcdef"
	testRoleARN   = "arn:aws:iam::123456789012:role/pictor-writer"
	testExternal  = "pictor-0196f5d2-7c1e-7a3b-9c4d-1234567890ab"
)

// fakeSTS speaks STS's AssumeRole query API: it lets serviceKey assume
// roleARN when the request carries externalID, and issues the
// credentials it holds.
type fakeSTS struct {
	*httptest.Server
	roleARN, externalID string
	key, secret, token  string // what it issues

	mu    sync.Mutex
	calls []url.Values
}

func newFakeSTS(t *testing.T, key, secret, token string) *fakeSTS {
	f := &fakeSTS{roleARN: testRoleARN, externalID: testExternal, key: key, secret: secret, token: token}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSTS) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		stsError(w, http.StatusBadRequest, "MalformedInput", err.Error())
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, r.PostForm)
	f.mu.Unlock()
	auth := r.Header.Get("Authorization")
	switch {
	case r.Method != http.MethodPost || r.PostForm.Get("Action") != "AssumeRole" || r.PostForm.Get("Version") != "2011-06-15":
		stsError(w, http.StatusBadRequest, "InvalidAction", "not AssumeRole")
	case !strings.Contains(auth, "Credential="+serviceKey+"/") || !strings.Contains(auth, "/sts/aws4_request"):
		stsError(w, http.StatusForbidden, "InvalidClientTokenId", "The security token included in the request is invalid.")
	case r.PostForm.Get("RoleArn") != f.roleARN, r.PostForm.Get("ExternalId") != f.externalID:
		stsError(w, http.StatusForbidden, "AccessDenied", "User: arn:aws:iam::999999999999:user/pictor is not authorized to perform: sts:AssumeRole on resource: "+r.PostForm.Get("RoleArn"))
	default:
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>`+
			`<AssumedRoleUser><AssumedRoleId>AROAFAKE:%s</AssumedRoleId><Arn>arn:aws:sts::123456789012:assumed-role/pictor-writer/%s</Arn></AssumedRoleUser>`+
			`<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>`+
			`</AssumeRoleResult><ResponseMetadata><RequestId>fake</RequestId></ResponseMetadata></AssumeRoleResponse>`,
			r.PostForm.Get("RoleSessionName"), r.PostForm.Get("RoleSessionName"), f.key, f.secret, f.token, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}
}

func stsError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>fake</RequestId></ErrorResponse>`, code, msg)
}

func (f *fakeSTS) requests() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]url.Values(nil), f.calls...)
}

// awsConfig points aws_s3 at the fake STS and its S3 requests at gw.
func awsConfig(logs *logBuffer, sts *fakeSTS, gw *s3test.Server) storage.Config {
	cfg := testConfig(logs)
	cfg.STSEndpoint = sts.URL
	cfg.STSCredentials = credentials.NewStaticCredentialsProvider(serviceKey, serviceSecret, "")
	cfg.EndpointOverride = gw.URL
	return cfg
}

func awsConnection(bucket string) storage.Connection {
	return storage.Connection{Provider: storage.AWSS3, Bucket: bucket, KeyPrefix: "og", Region: s3test.Region,
		RoleARN: testRoleARN, ExternalID: testExternal}
}

// TestAWSRoleWritesThroughAssumedCredentials: aws_s3 assumes the role
// with the organization's external id, and writes with what STS issued.
//
// The fake STS issues versitygw's root key without a session token:
// versitygw refuses a token with its root key (InvalidToken, checked
// below) and its own STS cannot check an external id. That the token
// travels with every request is checked by TestProviderEndpoints.
func TestAWSRoleWritesThroughAssumedCredentials(t *testing.T) {
	gw := s3test.New(t)
	sts := newFakeSTS(t, s3test.AccessKeyID, s3test.SecretAccessKey, "")
	var logs logBuffer
	c := newConnector(t, awsConfig(&logs, sts, gw))
	conn := awsConnection(gw.Bucket)

	if err := c.Test(context.Background(), conn); err != nil {
		t.Fatalf("Test: %v", err)
	}
	if keys := gw.Keys(t, gw.Bucket, "og/.hcti/connection-tests/"); len(keys) != 1 {
		t.Fatalf("test objects %v, want one", keys)
	}
	calls := sts.requests()
	if len(calls) != 1 {
		t.Fatalf("%d AssumeRole calls, want 1", len(calls))
	}
	if got := calls[0]; got.Get("RoleArn") != testRoleARN || got.Get("ExternalId") != testExternal || got.Get("RoleSessionName") != "pictor-storage" {
		t.Errorf("AssumeRole with %v", got)
	}

	w, err := c.Open(conn)
	if err != nil {
		t.Fatal(err)
	}
	small := randomBytes(7, 1000)
	if err := w.Put(context.Background(), w.Key("a.png"), bytes.NewReader(small), int64(len(small)), "image/png"); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if got := gw.Get(t, gw.Bucket, "og/a.png"); !bytes.Equal(got.Body, small) || got.ContentType != "image/png" {
		t.Errorf("object of %d bytes, %q", len(got.Body), got.ContentType)
	}
	// A multipart write with AWS's default checksums.
	const big = 20<<20 + 7
	if err := w.Put(context.Background(), w.Key("b.pdf"), randomStream(8, big), big, "application/pdf"); err != nil {
		t.Fatalf("Put multipart: %v", err)
	}
	obj := gw.Open(t, gw.Bucket, "og/b.pdf")
	sameStream(t, obj, randomStream(8, big))
	obj.Close()
	// The Writer's credentials are cached: one more AssumeRole for it, not
	// one per write.
	if n := len(sts.requests()); n != 2 {
		t.Errorf("%d AssumeRole calls after two writes, want 2", n)
	}
}

func TestAWSRoleFailures(t *testing.T) {
	gw := s3test.New(t)
	closed := "http://" + apitest.ClosedAddr(t)
	tests := []struct {
		name     string
		edit     func(*storage.Connection, *storage.Config, *fakeSTS)
		kind     error
		words    []string
		stsCalls int
	}{
		{
			name: "wrong external id",
			edit: func(c *storage.Connection, _ *storage.Config, _ *fakeSTS) {
				c.ExternalID = "pictor-another-organization"
			},
			kind:  storage.ErrRoleNotAssumable,
			words: []string{"role " + testRoleARN + " cannot be assumed (AccessDenied from STS)", "external id"},
			// AccessDenied is not retried.
			stsCalls: 1,
		},
		{
			name: "role the service may not assume",
			edit: func(c *storage.Connection, _ *storage.Config, _ *fakeSTS) {
				c.RoleARN = "arn:aws:iam::123456789012:role/other"
			},
			kind:     storage.ErrRoleNotAssumable,
			words:    []string{"role arn:aws:iam::123456789012:role/other cannot be assumed (AccessDenied from STS)"},
			stsCalls: 1,
		},
		{
			name:  "STS unreachable",
			edit:  func(_ *storage.Connection, cfg *storage.Config, _ *fakeSTS) { cfg.STSEndpoint = closed },
			kind:  storage.ErrRoleNotAssumable,
			words: []string{"cannot be assumed: connection to 127.0.0.1:", "refused"},
		},
		{
			name: "service without AWS credentials",
			edit: func(_ *storage.Connection, cfg *storage.Config, _ *fakeSTS) {
				cfg.STSCredentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
					return aws.Credentials{}, errors.New("no EC2 IMDS role found")
				})
			},
			kind:  storage.ErrServiceCredentials,
			words: []string{"the service has no AWS credentials of its own"},
		},
		{
			name: "session token refused by versitygw",
			edit: func(_ *storage.Connection, _ *storage.Config, sts *fakeSTS) { sts.token = "FwoGZXIvYXdzEXAMPLETOKEN" },
			kind: storage.ErrCredentials, words: []string{"refused the session credentials (InvalidToken)"},
			stsCalls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sts := newFakeSTS(t, s3test.AccessKeyID, s3test.SecretAccessKey, "")
			var logs logBuffer
			cfg := awsConfig(&logs, sts, gw)
			conn := awsConnection(gw.Bucket)
			tt.edit(&conn, &cfg, sts)
			c := newConnector(t, cfg)
			err := c.Test(context.Background(), conn)
			wantKind(t, err, tt.kind, tt.words...)
			if tt.stsCalls != 0 && len(sts.requests()) != tt.stsCalls {
				t.Errorf("%d AssumeRole calls, want %d", len(sts.requests()), tt.stsCalls)
			}
		})
	}
	if keys := gw.Keys(t, gw.Bucket, ""); len(keys) != 0 {
		t.Errorf("failed tests wrote %v", keys)
	}
}
