package storage

import (
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/egress"
)

// Config configures a Connector.
type Config struct {
	// TestTimeout bounds a connection test, every attempt and STS included.
	TestTimeout time.Duration
	// WriteTimeout bounds a write of up to WriteMinRate bytes, every
	// attempt included; a larger write gets one second more per
	// WriteMinRate bytes, and one of unknown size MaxWriteTimeout.
	WriteTimeout time.Duration
	// WriteMinRate is the slowest throughput, in bytes per second, a write
	// is given time for.
	WriteMinRate int64
	// MaxWriteTimeout caps a write's bound.
	MaxWriteTimeout time.Duration
	// PartSize: a write of more bytes is a multipart upload of parts this
	// size, streamed; a write holds about three parts in memory at most
	// (one sending, one queued, one filling), whatever its size. At least
	// 5 MiB (S3's smallest part).
	PartSize int64
	// MaxAttempts bounds the attempts of each S3 or STS request (the first
	// included): the SDK's standard retryer retries HTTP 5xx, throttling
	// (SlowDown, 429, ...) and broken connections with jittered
	// exponential backoff.
	MaxAttempts int
	// MaxBackoff caps the wait between two attempts.
	MaxBackoff time.Duration

	// STSRegion is the region whose STS endpoint assumes aws_s3 roles
	// (sts.<region>.amazonaws.com), whatever the bucket's region: the
	// service's own region, always enabled for its account, where an
	// opt-in region of a bucket might not be. Credentials of a regional
	// STS endpoint hold in every region.
	STSRegion string
	// STSEndpoint, when set, replaces that endpoint (tests: a local
	// server).
	STSEndpoint string
	// STSCredentials is the service's own AWS identity, the principal the
	// organizations' roles trust; nil loads the SDK's default chain
	// (AWS_ACCESS_KEY_ID..., shared files, container or instance role)
	// once, at the first aws_s3 connection.
	STSCredentials aws.CredentialsProvider

	// AllowPrivate lets endpoints resolve to loopback and private
	// addresses (--allow-private-urls; tests). Cloud metadata addresses
	// stay blocked: every connection is dialed through egress.Check.
	AllowPrivate bool
	// Resolver looks up endpoint host names; nil is net.DefaultResolver.
	Resolver egress.Resolver

	// EndpointOverride, for tests only, sends the S3 requests of every
	// connection to this URL, path style, keeping the connection's region
	// and credentials (aws_s3 still assumes its role through STS).
	EndpointOverride string

	// Registerer receives the storage metrics; nil skips them.
	Registerer prometheus.Registerer
	// Logger receives connection tests, writes and the SDK's retries; nil
	// is slog.Default(). Nothing logged holds a secret.
	Logger *slog.Logger

	// transport replaces the HTTP transport (tests: requests answered
	// without a network).
	transport http.RoundTripper
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		TestTimeout:     30 * time.Second,
		WriteTimeout:    60 * time.Second,
		WriteMinRate:    1 << 20,
		MaxWriteTimeout: 30 * time.Minute,
		PartSize:        16 << 20,
		MaxAttempts:     4,
		MaxBackoff:      5 * time.Second,
		STSRegion:       "us-east-1",
	}
}

// RegisterFlags registers the settings of the writes to storage
// destinations on fs (--storage-*), each defaulting to its value in c:
// start from DefaultConfig.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.TestTimeout, "storage-test-timeout", c.TestTimeout, "bound of a storage destination's connection test")
	fs.DurationVar(&c.WriteTimeout, "storage-write-timeout", c.WriteTimeout, "bound of a write to a storage destination, plus a second per --storage-write-min-rate bytes")
	fs.Int64Var(&c.WriteMinRate, "storage-write-min-rate", c.WriteMinRate, "slowest write throughput, bytes per second, a write is given time for")
	fs.DurationVar(&c.MaxWriteTimeout, "storage-max-write-timeout", c.MaxWriteTimeout, "longest bound of one write")
	fs.Int64Var(&c.PartSize, "storage-part-size", c.PartSize, "writes larger than this are multipart uploads of parts this size (at least 5 MiB)")
	fs.IntVar(&c.MaxAttempts, "storage-max-attempts", c.MaxAttempts, "attempts of each S3 or STS request, the first included")
	fs.DurationVar(&c.MaxBackoff, "storage-max-backoff", c.MaxBackoff, "longest wait between two attempts")
	fs.StringVar(&c.STSEndpoint, "storage-sts-endpoint", c.STSEndpoint, "STS endpoint aws_s3 destinations' roles are assumed through (default: AWS's, in --storage-sts-region)")
	fs.StringVar(&c.STSRegion, "storage-sts-region", c.STSRegion, "region of the STS endpoint aws_s3 roles are assumed through")
}

// minPartSize is S3's smallest part of a multipart upload.
const minPartSize = 5 << 20

// Validate reports the first invalid setting, naming its flag.
func (c *Config) Validate() error {
	switch {
	case c.TestTimeout <= 0:
		return fmt.Errorf("storage test timeout (--storage-test-timeout) %v: must be positive", c.TestTimeout)
	case c.WriteTimeout <= 0:
		return fmt.Errorf("storage write timeout (--storage-write-timeout) %v: must be positive", c.WriteTimeout)
	case c.WriteMinRate <= 0:
		return fmt.Errorf("storage write minimum rate (--storage-write-min-rate) %d: must be positive", c.WriteMinRate)
	case c.MaxWriteTimeout < c.WriteTimeout:
		return fmt.Errorf("storage maximum write timeout (--storage-max-write-timeout) %v: must be at least the write timeout %v", c.MaxWriteTimeout, c.WriteTimeout)
	case c.PartSize < minPartSize:
		return fmt.Errorf("storage part size (--storage-part-size) %d: must be at least %d (5 MiB)", c.PartSize, minPartSize)
	case c.MaxAttempts < 1:
		return fmt.Errorf("storage max attempts (--storage-max-attempts) %d: must be at least 1", c.MaxAttempts)
	case c.MaxBackoff <= 0:
		return fmt.Errorf("storage max backoff (--storage-max-backoff) %v: must be positive", c.MaxBackoff)
	case !awsRegionShape.MatchString(c.STSRegion):
		return fmt.Errorf("storage STS region (--storage-sts-region) %q: must be an AWS region such as us-east-1", c.STSRegion)
	}
	for _, u := range []struct{ flag, value string }{
		{"--storage-sts-endpoint", c.STSEndpoint},
		{"EndpointOverride", c.EndpointOverride},
	} {
		if u.value == "" {
			continue
		}
		if p, err := url.Parse(u.value); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("storage %s %q: must be an absolute http(s) URL", u.flag, u.value)
		}
	}
	return nil
}

// writeTimeout is the bound of a write of size bytes (-1: unknown).
func (c *Config) writeTimeout(size int64) time.Duration {
	if size < 0 {
		return c.MaxWriteTimeout
	}
	d := c.WriteTimeout + time.Duration(size/c.WriteMinRate)*time.Second
	return min(d, c.MaxWriteTimeout)
}
