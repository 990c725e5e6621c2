package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithy "github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"golang.org/x/sync/errgroup"

	"github.com/pictorhq/pictor/origin/awslog"
	"github.com/pictorhq/pictor/origin/egress"
)

// s3Store keeps an image's files as objects <prefix>/<shard>/<id>/<name>
// of one bucket, with the SHA-256 of each in its metadata (metaSHA256).
type s3Store struct {
	client  *s3.Client
	http    *http.Client
	bucket  string
	prefix  string // "" or ending in "/"
	timeout time.Duration
	metrics *metrics
	log     *slog.Logger
	// listPage is the MaxKeys of a list of an image's objects (tests make
	// it small to cross pages).
	listPage int32
}

var _ Blobs = (*s3Store)(nil)

// metaSHA256 is the object metadata (x-amz-meta-sha256) holding the hex
// SHA-256 of the object's content.
const metaSHA256 = "sha256"

// maxRead bounds the objects Read takes whole: far above what the render
// limits produce, it keeps a wrong object from exhausting memory.
const maxRead = 1 << 30

// Bounds of the transport, below the operation's own timeout.
const (
	dialTimeout         = 10 * time.Second
	tlsHandshakeTimeout = 10 * time.Second
)

func newS3(ctx context.Context, cfg Config, loc s3Location) (*s3Store, error) {
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	var opts []func(*config.LoadOptions) error
	if loc.region != "" {
		opts = append(opts, config.WithRegion(loc.region))
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("blob store s3://%s: AWS configuration: %w", loc.bucket, err)
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("blob store URL (--blobs) s3://%s: no region: add region= or set AWS_REGION", loc.bucket)
	}
	hc := &http.Client{Transport: newTransport(min(cfg.Timeout, dialTimeout), cfg.Timeout)}
	s := &s3Store{
		http:     hc,
		bucket:   loc.bucket,
		timeout:  cfg.Timeout,
		metrics:  m,
		log:      log,
		listPage: 1000,
	}
	if loc.prefix != "" {
		s.prefix = loc.prefix + "/"
	}
	s.client = s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.HTTPClient = hc
		o.UsePathStyle = loc.pathStyle
		if loc.endpoint != "" {
			o.BaseEndpoint = aws.String(loc.endpoint)
		}
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = cfg.MaxAttempts
			so.MaxBackoff = cfg.MaxBackoff
		})
		// The store computes and verifies its own SHA-256; the SDK's
		// default CRC trailers (aws-chunked bodies) are not understood by
		// every S3-compatible server.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.Logger = awslog.New(log, "blob s3 sdk")
		o.ClientLogMode = aws.LogRetries
		o.APIOptions = append(o.APIOptions, m.countAttempts)
	})
	return s, nil
}

// newTransport is the HTTP transport of the S3 requests: bounded dials,
// TLS handshakes and waits for an answer, and every read of a connection
// (an answer's body included) fails once the server sends nothing for
// timeout. The endpoint is the operator's: any address is allowed.
func newTransport(dial, timeout time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &idleConn{Conn: c, timeout: timeout}, nil
		},
		// HTTP/1.1: each object on its own connection, so that a reader
		// that stalls (a slow client) stalls no other, and the idle
		// timeout measures its server alone. S3 speaks HTTP/1.1 anyway.
		ForceAttemptHTTP2:     false,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: timeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64, // an origin streams many objects at once
		IdleConnTimeout:       90 * time.Second,
	}
}

// idleConn fails a read that gets nothing for timeout: a server that stops
// sending in the middle of a body does not hold a reader forever, while a
// slow but moving transfer goes on.
type idleConn struct {
	net.Conn
	timeout time.Duration
}

func (c *idleConn) Read(p []byte) (int, error) {
	if err := c.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

// Close closes the idle connections.
func (s *s3Store) Close() error {
	s.http.CloseIdleConnections()
	return nil
}

// key is the object key of id/name.
func (s *s3Store) key(id, name string) (string, error) {
	if !valid(id) || !valid(name) {
		return "", fmt.Errorf("blob: invalid key %q/%q", id, name)
	}
	return s.prefix + shard(id) + "/" + id + "/" + name, nil
}

// Put writes data with its SHA-256: in the metadata, which reads verify,
// and as x-amz-checksum-sha256, which the server verifies before storing.
func (s *s3Store) Put(ctx context.Context, id, name string, data []byte) error {
	key, err := s.key(id, name)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	octx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	_, err = s.client.PutObject(octx, &s3.PutObjectInput{
		Bucket:         aws.String(s.bucket),
		Key:            aws.String(key),
		Body:           bytes.NewReader(data),
		ContentLength:  aws.Int64(int64(len(data))),
		ContentType:    aws.String("application/octet-stream"),
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		Metadata:       map[string]string{metaSHA256: hex.EncodeToString(sum[:])},
	}, signedWith(hex.EncodeToString(sum[:])))
	err = s.fail(ctx, "put", key, err)
	s.metrics.observe("PutObject", start, err)
	return err
}

// signedWith gives the SigV4 signature the payload's SHA-256, which the
// SDK would otherwise compute again (plain HTTP) or leave unsigned
// (HTTPS): the server then checks the body against it too.
func signedWith(sum string) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("PictorBlobPayloadHash",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					return next.HandleFinalize(v4.SetPayloadHash(ctx, sum), in)
				}), "ComputePayloadHash", middleware.Before)
		})
	}
}

