package storage

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
