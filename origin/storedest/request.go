package storedest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/resource"
	"github.com/pictorhq/pictor/origin/storage"
)

// Field limits of a storage destination request (compat.md, "Storage
// destinations"; doc.go where it is silent).
const (
	MinName = 3   // name, characters (surrounding spaces trimmed)
	MaxName = 255 // name, characters

	MinBucket    = 3   // bucket, characters
	MaxBucket    = 63  // bucket, characters
	MaxKeyPrefix = 512 // key_prefix, bytes, as normalized

	MaxRegion      = 64   // region, characters
	MaxRoleARN     = 2048 // role_arn, characters (STS AssumeRole's limit)
	MaxEndpoint    = 2048 // endpoint, characters
	MaxAccessKeyID = 256  // access_key_id, characters
	MaxSecret      = 256  // secret_access_key, characters

	// DefaultRegion is other_s3_compatible's region when none is sent.
	DefaultRegion = storage.DefaultRegion
)

// Providers lists the providers in the order messages name them.
var Providers = []storage.Provider{
	storage.AWSS3, storage.CloudflareR2, storage.BackblazeB2, storage.DigitalOceanSpaces,
	storage.Wasabi, storage.GoogleCloudStorage, storage.OtherS3Compatible,
}

// Connection fields besides provider, bucket and key_prefix, each taken by
// some providers only.
const (
	fRegion       = "region"
	fRoleARN      = "role_arn"
	fAccountID    = "cloudflare_account_id"
	fJurisdiction = "cloudflare_jurisdiction"
	fEndpoint     = "endpoint"
	fPathStyle    = "force_path_style"
	fAccessKeyID  = "access_key_id"
	fSecret       = "secret_access_key"
	fRetain       = "retain_secret_access_key"
)

var providerFields = []string{fRegion, fRoleARN, fAccountID, fJurisdiction, fEndpoint, fPathStyle, fAccessKeyID, fSecret, fRetain}

var accessKeyFields = []string{fAccessKeyID, fSecret, fRetain}

// takes lists the provider-specific fields of each provider.
var takes = map[storage.Provider][]string{
	storage.AWSS3:              {fRegion, fRoleARN},
	storage.CloudflareR2:       append([]string{fAccountID, fJurisdiction}, accessKeyFields...),
	storage.BackblazeB2:        append([]string{fRegion}, accessKeyFields...),
	storage.DigitalOceanSpaces: append([]string{fRegion}, accessKeyFields...),
	storage.Wasabi:             append([]string{fRegion}, accessKeyFields...),
	storage.GoogleCloudStorage: slices.Clone(accessKeyFields),
	storage.OtherS3Compatible:  append([]string{fEndpoint, fRegion, fPathStyle}, accessKeyFields...),
}

// UsesAccessKeys reports whether the provider authenticates with an access
// key id and a secret access key (every provider but aws_s3, which assumes
// a role).
func UsesAccessKeys(p storage.Provider) bool {
	return slices.Contains(takes[p], fAccessKeyID)
}

// Options adapt ParseRequest to the caller.
type Options struct {
	// AllowPrivate accepts an other_s3_compatible endpoint whose host is a
	// loopback or private address literal (--allow-private-urls). Cloud
	// metadata addresses are refused even then.
	AllowPrivate bool
}

// Request is a validated create or update request; an update is a full
// replacement.
type Request struct {
	Name                string // trimmed
	Disabled            bool
	HctiStorageDisabled bool
	// Connection is connection_info, validated and normalized. Fields the
	// provider does not take are empty; SecretAccessKey is what was sent
	// ("" when nothing was); ExternalID is always empty.
	Connection storage.Connection
	// RetainSecret is connection_info.retain_secret_access_key: keep the
	// stored secret access key (updates only; never with a secret sent).
	RetainSecret bool
}

