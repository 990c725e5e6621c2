package storage

import (
	"fmt"
	"log/slog"
	"strings"
)

// Provider names a storage destination's provider, as the API spells it.
type Provider string

// The providers of compat.md.
const (
	AWSS3              Provider = "aws_s3"
	CloudflareR2       Provider = "cloudflare_r2"
	BackblazeB2        Provider = "backblaze_b2"
	DigitalOceanSpaces Provider = "digitalocean_spaces"
	Wasabi             Provider = "wasabi"
	GoogleCloudStorage Provider = "google_cloud_storage"
	OtherS3Compatible  Provider = "other_s3_compatible"
)

// Connection is a destination's connection settings, validated by the API
// (package storedest) and, with its secret opened, what this package needs
// to reach the bucket. Fields a provider does not take are empty.
type Connection struct {
	Provider  Provider
	Bucket    string
	KeyPrefix string // without leading or trailing slash; "" for the bucket's root
	// Region: aws_s3, wasabi, digitalocean_spaces, backblaze_b2,
	// other_s3_compatible (default us-east-1).
	Region string
	// RoleARN: aws_s3, assumed with the organization's ExternalID.
	RoleARN    string
	ExternalID string
	// CloudflareAccountID and CloudflareJurisdiction ("", "eu" or
	// "fedramp"): cloudflare_r2.
	CloudflareAccountID    string
	CloudflareJurisdiction string
	// Endpoint (an absolute http(s) URL) and ForcePathStyle:
	// other_s3_compatible.
	Endpoint       string
	ForcePathStyle bool
	// AccessKeyID and SecretAccessKey: every provider but aws_s3.
	AccessKeyID     string
	SecretAccessKey string
}

// String describes c without its secrets, so that a Connection printed
// with %v or %+v never shows the secret access key or the external id.
func (c Connection) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "storage.Connection{Provider:%s Bucket:%q KeyPrefix:%q", c.Provider, c.Bucket, c.KeyPrefix)
	if c.Region != "" {
		fmt.Fprintf(&b, " Region:%s", c.Region)
	}
	if c.RoleARN != "" {
		fmt.Fprintf(&b, " RoleARN:%s ExternalID:%s", c.RoleARN, redacted(c.ExternalID))
	}
	if c.CloudflareAccountID != "" {
		fmt.Fprintf(&b, " CloudflareAccountID:%s CloudflareJurisdiction:%q", c.CloudflareAccountID, c.CloudflareJurisdiction)
	}
	if c.Endpoint != "" {
		fmt.Fprintf(&b, " Endpoint:%s ForcePathStyle:%t", c.Endpoint, c.ForcePathStyle)
	}
	if c.AccessKeyID != "" || c.SecretAccessKey != "" {
		fmt.Fprintf(&b, " AccessKeyID:%s SecretAccessKey:%s", c.AccessKeyID, redacted(c.SecretAccessKey))
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, for %#v.
func (c Connection) GoString() string { return c.String() }

// LogValue logs c without its secrets.
func (c Connection) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("provider", string(c.Provider)),
		slog.String("bucket", c.Bucket),
		slog.String("key_prefix", c.KeyPrefix),
	}
	if c.Region != "" {
		attrs = append(attrs, slog.String("region", c.Region))
	}
	if c.RoleARN != "" {
		attrs = append(attrs, slog.String("role_arn", c.RoleARN))
	}
	if c.Endpoint != "" {
		attrs = append(attrs, slog.String("endpoint", c.Endpoint))
	}
	return slog.GroupValue(attrs...)
}

func redacted(s string) string {
	if s == "" {
		return `""`
	}
	return "[redacted]"
}

var (
	_ fmt.Stringer   = Connection{}
	_ fmt.GoStringer = Connection{}
	_ slog.LogValuer = Connection{}
)

// Key is the object key of name under prefix: "<prefix>/<name>", or name
// alone for the bucket's root. Slashes around prefix and before name are
// dropped, so Key("renders/", "/a.png") is "renders/a.png".
func Key(prefix, name string) string {
	prefix = strings.Trim(prefix, "/")
	name = strings.TrimLeft(name, "/")
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}