// Read gets the object whole and verifies it.
func (s *s3Store) Read(ctx context.Context, id, name string) ([]byte, error) {
	key, err := s.key(id, name)
	if err != nil {
		return nil, err
	}
	octx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := time.Now()
	data, err := s.read(octx, key)
	err = s.fail(ctx, "read", key, err)
	s.metrics.observe("GetObject", start, err)
	return data, err
}

func (s *s3Store) read(ctx context.Context, key string) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	want, err := checksumOf(out.Metadata)
	if err != nil {
		return nil, s.corrupt(ctx, key, err)
	}
	size := int64(-1) // unknown: a chunked answer
	if out.ContentLength != nil {
		size = *out.ContentLength
	}
	if size > maxRead {
		return nil, fmt.Errorf("object of %d bytes: larger than %d", size, maxRead)
	}
	var buf bytes.Buffer
	buf.Grow(int(max(size, 0)) + bytes.MinRead) // ReadFrom's EOF probe then fits
	if _, err := buf.ReadFrom(io.LimitReader(out.Body, maxRead+1)); err != nil {
		return nil, err
	}
	if buf.Len() > maxRead {
		return nil, fmt.Errorf("object larger than %d bytes", maxRead)
	}
	if size >= 0 && int64(buf.Len()) != size {
		return nil, fmt.Errorf("read %d bytes of %d: %w", buf.Len(), size, io.ErrUnexpectedEOF)
	}
	if got := sha256.Sum256(buf.Bytes()); got != want {
		return nil, s.corrupt(ctx, key, fmt.Errorf("content SHA-256 %x, recorded %x", got, want))
	}
	return buf.Bytes(), nil
}

// Open gets the object and returns its body to stream; reads after a
// Seek elsewhere get the rest from there with a ranged GET. Opened with a
// Partial ctx, it sends a HeadObject instead, and the first Read sends
// the GET, ranged from its offset to the bound of a Limit.
func (s *s3Store) Open(ctx context.Context, id, name string) (Object, error) {
	key, err := s.key(id, name)
	if err != nil {
		return nil, err
	}
	if isPartial(ctx) {
		return s.openLazy(ctx, key)
	}
	out, err := s.get(ctx, key, 0, -1, -1, "")
	if err != nil {
		return nil, err
	}
	o, err := s.object(ctx, key, out.ContentLength, out.ETag, out.Metadata)
	if err != nil {
		out.Body.Close()
		return nil, err
	}
	o.body, o.bodyEnd = out.Body, o.size
	return o, nil
}

// openLazy opens key with a HeadObject: no body until the first Read.
func (s *s3Store) openLazy(ctx context.Context, key string) (*s3Object, error) {
	start := time.Now()
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	err = s.fail(ctx, "open", key, err)
	s.metrics.observe("HeadObject", start, err)
	if err != nil {
		return nil, err
	}
	return s.object(ctx, key, out.ContentLength, out.ETag, out.Metadata)
}

// object is the Object of key from the answer of its GET or HEAD, without
// a body.
func (s *s3Store) object(ctx context.Context, key string, length *int64, etag *string, meta map[string]string) (*s3Object, error) {
	o := &s3Object{s: s, ctx: ctx, key: key, etag: aws.ToString(etag), hash: sha256.New()}
	var err error
	o.want, err = checksumOf(meta)
	if err != nil {
		return nil, s.corrupt(ctx, key, err)
	}
	if length == nil || *length < 0 {
		return nil, fmt.Errorf("blob open %s: answer without a Content-Length", key)
	}
	o.size = *length
	if o.size == 0 && sha256.Sum256(nil) != o.want {
		return nil, s.corrupt(ctx, key, errors.New("empty content, other SHA-256 recorded"))
	}
	return o, nil
}