// ParseRequest validates a storage destination request (a JSON object)
// and reports every invalid field in one 400. Types are strict. Unknown
// fields are ignored, at the top level and in connection_info, except a
// field of another provider (region for google_cloud_storage, role_arn for
// wasabi, ...) sent with a value: that is a 400 naming it. Messages never
// repeat a secret access key.
func ParseRequest(o *field.Object, opts Options) (Request, error) {
	var errs field.Errors
	var req Request
	switch s, ok := o.String(&errs, "name"); {
	case ok:
		req.Name = strings.TrimSpace(s)
		switch n := utf8.RuneCountInString(req.Name); {
		case strings.ContainsFunc(req.Name, unicode.IsControl):
			errs.Add(o.Path("name"), "must not contain control characters")
		case n < MinName || n > MaxName:
			errs.Add(o.Path("name"), "must be %d to %d characters (got %d)", MinName, MaxName, n)
		}
	case !o.Present("name"):
		errs.Add(o.Path("name"), "is required (%d to %d characters)", MinName, MaxName)
	}
	req.Disabled, _ = o.Bool(&errs, "disabled")
	req.HctiStorageDisabled, _ = o.Bool(&errs, "hcti_storage_disabled")
	req.Connection, req.RetainSecret = parseConnection(o, &errs, opts)
	return req, errs.Err()
}

// parseConnection reads connection_info.
func parseConnection(o *field.Object, errs *field.Errors, opts Options) (storage.Connection, bool) {
	const name = "connection_info"
	var conn storage.Connection
	raw, ok := o.Raw(name)
	if !ok {
		errs.Add(o.Path(name), "is required: an object with provider, bucket and the provider's settings")
		return conn, false
	}
	var m map[string]json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(raw, &m) != nil {
		errs.Add(o.Path(name), "must be an object with provider, bucket and the provider's settings")
		return conn, false
	}
	c := field.FromJSON(m)
	c.Prefix = o.Path(name) + "."

	switch p, ok := c.String(errs, "provider"); {
	case ok && slices.Contains(Providers, storage.Provider(p)):
		conn.Provider = storage.Provider(p)
	case ok:
		errs.Add(c.Path("provider"), "must be one of %s", providerList())
	case !c.Present("provider"):
		errs.Add(c.Path("provider"), "is required: one of %s", providerList())
	}
	switch b, ok := c.String(errs, "bucket"); {
	case ok:
		if problem := checkBucket(b); problem != "" {
			errs.Add(c.Path("bucket"), "%s", problem)
		}
		conn.Bucket = b
	case !c.Present("bucket"):
		errs.Add(c.Path("bucket"), "is required")
	}
	if s, ok := c.String(errs, "key_prefix"); ok {
		prefix, problem := NormalizeKeyPrefix(s)
		if problem != "" {
			errs.Add(c.Path("key_prefix"), "%s", problem)
		}
		conn.KeyPrefix = prefix
	}
	if conn.Provider == "" {
		return conn, false
	}

	own := takes[conn.Provider]
	for _, f := range providerFields {
		if slices.Contains(own, f) || !c.Present(f) {
			continue
		}
		if f == fRetain {
			// false asks for nothing; a client may always send it.
			if v, ok := c.Bool(errs, f); !ok || !v {
				continue
			}
		}
		errs.Add(c.Path(f), "is not a setting of provider %s (it takes %s)", conn.Provider, settingList(conn.Provider))
	}

	switch conn.Provider {
	case storage.AWSS3:
		conn.Region = region(c, errs, conn.Provider, "the bucket's AWS region, such as us-east-1")
		if s, ok := required(c, errs, fRoleARN, "the ARN of the IAM role to assume, arn:aws:iam::<account id>:role/<name>"); ok {
			if problem := checkRoleARN(s); problem != "" {
				errs.Add(c.Path(fRoleARN), "%s", problem)
			} else if rp, ap := regionPartition(conn.Region), arnPartition(s); conn.Region != "" && rp != ap {
				errs.Add(c.Path(fRegion), "is in AWS partition %s, role_arn in %s: a role is only assumed within its partition", rp, ap)
			}
			conn.RoleARN = s
		}
	case storage.CloudflareR2:
		if s, ok := required(c, errs, fAccountID, "the 32 hexadecimal digits of the Cloudflare account id"); ok {
			id := strings.ToLower(s)
			if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
				errs.Add(c.Path(fAccountID), "must be the 32 hexadecimal digits of the Cloudflare account id")
			}
			conn.CloudflareAccountID = id
		}
		if s, ok := c.String(errs, fJurisdiction); ok {
			switch s {
			case "eu", "fedramp":
				conn.CloudflareJurisdiction = s
			case "default":
			default:
				errs.Add(c.Path(fJurisdiction), "must be eu, fedramp or null (the default jurisdiction)")
			}
		}
	case storage.BackblazeB2, storage.DigitalOceanSpaces, storage.Wasabi:
		conn.Region = region(c, errs, conn.Provider, regionHint[conn.Provider])
	case storage.OtherS3Compatible:
		if s, ok := required(c, errs, fEndpoint, "the absolute http(s) URL of the S3 API, such as https://s3.example.com"); ok {
			norm, problem := NormalizeEndpoint(s)
			if problem == "" {
				problem = checkEndpointHost(norm, opts.AllowPrivate)
			}
			if problem != "" {
				errs.Add(c.Path(fEndpoint), "%s", problem)
			}
			conn.Endpoint = norm
		}
		// The region only signs requests: kept as sent.
		conn.Region = DefaultRegion
		if s, ok := c.String(errs, fRegion); ok {
			if problem := storage.CheckRegion(conn.Provider, s); problem != "" || s == "" {
				errs.Add(c.Path(fRegion), "must be a region name of letters, digits, '.', '_' and '-' (at most %d), such as us-east-1", MaxRegion)
			}
			conn.Region = s
		}
		conn.ForcePathStyle = true
		if v, ok := c.Bool(errs, fPathStyle); ok {
			conn.ForcePathStyle = v
		}
	}

	retain := false
	if UsesAccessKeys(conn.Provider) {
		if s, ok := required(c, errs, fAccessKeyID, "the access key id of a key that may write to the bucket"); ok {
			if problem := checkKeyText(s, MaxAccessKeyID); problem != "" {
				errs.Add(c.Path(fAccessKeyID), "%s", problem)
			}
			conn.AccessKeyID = s
		}
		retain, _ = c.Bool(errs, fRetain)
		// An empty secret counts as not sent, as a form field left blank.
		secret, isString := c.String(errs, fSecret)
		sent := isString && secret != ""
		switch {
		case c.Present(fSecret) && !isString: // not a string: reported
		case sent && retain:
			errs.Add(c.Path(fRetain), "cannot be true when secret_access_key is sent: send one or the other")
		case sent:
			if problem := checkKeyText(secret, MaxSecret); problem != "" {
				errs.Add(c.Path(fSecret), "%s", problem)
			}
			conn.SecretAccessKey = secret
		case retain:
		default:
			errs.Add(c.Path(fSecret), "is required (on update, or set retain_secret_access_key to true to keep the stored one)")
		}
	}
	return conn, retain
}

