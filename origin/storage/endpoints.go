package storage

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// endpoint is where a connection's requests go and how they are signed.
type endpoint struct {
	// URL is the base URL of the S3 API. "" (aws_s3 only) leaves it to the
	// SDK's S3 endpoint rules: https://<bucket>.s3.<region>.amazonaws.com,
	// .amazonaws.com.cn in China, path style for bucket names that are not
	// DNS labels.
	URL string
	// Region is the signing region.
	Region string
	// PathStyle puts the bucket in the path (https://host/bucket/key)
	// rather than in the host name (https://bucket.host/key).
	PathStyle bool
	// AssumeRole: credentials come from sts:AssumeRole of RoleARN with the
	// organization's ExternalID, not from access keys.
	AssumeRole bool
	// AWS: the provider is AWS itself, which takes the SDK's default
	// checksums (CRC32 on every upload). Elsewhere checksums are sent only
	// when an operation requires one: several S3-compatible services
	// reject the checksum headers and aws-chunked trailers the SDK sends
	// by default since 2025 (Google Cloud Storage's interoperability API
	// among them).
	AWS bool
}

// providerRow says how one provider's endpoint follows from a Connection.
type providerRow struct {
	// url builds the base URL ("" for the SDK's AWS rules).
	url func(c Connection) string
	// region is the signing region: a fixed one, or "" for the
	// connection's own Region.
	region string
	// checkRegion reports what is wrong with the connection's Region; nil
	// when the provider takes no region.
	checkRegion func(region string) string
	pathStyle   func(c Connection) bool
	assumeRole  bool
}

// providers is the provider to endpoint table, one row per provider.
var providers = map[Provider]providerRow{
	// Regional AWS endpoint, virtual-hosted style, credentials by assuming
	// the organization's role.
	AWSS3: {
		url:         func(Connection) string { return "" }, // https://<bucket>.s3.<region>.amazonaws.com
		checkRegion: shape(awsRegionShape, "an AWS region such as us-east-1 or eu-west-2"),
		pathStyle:   always(false),
		assumeRole:  true,
	},
	// https://<account id>.r2.cloudflarestorage.com, or the jurisdiction's
	// <account id>.eu.r2... / <account id>.fedramp.r2...; R2 signs with
	// region "auto".
	CloudflareR2: {
		url: func(c Connection) string {
			if c.CloudflareJurisdiction == "" {
				return "https://" + c.CloudflareAccountID + ".r2.cloudflarestorage.com"
			}
			return "https://" + c.CloudflareAccountID + "." + c.CloudflareJurisdiction + ".r2.cloudflarestorage.com"
		},
		region:    "auto",
		pathStyle: always(true),
	},
	// https://s3.<region>.backblazeb2.com; the region names the cluster of
	// the account (us-west-004, eu-central-003, ...).
	BackblazeB2: {
		url:         func(c Connection) string { return "https://s3." + c.Region + ".backblazeb2.com" },
		checkRegion: shape(b2RegionShape, "a Backblaze B2 region such as us-west-004 (the s3.<region>.backblazeb2.com of the bucket's endpoint)"),
		pathStyle:   always(true),
	},
	// https://<region>.digitaloceanspaces.com.
	DigitalOceanSpaces: {
		url:         func(c Connection) string { return "https://" + c.Region + ".digitaloceanspaces.com" },
		checkRegion: oneOf(spacesRegions, "a Spaces region"),
		pathStyle:   always(true),
	},
	// https://s3.<region>.wasabisys.com; us-east-1's service URL is
	// s3.wasabisys.com (Wasabi lists s3.us-east-1.wasabisys.com only as its
	// alias).
	Wasabi: {
		url: func(c Connection) string {
			if c.Region == "us-east-1" {
				return "https://s3.wasabisys.com"
			}
			return "https://s3." + c.Region + ".wasabisys.com"
		},
		checkRegion: oneOf(wasabiRegions, "a Wasabi region"),
		pathStyle:   always(true),
	},
	// Cloud Storage's XML API in interoperability mode, HMAC keys as
	// access keys, region "auto".
	GoogleCloudStorage: {
		url:       func(Connection) string { return "https://storage.googleapis.com" },
		region:    "auto",
		pathStyle: always(true),
	},
	// Any S3 API at Endpoint; Region us-east-1 when empty; path style as
	// the connection says (the API's default is true).
	OtherS3Compatible: {
		url:         func(c Connection) string { return strings.TrimRight(c.Endpoint, "/") },
		checkRegion: shape(signingRegionShape, "a region name of letters, digits, '.', '_' and '-', such as us-east-1"),
		pathStyle:   func(c Connection) bool { return c.ForcePathStyle },
	},
}

