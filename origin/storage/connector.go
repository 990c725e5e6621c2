package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/uuid"

	"github.com/pictorhq/pictor/origin/awslog"
	"github.com/pictorhq/pictor/origin/egress"
)

// Connector opens Writers on connections and runs connection tests. It
// holds what they share: one HTTP transport (every dial checked by
// egress.Check), the service's own AWS credentials, the metrics, and a
// bounded cache of Writers so that a destination's client (and its
// assumed role's credentials) outlives one write.
type Connector struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	http    *http.Client
	closeFn func()

	base aws.CredentialsProvider // the service's identity for sts:AssumeRole

	mu      sync.Mutex
	writers map[Connection]*Writer
}

// maxCachedWriters bounds the Writer cache; past it an arbitrary Writer is
// dropped (it still works for whoever holds it).
const maxCachedWriters = 1024

// Bounds of the transport, below the operation's own timeout.
const (
	dialTimeout           = 10 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 60 * time.Second
)

// New validates cfg and returns a Connector.
func New(cfg Config) (*Connector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Connector{cfg: cfg, log: log, metrics: m, writers: map[Connection]*Writer{}}
	if cfg.transport != nil {
		c.http = &http.Client{Transport: cfg.transport}
		c.closeFn = func() {}
	} else {
		t := c.newTransport()
		c.http = &http.Client{Transport: t}
		c.closeFn = t.CloseIdleConnections
	}
	var base aws.CredentialsProvider = &defaultChain{}
	if cfg.STSCredentials != nil {
		base = cfg.STSCredentials
	}
	c.base = aws.NewCredentialsCache(serviceCredentials{base})
	return c, nil
}

// Close drops the cached Writers and closes idle connections. Writers
// still held keep working.
func (c *Connector) Close() {
	c.mu.Lock()
	clear(c.writers)
	c.mu.Unlock()
	c.closeFn()
}

// newTransport is the HTTP transport of every S3 and STS request. It
// dials only addresses egress.Check allows (no loopback or private
// address unless AllowPrivate, never cloud metadata), the checked
// address itself so that DNS cannot answer twice, and no proxy.
func (c *Connector) newTransport() *http.Transport {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, portText, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			port, err := strconv.ParseUint(portText, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("port %q: %w", portText, err)
			}
			addrs, err := egress.Check(ctx, c.cfg.Resolver, host, c.cfg.AllowPrivate)
			if err != nil {
				return nil, err
			}
			var last error
			for _, a := range addrs {
				conn, err := dialer.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
				if err == nil {
					return conn, nil
				}
				last = err
			}
			return nil, last
		},
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: responseHeaderTimeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
	}
}

// Open returns the Writer of conn, from the cache when one was opened on
// the same settings. A *ConnectionError reports settings it cannot use.
func (c *Connector) Open(conn Connection) (*Writer, error) {
	c.mu.Lock()
	w, ok := c.writers[conn]
	c.mu.Unlock()
	if ok {
		return w, nil
	}
	w, err := c.newWriter(conn)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.writers[conn]; ok {
		return cached, nil
	}
	if len(c.writers) >= maxCachedWriters {
		for k := range c.writers {
			delete(c.writers, k)
			break
		}
	}
	c.writers[conn] = w
	return w, nil
}

// newWriter builds the SDK clients of conn.
func (c *Connector) newWriter(conn Connection) (*Writer, error) {
	ep, err := resolve(conn)
	if err != nil {
		return nil, err
	}
	if conn.Provider == OtherS3Compatible && conn.Region == "" {
		conn.Region = DefaultRegion
	}
	info := opInfo{
		bucket:    conn.Bucket,
		keyPrefix: conn.KeyPrefix,
		host:      displayHost(ep),
		region:    ep.Region,
		roleARN:   conn.RoleARN,
	}

	var creds aws.CredentialsProvider
	if ep.AssumeRole {
		stsOpts := sts.Options{
			Region:        c.cfg.STSRegion,
			Credentials:   c.base,
			HTTPClient:    c.http,
			Retryer:       c.retryer(),
			Logger:        awslog.New(c.log, "storage sdk"),
			ClientLogMode: aws.LogRetries,
			APIOptions:    []func(*middleware.Stack) error{addAttemptMetrics(c.metrics, conn.Provider, "sts")},
		}
		info.stsHost = "sts." + c.cfg.STSRegion + ".amazonaws.com"
		if c.cfg.STSEndpoint != "" {
			stsOpts.BaseEndpoint = aws.String(c.cfg.STSEndpoint)
			info.stsHost = hostOf(c.cfg.STSEndpoint)
		}
		provider := stscreds.NewAssumeRoleProvider(sts.New(stsOpts), conn.RoleARN, func(o *stscreds.AssumeRoleOptions) {
			o.ExternalID = aws.String(conn.ExternalID)
			o.RoleSessionName = "pictor-storage"
			o.Duration = stscreds.DefaultDuration
		})
		creds = aws.NewCredentialsCache(provider)
	} else {
		creds = credentials.NewStaticCredentialsProvider(conn.AccessKeyID, conn.SecretAccessKey, "")
	}

	opts := s3.Options{
		Region:        ep.Region,
		Credentials:   creds,
		HTTPClient:    c.http,
		Retryer:       c.retryer(),
		UsePathStyle:  ep.PathStyle,
		Logger:        awslog.New(c.log, "storage sdk"),
		ClientLogMode: aws.LogRetries,
		APIOptions: []func(*middleware.Stack) error{
			addAnswerCheck,
			addAttemptMetrics(c.metrics, conn.Provider, "s3"),
		},
	}
	if ep.URL != "" {
		opts.BaseEndpoint = aws.String(ep.URL)
	}
	if !ep.AWS {
		opts.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		opts.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}
	if c.cfg.EndpointOverride != "" {
		opts.BaseEndpoint = aws.String(c.cfg.EndpointOverride)
		opts.UsePathStyle = true
		info.host = hostOf(c.cfg.EndpointOverride)
	}
	client := s3.New(opts)
	//lint:ignore SA1019 feature/s3/manager is the chosen uploader (docs/decisions.md); transfermanager is its successor.
	uploader := manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = c.cfg.PartSize
		// One part in flight: memory stays a few parts whatever the size.
		u.Concurrency = 1
		u.RequestChecksumCalculation = opts.RequestChecksumCalculation
	})
	return &Writer{c: c, conn: conn, endpoint: ep, s3: client, uploader: uploader, info: info}, nil
}

