package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
)

// recorder answers every request without a network: STS with assumed
// credentials, S3 with a success, and keeps what it was sent.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

const (
	stubAssumedKey    = "ASIASTUBASSUMEDKEY01"
	stubAssumedSecret = "stub-assumed-secret"
	stubSessionToken  = "stub-session-token"
)

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Request: req, Body: io.NopCloser(strings.NewReader(""))}
	if strings.HasPrefix(req.URL.Host, "sts.") {
		resp.Header.Set("Content-Type", "text/xml")
		resp.Body = io.NopCloser(strings.NewReader(assumeRoleXML(stubAssumedKey, stubAssumedSecret, stubSessionToken, time.Now().Add(time.Hour))))
		return resp, nil
	}
	resp.Header.Set("ETag", `"0123456789abcdef0123456789abcdef"`)
	return resp, nil
}

func (r *recorder) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.reqs...)
}

func assumeRoleXML(key, secret, token string, exp time.Time) string {
	return `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>` +
		`<AssumedRoleUser><AssumedRoleId>AROASTUB:pictor-storage</AssumedRoleId><Arn>arn:aws:sts::123456789012:assumed-role/writer/pictor-storage</Arn></AssumedRoleUser>` +
		`<Credentials><AccessKeyId>` + key + `</AccessKeyId><SecretAccessKey>` + secret + `</SecretAccessKey><SessionToken>` + token + `</SessionToken>` +
		`<Expiration>` + exp.UTC().Format(time.RFC3339) + `</Expiration></Credentials>` +
		`</AssumeRoleResult><ResponseMetadata><RequestId>stub</RequestId></ResponseMetadata></AssumeRoleResponse>`
}

var scope = regexp.MustCompile(`Credential=([^/]+)/[0-9]{8}/([^/]+)/([^/]+)/aws4_request`)

const r2Account = "0123456789abcdef0123456789abcdef"