// get sends a GET of key's bytes [offset, end) (end < 0, or end == size
// with offset 0: the whole object), only of the version etag names when
// set, and returns the answer, its body unread.
func (s *s3Store) get(ctx context.Context, key string, offset, end, size int64, etag string) (*s3.GetObjectOutput, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}
	switch {
	case end >= 0 && end < size:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, end-1))
	case offset > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	start := time.Now()
	out, err := s.client.GetObject(ctx, in)
	err = s.fail(ctx, "open", key, err)
	s.metrics.observe("GetObject", start, err)
	return out, err
}

// Remove lists the image's objects, every page, then deletes them, a few
// at a time. Objects written while it runs may stay.
func (s *s3Store) Remove(ctx context.Context, id string) error {
	if !valid(id) {
		return fmt.Errorf("blob: invalid id %q", id)
	}
	dir := s.prefix + shard(id) + "/" + id + "/"
	octx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket), Prefix: aws.String(dir), MaxKeys: aws.Int32(s.listPage),
	})
	for p.HasMorePages() {
		start := time.Now()
		page, err := p.NextPage(octx)
		err = s.fail(ctx, "list", dir, err)
		s.metrics.observe("ListObjectsV2", start, err)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	g, gctx := errgroup.WithContext(octx)
	g.SetLimit(8)
	for _, key := range keys {
		g.Go(func() error {
			start := time.Now()
			_, err := s.client.DeleteObject(gctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
			err = s.fail(ctx, "delete", key, err)
			s.metrics.observe("DeleteObject", start, err)
			return err
		})
	}
	return g.Wait()
}

// checksumOf reads the SHA-256 of an object's metadata.
func checksumOf(meta map[string]string) ([32]byte, error) {
	var sum [32]byte
	v, ok := meta[metaSHA256]
	if !ok {
		return sum, errors.New("no SHA-256 recorded in its metadata")
	}
	if b, err := hex.DecodeString(v); err != nil || len(b) != len(sum) {
		return sum, fmt.Errorf("recorded SHA-256 %q is not 64 hex digits", v)
	}
	hex.Decode(sum[:], []byte(v))
	return sum, nil
}

// corrupt counts and logs a checksum failure and returns it as ErrCorrupt.
func (s *s3Store) corrupt(ctx context.Context, key string, err error) error {
	s.metrics.corrupt.Inc()
	s.log.ErrorContext(ctx, "blob checksum failure", "bucket", s.bucket, "key", key, "error", err)
	return fmt.Errorf("blob %s: %w: %v", key, ErrCorrupt, err)
}

// fail words an error of op on key and makes it match this package's
// sentinels; ctx is the caller's, whose cancellation or deadline is
// returned as such.
func (s *s3Store) fail(ctx context.Context, op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrNotFound), errors.Is(err, ErrUnavailable), errors.Is(err, ErrChanged):
		return err // worded already
	case ctx.Err() != nil:
		return fmt.Errorf("blob %s %s: %w", op, key, ctx.Err())
	case notFound(err):
		return fmt.Errorf("blob %s %s: %w", op, key, ErrNotFound)
	case changed(err):
		return fmt.Errorf("blob %s %s: %w", op, key, ErrChanged)
	case unavailable(err):
		// The cause as text: its chain may hold the operation's own
		// deadline, which is not the caller's.
		return fmt.Errorf("blob %s %s: %w: %v", op, key, ErrUnavailable, err)
	}
	return fmt.Errorf("blob %s %s: %w", op, key, err)
}

func notFound(err error) bool {
	code, status := apiCode(err), httpStatus(err)
	return code == "NoSuchKey" || code == "NotFound" || (status == http.StatusNotFound && code != "NoSuchBucket")
}

func changed(err error) bool {
	return apiCode(err) == "PreconditionFailed" || httpStatus(err) == http.StatusPreconditionFailed
}

// unavailable reports a failure another try later may not have: the
// server could not be reached, did not answer in time, broke the
// connection, or kept failing or throttling.
func unavailable(err error) bool {
	var (
		send    *smithyhttp.RequestSendError
		quota   ratelimit.QuotaExceededError
		opErr   *net.OpError
		timeout interface{ Timeout() bool }
	)
	if tf := egress.TLSFaultOf(err); tf != egress.NoTLSFault && tf != egress.HandshakeRefused {
		return false // the certificate: a configuration problem, not an outage
	}
	switch status := httpStatus(err); {
	case status >= 500, status == http.StatusTooManyRequests:
		return true
	}
	switch apiCode(err) {
	case "SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequests",
		"ServiceUnavailable", "InternalError", "RequestTimeout", "RequestTimeTooSkewed":
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &timeout) && timeout.Timeout() ||
		errors.As(err, &send) || errors.As(err, &quota) || errors.As(err, &opErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, os.ErrDeadlineExceeded)
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}