// DefaultRegion is other_s3_compatible's region when Connection.Region is
// empty.
const DefaultRegion = "us-east-1"

// Region lists of the providers that publish a fixed one. A region outside
// the list is refused before anything is sent (a new region of the
// provider needs a line here). AWS and Backblaze B2 are checked by shape
// only: AWS adds regions every year and the SDK resolves any of them, and
// B2's region names its cluster (us-west-000, us-west-001, ... grow with
// Backblaze's data centers).
var (
	// Wasabi's service URLs (docs.wasabi.com, "Service URLs for Wasabi's
	// Storage Regions", 2026).
	wasabiRegions = []string{
		"us-east-1", "us-east-2", "us-central-1", "us-west-1", "us-west-2", "ca-central-1",
		"eu-central-1", "eu-central-2", "eu-west-1", "eu-west-2", "eu-west-3", "eu-south-1",
		"ap-northeast-1", "ap-northeast-2", "ap-southeast-1", "ap-southeast-2",
	}
	// Spaces Standard Storage's regions (docs.digitalocean.com, "Spaces
	// Availability", 2026).
	spacesRegions = []string{
		"nyc3", "ams3", "sfo2", "sfo3", "sgp1", "lon1", "fra1", "tor1", "blr1", "syd1", "atl1",
	}
	// cloudflareJurisdictions are the values of CloudflareJurisdiction.
	cloudflareJurisdictions = []string{"", "eu", "fedramp"}
)

var (
	// awsRegionShape: us-east-1, ap-southeast-2, us-gov-west-1, cn-north-1.
	awsRegionShape = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)
	// b2RegionShape: us-west-004, eu-central-003.
	b2RegionShape = regexp.MustCompile(`^[a-z]{2}-[a-z]+-[0-9]{3}$`)
	// signingRegionShape: other_s3_compatible's region only enters the
	// credential scope of signatures, never a host name.
	signingRegionShape = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,62}[A-Za-z0-9])?$`)
	// cloudflareAccountShape: 32 lower-case hexadecimal digits.
	cloudflareAccountShape = regexp.MustCompile(`^[0-9a-f]{32}$`)
	// roleARNShape: an IAM role of the aws, aws-cn or aws-us-gov partition,
	// with an optional path.
	roleARNShape = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:role/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}$`)
	// externalIDShape is STS's rule for ExternalId (2 to 1224 of these).
	externalIDShape = regexp.MustCompile(`^[\w+=,.@:/-]+$`)
)

// Limits of Connection fields this package checks (the API checks more).
const (
	maxBucket    = 255 // Cloud Storage allows 222 with dots; S3 63
	maxKeyPrefix = 512 // bytes; S3 keys are at most 1024
	maxKeyText   = 256 // access key id and secret access key
)

func always(v bool) func(Connection) bool { return func(Connection) bool { return v } }

func shape(re *regexp.Regexp, what string) func(string) string {
	return func(r string) string {
		if !re.MatchString(r) {
			return "must be " + what
		}
		return ""
	}
}

func oneOf(list []string, what string) func(string) string {
	return func(r string) string {
		if !slices.Contains(list, r) {
			return fmt.Sprintf("must be %s: one of %s", what, strings.Join(list, ", "))
		}
		return ""
	}
}

// Validate reports the first setting of c this package cannot use, as a
// *ConnectionError naming the field as the API spells it; nil if c can be
// used. Settings a provider does not take are ignored.
func (c Connection) Validate() error {
	_, err := resolve(c)
	return err
}

// CheckRegion reports what is wrong with region for provider p ("" if
// nothing): the same rule Validate applies, for the API to answer it
// field by field. A provider that takes no region accepts any.
func CheckRegion(p Provider, region string) string {
	row, ok := providers[p]
	if !ok || row.checkRegion == nil {
		return ""
	}
	if region == "" && p == OtherS3Compatible {
		return ""
	}
	if region == "" {
		return "is required"
	}
	return row.checkRegion(region)
}