// TestProviderEndpoints writes one object through every provider and
// checks where the request went and how it was signed.
func TestProviderEndpoints(t *testing.T) {
	keys := func(c Connection) Connection {
		c.AccessKeyID, c.SecretAccessKey = "AKIDEXAMPLE", "example-secret"
		return c
	}
	role := Connection{RoleARN: "arn:aws:iam::123456789012:role/writer", ExternalID: "pictor-org-0001"}
	tests := []struct {
		name    string
		conn    Connection
		wantURL string // of the PutObject of "x.png"
		region  string // signing region
		wantSTS string // aws_s3: the AssumeRole request's URL
	}{
		{
			name: "aws_s3", region: "eu-west-2",
			conn:    Connection{Provider: AWSS3, Bucket: "renders", KeyPrefix: "org/a", Region: "eu-west-2", RoleARN: role.RoleARN, ExternalID: role.ExternalID},
			wantURL: "https://renders.s3.eu-west-2.amazonaws.com/org/a/x.png",
			wantSTS: "https://sts.us-east-1.amazonaws.com/", // Config.STSRegion
		},
		{
			name: "aws_s3 bucket with dots goes path style", region: "af-south-1",
			conn:    Connection{Provider: AWSS3, Bucket: "renders.example.com", Region: "af-south-1", RoleARN: role.RoleARN, ExternalID: role.ExternalID},
			wantURL: "https://s3.af-south-1.amazonaws.com/renders.example.com/x.png",
			wantSTS: "https://sts.us-east-1.amazonaws.com/",
		},
		{
			name: "cloudflare_r2", region: "auto",
			conn:    keys(Connection{Provider: CloudflareR2, Bucket: "renders", KeyPrefix: "p", CloudflareAccountID: r2Account}),
			wantURL: "https://" + r2Account + ".r2.cloudflarestorage.com/renders/p/x.png",
		},
		{
			name: "cloudflare_r2 eu", region: "auto",
			conn:    keys(Connection{Provider: CloudflareR2, Bucket: "renders", CloudflareAccountID: r2Account, CloudflareJurisdiction: "eu"}),
			wantURL: "https://" + r2Account + ".eu.r2.cloudflarestorage.com/renders/x.png",
		},
		{
			name: "cloudflare_r2 fedramp", region: "auto",
			conn:    keys(Connection{Provider: CloudflareR2, Bucket: "renders", CloudflareAccountID: r2Account, CloudflareJurisdiction: "fedramp"}),
			wantURL: "https://" + r2Account + ".fedramp.r2.cloudflarestorage.com/renders/x.png",
		},
		{
			name: "backblaze_b2", region: "us-west-004",
			conn:    keys(Connection{Provider: BackblazeB2, Bucket: "renders", Region: "us-west-004"}),
			wantURL: "https://s3.us-west-004.backblazeb2.com/renders/x.png",
		},
		{
			name: "digitalocean_spaces", region: "nyc3",
			conn:    keys(Connection{Provider: DigitalOceanSpaces, Bucket: "renders", Region: "nyc3"}),
			wantURL: "https://nyc3.digitaloceanspaces.com/renders/x.png",
		},
		{
			name: "wasabi us-east-1", region: "us-east-1",
			conn:    keys(Connection{Provider: Wasabi, Bucket: "renders", Region: "us-east-1"}),
			wantURL: "https://s3.wasabisys.com/renders/x.png",
		},
		{
			name: "wasabi eu-central-2", region: "eu-central-2",
			conn:    keys(Connection{Provider: Wasabi, Bucket: "renders", Region: "eu-central-2"}),
			wantURL: "https://s3.eu-central-2.wasabisys.com/renders/x.png",
		},
		{
			name: "google_cloud_storage", region: "auto",
			conn:    keys(Connection{Provider: GoogleCloudStorage, Bucket: "renders"}),
			wantURL: "https://storage.googleapis.com/renders/x.png",
		},
		{
			name: "other_s3_compatible path style, default region", region: "us-east-1",
			conn:    keys(Connection{Provider: OtherS3Compatible, Bucket: "renders", Endpoint: "https://minio.example.com:9000", ForcePathStyle: true}),
			wantURL: "https://minio.example.com:9000/renders/x.png",
		},
		{
			name: "other_s3_compatible virtual-hosted", region: "garage",
			conn:    keys(Connection{Provider: OtherS3Compatible, Bucket: "renders", Endpoint: "https://s3.example.com/", Region: "garage"}),
			wantURL: "https://renders.s3.example.com/x.png",
		},
		{
			name: "other_s3_compatible under a path", region: "us-east-1",
			conn:    keys(Connection{Provider: OtherS3Compatible, Bucket: "renders", Endpoint: "http://gw.example.com/s3", ForcePathStyle: true}),
			wantURL: "http://gw.example.com/s3/renders/x.png",
		},
	}
	seen := map[Provider]bool{}
	for _, tt := range tests {
		seen[tt.conn.Provider] = true
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			cfg := DefaultConfig()
			cfg.transport = rec
			cfg.STSCredentials = credentials.NewStaticCredentialsProvider("AKIDSERVICE", "service-secret", "")
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			w, err := c.Open(tt.conn)
			if err != nil {
				t.Fatal(err)
			}
			body := []byte("png bytes")
			if err := w.Put(context.Background(), w.Key("x.png"), bytes.NewReader(body), int64(len(body)), "image/png"); err != nil {
				t.Fatal(err)
			}
			reqs := rec.requests()
			put := reqs[len(reqs)-1]
			if got := put.URL.Scheme + "://" + put.URL.Host + put.URL.EscapedPath(); got != tt.wantURL {
				t.Errorf("PutObject went to %s, want %s", got, tt.wantURL)
			}
			if put.Method != http.MethodPut {
				t.Errorf("method %s, want PUT", put.Method)
			}
			if got := put.Header.Get("Content-Type"); got != "image/png" {
				t.Errorf("Content-Type %q, want image/png", got)
			}
			m := scope.FindStringSubmatch(put.Header.Get("Authorization"))
			if m == nil {
				t.Fatalf("Authorization %q has no SigV4 credential scope", put.Header.Get("Authorization"))
			}
			if m[2] != tt.region || m[3] != "s3" {
				t.Errorf("signed for region %s service %s, want %s s3", m[2], m[3], tt.region)
			}
			if tt.wantSTS == "" {
				if len(reqs) != 1 {
					t.Errorf("%d requests, want the PutObject only", len(reqs))
				}
				if m[1] != "AKIDEXAMPLE" {
					t.Errorf("signed with key %s, want the connection's", m[1])
				}
				if put.Header.Get("X-Amz-Security-Token") != "" {
					t.Error("access-key request carries a session token")
				}
				return
			}
			// aws_s3: AssumeRole first, signed by the service's identity,
			// then the write with the role's credentials.
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want AssumeRole then PutObject", len(reqs))
			}
			sts := reqs[0]
			if got := sts.URL.Scheme + "://" + sts.URL.Host + sts.URL.Path; got != tt.wantSTS {
				t.Errorf("AssumeRole went to %s, want %s", got, tt.wantSTS)
			}
			if sm := scope.FindStringSubmatch(sts.Header.Get("Authorization")); sm == nil || sm[1] != "AKIDSERVICE" || sm[3] != "sts" {
				t.Errorf("AssumeRole Authorization %q: want the service's key for sts", sts.Header.Get("Authorization"))
			}
			if m[1] != stubAssumedKey || put.Header.Get("X-Amz-Security-Token") != stubSessionToken {
				t.Errorf("PutObject signed with key %s, token %q: want the assumed role's", m[1], put.Header.Get("X-Amz-Security-Token"))
			}
		})
	}
	for p := range providers {
		if !seen[p] {
			t.Errorf("provider %s has no row", p)
		}
	}
}