// required reads a string field that must be sent.
func required(c *field.Object, errs *field.Errors, name, what string) (string, bool) {
	s, ok := c.String(errs, name)
	if !ok && !c.Present(name) {
		errs.Add(c.Path(name), "is required: %s", what)
	}
	return s, ok
}

func providerList() string {
	names := make([]string, len(Providers))
	for i, p := range Providers {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

func settingList(p storage.Provider) string {
	own := takes[p]
	if len(own) == 0 {
		return "only bucket and key_prefix"
	}
	return strings.Join(own, ", ")
}

// roleARNShape is an IAM role of the aws, aws-cn or aws-us-gov partition,
// with an optional path (origin/storage assumes roles of these).
var roleARNShape = regexp.MustCompile(`^arn:(aws|aws-cn|aws-us-gov):iam::[0-9]{12}:role/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}$`)

var regionHint = map[storage.Provider]string{
	storage.BackblazeB2:        "the region of the bucket's S3 endpoint, such as us-west-004",
	storage.DigitalOceanSpaces: "the Spaces region, such as nyc3",
	storage.Wasabi:             "the Wasabi region, such as us-east-1",
}

// region reads a provider's required region, lower-cased (it is part of a
// host name), with origin/storage's rule for the provider: a shape for AWS
// and Backblaze B2, the published list for Wasabi and Spaces.
func region(c *field.Object, errs *field.Errors, p storage.Provider, what string) string {
	s, ok := required(c, errs, fRegion, what)
	if !ok {
		return ""
	}
	r := strings.ToLower(s)
	if len(r) > MaxRegion {
		errs.Add(c.Path(fRegion), "must be at most %d characters", MaxRegion)
	} else if problem := storage.CheckRegion(p, r); problem != "" {
		errs.Add(c.Path(fRegion), "%s", problem)
	}
	return r
}

// regionPartition is the AWS partition of a region: aws-cn for China,
// aws-us-gov for GovCloud, aws-iso... for the isolated regions (which no
// role_arn may name), aws for the rest.
func regionPartition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	case strings.Contains(region, "-iso"):
		return "an isolated partition"
	}
	return "aws"
}