// resolve validates c and maps it to its endpoint.
func resolve(c Connection) (endpoint, error) {
	row, ok := providers[c.Provider]
	if !ok {
		return endpoint{}, invalid("provider", "%q is not a provider", c.Provider)
	}
	if err := checkBucketAndPrefix(c); err != nil {
		return endpoint{}, err
	}
	if c.Provider == OtherS3Compatible && c.Region == "" {
		c.Region = DefaultRegion
	}
	if row.checkRegion != nil {
		if problem := CheckRegion(c.Provider, c.Region); problem != "" {
			return endpoint{}, invalid("region", "%s (got %q)", problem, c.Region)
		}
	}
	switch c.Provider {
	case CloudflareR2:
		if !cloudflareAccountShape.MatchString(c.CloudflareAccountID) {
			return endpoint{}, invalid("cloudflare_account_id", "must be the 32 lower-case hexadecimal digits of the Cloudflare account id")
		}
		if !slices.Contains(cloudflareJurisdictions, c.CloudflareJurisdiction) {
			return endpoint{}, invalid("cloudflare_jurisdiction", "must be eu, fedramp or empty (the default jurisdiction), not %q", c.CloudflareJurisdiction)
		}
	case OtherS3Compatible:
		if problem := checkEndpointURL(c.Endpoint); problem != "" {
			return endpoint{}, invalid("endpoint", "%s", problem)
		}
	}
	if row.assumeRole {
		if !roleARNShape.MatchString(c.RoleARN) {
			return endpoint{}, invalid("role_arn", "must be the ARN of an IAM role, arn:aws:iam::<account id>:role/<name>")
		}
		if n := len(c.ExternalID); n < 2 || n > 1224 || !externalIDShape.MatchString(c.ExternalID) {
			// The organization's external id comes from the service, not
			// the request: a bad one is ours.
			return endpoint{}, invalid("external_id", "the organization's external id is missing or malformed")
		}
	} else {
		if problem := checkKeyText(c.AccessKeyID); problem != "" {
			return endpoint{}, invalid("access_key_id", "%s", problem)
		}
		if problem := checkKeyText(c.SecretAccessKey); problem != "" {
			return endpoint{}, invalid("secret_access_key", "%s", problem)
		}
	}
	region := row.region
	if region == "" {
		region = c.Region
	}
	return endpoint{
		URL:        row.url(c),
		Region:     region,
		PathStyle:  row.pathStyle(c),
		AssumeRole: row.assumeRole,
		AWS:        c.Provider == AWSS3,
	}, nil
}

func checkBucketAndPrefix(c Connection) error {
	switch {
	case c.Bucket == "":
		return invalid("bucket", "is required")
	case len(c.Bucket) > maxBucket:
		return invalid("bucket", "must be at most %d characters", maxBucket)
	}
	for i := 0; i < len(c.Bucket); i++ {
		if b := c.Bucket[i]; b <= ' ' || b > '~' || b == '/' || b == '\\' || b == '?' || b == '#' {
			return invalid("bucket", "must be a bucket name (letters, digits, '.', '-', '_')")
		}
	}
	p := c.KeyPrefix
	switch {
	case len(p) > maxKeyPrefix:
		return invalid("key_prefix", "must be at most %d bytes", maxKeyPrefix)
	case strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/"):
		return invalid("key_prefix", "must not start or end with '/'")
	case strings.Contains(p, "//"):
		return invalid("key_prefix", "must not hold an empty segment ('//')")
	}
	if problem := checkKeyChars(p); problem != "" {
		return invalid("key_prefix", "%s", problem)
	}
	return nil
}

// checkKeyChars reports an object key (or part of one) that is not valid
// UTF-8 or holds control characters.
func checkKeyChars(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return "must not hold control characters"
		}
	}
	return ""
}

func checkKeyText(s string) string {
	if s == "" {
		return "is required"
	}
	if len(s) > maxKeyText {
		return fmt.Sprintf("must be at most %d characters", maxKeyText)
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return "must be printable ASCII without spaces"
		}
	}
	return ""
}

// checkEndpointURL reports what is wrong with other_s3_compatible's
// Endpoint: it must be an absolute http or https URL with a host and
// neither credentials, query nor fragment. A path is kept (some gateways
// serve S3 under one).
func checkEndpointURL(raw string) string {
	if raw == "" {
		return "is required: the absolute http(s) URL of the S3 API, such as https://s3.example.com"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "must be an absolute http(s) URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http or https URL"
	case u.Host == "" || u.Hostname() == "":
		return "must name a host"
	case u.User != nil:
		return "must not hold credentials"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "must not hold a query or fragment"
	}
	return ""
}