func TestConnectionValidate(t *testing.T) {
	good := map[Provider]Connection{
		AWSS3:              {Provider: AWSS3, Bucket: "b", Region: "us-east-1", RoleARN: "arn:aws:iam::123456789012:role/w", ExternalID: "ext-id"},
		CloudflareR2:       {Provider: CloudflareR2, Bucket: "b", CloudflareAccountID: r2Account, AccessKeyID: "k", SecretAccessKey: "s"},
		BackblazeB2:        {Provider: BackblazeB2, Bucket: "b", Region: "eu-central-003", AccessKeyID: "k", SecretAccessKey: "s"},
		DigitalOceanSpaces: {Provider: DigitalOceanSpaces, Bucket: "b", Region: "fra1", AccessKeyID: "k", SecretAccessKey: "s"},
		Wasabi:             {Provider: Wasabi, Bucket: "b", Region: "ap-southeast-2", AccessKeyID: "k", SecretAccessKey: "s"},
		GoogleCloudStorage: {Provider: GoogleCloudStorage, Bucket: "b", AccessKeyID: "k", SecretAccessKey: "s"},
		OtherS3Compatible:  {Provider: OtherS3Compatible, Bucket: "b", Endpoint: "http://10.0.0.1:9000", AccessKeyID: "k", SecretAccessKey: "s"},
	}
	for p, c := range good {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	with := func(p Provider, f func(*Connection)) Connection {
		c := good[p]
		f(&c)
		return c
	}
	tests := []struct {
		name  string
		conn  Connection
		field string
	}{
		{"unknown provider", Connection{Provider: "azure", Bucket: "b"}, "provider"},
		{"no bucket", with(GoogleCloudStorage, func(c *Connection) { c.Bucket = "" }), "bucket"},
		{"bucket with slash", with(GoogleCloudStorage, func(c *Connection) { c.Bucket = "a/b" }), "bucket"},
		{"prefix with leading slash", with(GoogleCloudStorage, func(c *Connection) { c.KeyPrefix = "/a" }), "key_prefix"},
		{"prefix with trailing slash", with(GoogleCloudStorage, func(c *Connection) { c.KeyPrefix = "a/" }), "key_prefix"},
		{"prefix with empty segment", with(GoogleCloudStorage, func(c *Connection) { c.KeyPrefix = "a//b" }), "key_prefix"},
		{"prefix with control character", with(GoogleCloudStorage, func(c *Connection) { c.KeyPrefix = "a\nb" }), "key_prefix"},
		{"aws region malformed", with(AWSS3, func(c *Connection) { c.Region = "useast1" }), "region"},
		{"aws region missing", with(AWSS3, func(c *Connection) { c.Region = "" }), "region"},
		{"aws role arn malformed", with(AWSS3, func(c *Connection) { c.RoleARN = "arn:aws:iam::12:user/x" }), "role_arn"},
		{"aws external id missing", with(AWSS3, func(c *Connection) { c.ExternalID = "" }), "external_id"},
		{"r2 account id not hex", with(CloudflareR2, func(c *Connection) { c.CloudflareAccountID = "acct" }), "cloudflare_account_id"},
		{"r2 jurisdiction unknown", with(CloudflareR2, func(c *Connection) { c.CloudflareJurisdiction = "us" }), "cloudflare_jurisdiction"},
		{"b2 region malformed", with(BackblazeB2, func(c *Connection) { c.Region = "us-west-4" }), "region"},
		{"b2 region injecting a host", with(BackblazeB2, func(c *Connection) { c.Region = "evil.com/x" }), "region"},
		{"spaces region unknown", with(DigitalOceanSpaces, func(c *Connection) { c.Region = "nyc1" }), "region"},
		{"wasabi region unknown", with(Wasabi, func(c *Connection) { c.Region = "us-east-9" }), "region"},
		{"other endpoint missing", with(OtherS3Compatible, func(c *Connection) { c.Endpoint = "" }), "endpoint"},
		{"other endpoint not http", with(OtherS3Compatible, func(c *Connection) { c.Endpoint = "ftp://h" }), "endpoint"},
		{"other endpoint with credentials", with(OtherS3Compatible, func(c *Connection) { c.Endpoint = "https://u:p@h" }), "endpoint"},
		{"other endpoint with query", with(OtherS3Compatible, func(c *Connection) { c.Endpoint = "https://h/?x=1" }), "endpoint"},
		{"other region with slash", with(OtherS3Compatible, func(c *Connection) { c.Region = "a/b" }), "region"},
		{"no access key id", with(Wasabi, func(c *Connection) { c.AccessKeyID = "" }), "access_key_id"},
		{"secret with a space", with(Wasabi, func(c *Connection) { c.SecretAccessKey = "a b" }), "secret_access_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.conn.Validate()
			var ce *ConnectionError
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConnection) {
				t.Fatalf("Validate() = %v, want a *ConnectionError", err)
			}
			if ce.Field != tt.field {
				t.Errorf("field %q (%v), want %q", ce.Field, err, tt.field)
			}
			if d := Describe(err); !strings.Contains(d, tt.field) {
				t.Errorf("Describe = %q, does not name %s", d, tt.field)
			}
		})
	}
}