// retryer is the SDK's standard retryer, bounded by MaxAttempts and
// MaxBackoff, that does not retry what another attempt cannot change: a
// refused address, an unknown host, a certificate.
func (c *Connector) retryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = c.cfg.MaxAttempts
		o.MaxBackoff = c.cfg.MaxBackoff
		o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(permanent)}, o.Retryables...)
	})
}

// permanent says "do not retry" of failures no retry can change.
func permanent(err error) aws.Ternary {
	var dns *net.DNSError
	switch {
	case errors.Is(err, egress.ErrBlockedAddress),
		errors.As(err, &dns) && dns.IsNotFound,
		networkKind(err) == ErrTLS && !errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, errNoServiceCredentials):
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// displayHost is the endpoint's host as the organization knows it, for
// error messages.
func displayHost(ep endpoint) string {
	if ep.URL == "" {
		return "s3." + ep.Region + ".amazonaws.com"
	}
	return hostOf(ep.URL)
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return u.Host
}

// Test is the connection test of conn: it writes a small text object
// under <prefix>/.hcti/connection-tests/ and leaves it there (deleting
// would need s3:DeleteObject, which a write-only key rightly lacks). It
// is bounded by Config.TestTimeout; its error is an *Error (Describe
// words it) or a *ConnectionError.
func (c *Connector) Test(ctx context.Context, conn Connection) error {
	start := time.Now()
	err := c.test(ctx, conn)
	c.metrics.tests.WithLabelValues(string(conn.Provider), kindLabel(err)).Inc()
	if err != nil {
		c.log.DebugContext(ctx, "storage connection test failed", "connection", conn,
			"kind", kindLabel(err), "error", Describe(err), "duration", time.Since(start))
	} else {
		c.log.DebugContext(ctx, "storage connection test succeeded", "connection", conn, "duration", time.Since(start))
	}
	return err
}

func (c *Connector) test(ctx context.Context, conn Connection) error {
	w, err := c.newWriter(conn) // never a cached one: the test is of the settings as they are now
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	key := Key(conn.KeyPrefix, testObjectName(now))
	body := fmt.Appendf(nil, "Pictor storage destination connection test, written %s. Safe to delete.\n", now.Format(time.RFC3339))
	return w.put(ctx, c.cfg.TestTimeout, func(ctx context.Context) error {
		_, err := w.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(conn.Bucket),
			Key:           aws.String(key),
			Body:          bytes.NewReader(body),
			ContentLength: aws.Int64(int64(len(body))),
			ContentType:   aws.String("text/plain; charset=utf-8"),
		})
		return err
	})
}

// TestPrefix is where connection tests write, under the key prefix.
const TestPrefix = ".hcti/connection-tests/"

// testObjectName names a connection test's object: its time, then random
// digits so that two tests in the same second do not collide.
func testObjectName(t time.Time) string {
	return TestPrefix + t.Format("20060102T150405Z") + "-" + uuid.NewString()[:8] + ".txt"
}

// defaultChain loads the SDK's default credential chain once, at its
// first use (not at New: a service without aws_s3 destinations needs no
// AWS identity). A failed load is tried again at the next use.
type defaultChain struct {
	mu    sync.Mutex
	chain aws.CredentialsProvider
}

func (d *defaultChain) Retrieve(ctx context.Context) (aws.Credentials, error) {
	d.mu.Lock()
	chain := d.chain
	if chain == nil {
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			d.mu.Unlock()
			return aws.Credentials{}, err
		}
		if cfg.Credentials == nil {
			d.mu.Unlock()
			return aws.Credentials{}, errors.New("no credentials in the default chain")
		}
		d.chain, chain = cfg.Credentials, cfg.Credentials
	}
	d.mu.Unlock()
	return chain.Retrieve(ctx)
}

// errNoServiceCredentials marks a failure to get the service's own AWS
// credentials, so that it is not taken for the organization's role.
var errNoServiceCredentials = errors.New("service AWS credentials unavailable")

type serviceCredentials struct{ p aws.CredentialsProvider }

func (s serviceCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	v, err := s.p.Retrieve(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return v, err
		}
		return v, fmt.Errorf("%w: %w", errNoServiceCredentials, err)
	}
	return v, nil
}