// arnPartition is the partition of a valid role ARN.
func arnPartition(arn string) string {
	p, _, _ := strings.Cut(strings.TrimPrefix(arn, "arn:"), ":")
	return p
}

// checkRoleARN returns what is wrong with an IAM role ARN, "" if nothing.
func checkRoleARN(s string) string {
	if len(s) > MaxRoleARN || !roleARNShape.MatchString(s) {
		return "must be an IAM role ARN: arn:aws:iam::<12-digit account id>:role/<name>"
	}
	return ""
}

// checkKeyText checks an access key id or secret: printable ASCII without
// spaces. The message never repeats the value.
func checkKeyText(s string, max int) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > max {
		return fmt.Sprintf("must be at most %d characters", max)
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return "must be printable ASCII without spaces"
		}
	}
	return ""
}

// checkBucket returns what is wrong with an S3 bucket name, "" if nothing.
// The rules are S3's for general purpose buckets, applied to every
// provider.
func checkBucket(b string) string {
	if n := utf8.RuneCountInString(b); n < MinBucket || n > MaxBucket {
		return fmt.Sprintf("must be %d to %d characters (got %d)", MinBucket, MaxBucket, n)
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-') {
			return "may hold only lower-case letters, digits, dots and hyphens"
		}
	}
	labels := strings.Split(b, ".")
	for _, l := range labels {
		if l == "" || !isAlnum(l[0]) || !isAlnum(l[len(l)-1]) {
			return "must begin and end with a letter or digit, without two dots in a row or a dot beside a hyphen"
		}
	}
	if len(labels) == 4 && !slices.ContainsFunc(labels, func(l string) bool { return strings.Trim(l, "0123456789") != "" }) {
		return "must not be formatted as an IP address"
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(b, p) {
			return fmt.Sprintf("must not start with %s", p)
		}
	}
	for _, s := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(b, s) {
			return fmt.Sprintf("must not end with %s", s)
		}
	}
	return ""
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// NormalizeKeyPrefix returns key_prefix as stored: without leading or
// trailing slashes and with runs of slashes made one. problem is "" when
// s is valid: no "." or ".." segment, no control character, at most
// MaxKeyPrefix bytes once normalized. "" is the bucket's root.
func NormalizeKeyPrefix(s string) (prefix, problem string) {
	if strings.ContainsFunc(s, unicode.IsControl) {
		return "", "must not contain control characters"
	}
	if !utf8.ValidString(s) {
		return "", "must be valid UTF-8"
	}
	var segs []string
	for seg := range strings.SplitSeq(s, "/") {
		switch seg {
		case "":
		case ".", "..":
			return "", `must not contain "." or ".." segments`
		default:
			segs = append(segs, seg)
		}
	}
	prefix = strings.Join(segs, "/")
	if len(prefix) > MaxKeyPrefix {
		return "", fmt.Sprintf("must be at most %d bytes (got %d)", MaxKeyPrefix, len(prefix))
	}
	return prefix, ""
}