func TestCheckRegion(t *testing.T) {
	tests := []struct {
		p      Provider
		region string
		ok     bool
	}{
		{AWSS3, "ap-southeast-7", true},
		{AWSS3, "us-gov-west-1", true},
		{AWSS3, "Us-East-1", false},
		{BackblazeB2, "ca-east-006", true},
		{DigitalOceanSpaces, "atl1", true},
		{DigitalOceanSpaces, "NYC3", false},
		{Wasabi, "us-east-1", true},
		{Wasabi, "eu-south-1", true},
		{GoogleCloudStorage, "anything", true},
		{OtherS3Compatible, "", true},
		{OtherS3Compatible, "my_region.1", true},
	}
	for _, tt := range tests {
		if got := CheckRegion(tt.p, tt.region) == ""; got != tt.ok {
			t.Errorf("CheckRegion(%s, %q) = %q, want ok=%t", tt.p, tt.region, CheckRegion(tt.p, tt.region), tt.ok)
		}
	}
}

func TestKey(t *testing.T) {
	tests := []struct{ prefix, name, want string }{
		{"", "a.png", "a.png"},
		{"renders", "a.png", "renders/a.png"},
		{"renders/org", "a_w-400.webp", "renders/org/a_w-400.webp"},
		{"/renders/", "/a.png", "renders/a.png"},
		{"", ".hcti/connection-tests/x.txt", ".hcti/connection-tests/x.txt"},
	}
	for _, tt := range tests {
		if got := Key(tt.prefix, tt.name); got != tt.want {
			t.Errorf("Key(%q, %q) = %q, want %q", tt.prefix, tt.name, got, tt.want)
		}
	}
}

func TestConnectionNeverPrintsSecrets(t *testing.T) {
	c := Connection{Provider: Wasabi, Bucket: "b", Region: "us-east-1", AccessKeyID: "AKIDVISIBLE", SecretAccessKey: "very-secret-value",
		RoleARN: "arn:aws:iam::123456789012:role/w", ExternalID: "the-external-id"}
	var buf bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		fmt.Fprintf(&buf, verb+"\n", c)
		fmt.Fprintf(&buf, verb+"\n", struct{ C Connection }{c})
	}
	var logBuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("x", "connection", c)
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("x", "connection", c)
	buf.Write(logBuf.Bytes())
	for _, secret := range []string{"very-secret-value", "the-external-id"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("%q printed: %s", secret, buf.String())
		}
	}
	if !strings.Contains(buf.String(), "AKIDVISIBLE") || !strings.Contains(logBuf.String(), "us-east-1") {
		t.Errorf("the settings that are not secret are missing: %s", buf.String())
	}
}