// NormalizeEndpoint returns an other_s3_compatible endpoint as stored:
// scheme://host[:port][/path], scheme and host lower-case, without a
// default port or a trailing slash. problem is "" when s is valid: http or
// https, an ASCII host name or an IP address, no credentials, query or
// fragment, a path of plain segments if any.
func NormalizeEndpoint(s string) (norm, problem string) {
	const bad = "must be an absolute http(s) URL of the S3 API, such as https://s3.example.com"
	if len(s) > MaxEndpoint {
		return "", fmt.Sprintf("must be at most %d characters", MaxEndpoint)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '\\' }) {
		return "", bad
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.Host == "" {
		return "", bad
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", "must be an http or https URL"
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return "", "must not hold credentials: send them as access_key_id and secret_access_key"
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(s, "?#") {
		return "", "must not have a query or a fragment"
	}
	path, problem := endpointPath(u.Path)
	if problem == "" && u.EscapedPath() != u.Path {
		path, problem = "", "must write its path without percent-encoding"
	}
	if problem != "" {
		return "", problem
	}
	host, port := u.Hostname(), u.Port()
	if strings.HasSuffix(u.Host, ":") {
		return "", "has an empty port"
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "", "has an invalid port"
		}
		if scheme == "http" && n == 80 || scheme == "https" && n == 443 {
			port = ""
		}
	}
	if ip := net.ParseIP(host); ip != nil {
		if strings.Contains(host, ":") {
			host = "[" + strings.ToLower(host) + "]"
		}
	} else {
		host = strings.ToLower(host)
		if problem := checkHostName(host); problem != "" {
			return "", problem
		}
	}
	norm = scheme + "://" + host
	if port != "" {
		norm += ":" + port
	}
	return norm + path, ""
}

// endpointPath checks the path of an endpoint (some gateways serve S3
// under one) and returns it without a trailing slash: segments of
// letters, digits, '-', '.', '_' and '~', none empty, "." or "..".
func endpointPath(p string) (string, string) {
	const bad = "may have a path of letters, digits, '-', '.', '_' and '~' between slashes only (the bucket is connection_info.bucket and the prefix connection_info.key_prefix)"
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", ""
	}
	for _, seg := range strings.Split(p, "/")[1:] {
		if seg == "" || seg == "." || seg == ".." {
			return "", bad
		}
		for i := 0; i < len(seg); i++ {
			if c := seg[i]; !isAlnum(c) && !(c >= 'A' && c <= 'Z') && c != '-' && c != '.' && c != '_' && c != '~' {
				return "", bad
			}
		}
	}
	return p, ""
}

// checkHostName checks an ASCII DNS name (lower-case already).
func checkHostName(h string) string {
	const bad = "must have a valid host name (ASCII; xn-- form for international names) or IP address"
	if h == "" || len(h) > 253 {
		return bad
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return bad
		}
		for i := 0; i < len(l); i++ {
			if !isAlnum(l[i]) && l[i] != '-' {
				return bad
			}
		}
	}
	// A name ending in a number is an address in some spelling (decimal,
	// octal, hex, short forms) that resolvers read differently.
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") && strings.Trim(last[2:], "0123456789abcdef") == "" {
		return "must write an IP address in its usual form (dotted decimal for IPv4)"
	}
	return ""
}

// checkEndpointHost refuses an endpoint whose host is an address literal or
// local name the egress refuses (loopback, private and metadata addresses,
// localhost), unless allowPrivate (metadata stays refused). Names are not
// resolved here: the storage client must check what they resolve to when it
// dials.
func checkEndpointHost(endpoint string, allowPrivate bool) string {
	_, err := egress.CheckURL(context.Background(), resource.NoLookup, endpoint, allowPrivate)
	switch {
	case errors.Is(err, egress.ErrCloudMetadata):
		return "must not be a cloud metadata address"
	case errors.Is(err, egress.ErrBlockedAddress):
		return "must not be a loopback, private or local address"
	case errors.Is(err, egress.ErrInvalidHost):
		return "must have a valid host name (ASCII; xn-- form for international names) or IP address"
	}
	return ""
}
