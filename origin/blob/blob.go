package blob

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/prometheus"
)

// Blobs keeps the files of images, each named by its image's id and a file
// name (ids and names are single path segments: no slash, no leading
// dot). Implementations are safe for concurrent use: the files store
// (Store) and the S3 store (New with an s3:// URL).
type Blobs interface {
	// Put writes data as id/name, replacing what was there, atomically: a
	// reader sees the old content or the new one, never a mix.
	Put(ctx context.Context, id, name string, data []byte) error
	// Open opens id/name for streaming reads; ctx bounds the reads of the
	// Object too. A missing file is ErrNotFound.
	Open(ctx context.Context, id, name string) (Object, error)
	// Read returns the whole content of id/name, verified against its
	// checksum where the store records one. A missing file is ErrNotFound.
	Read(ctx context.Context, id, name string) ([]byte, error)
	// Remove deletes every file of the image; a missing image is not an
	// error.
	Remove(ctx context.Context, id string) error
	// Close releases the store's connections; no method may be called
	// after it.
	Close() error
}

// Object is an open file. Seek(0, io.SeekEnd) gives its size without
// reading it; http.ServeContent serves it with Range support. An Object is
// for one goroutine at a time, as an *os.File read with Seek is.
//
// A store that records checksums verifies them when a read reaches the
// end of a file whose every byte was read in order from the start: the
// Read that would deliver the last bytes returns ErrCorrupt instead, so a
// reader (or an HTTP client, whose answer then ends short of its
// Content-Length) never gets the whole of a corrupt file. A read of a part
// (a Range) cannot be verified: it is served unchecked.
//
// The S3 store's Object holds one GET's body: Open sends a GET of the
// whole object (a HeadObject only, when its ctx is Partial), a Read at
// another offset than that body's (after a Seek) drops it (and its
// connection) for a ranged GET of the same version from there to the end,
// or to the bound a Limit gave (see Limiter). When that version is gone
// (the object was replaced or removed since Open), such a Read fails with
// ErrChanged.
type Object interface {
	io.Reader
	io.Seeker
	io.Closer
}

// Config selects and configures a store.
type Config struct {
	// URL selects the store (--blobs):
	//   - "" or "file:": the files store in DataDir/images;
	//   - "file:///path": the files store in /path;
	//   - "s3://bucket/prefix?endpoint=URL&region=R&path_style=true": an S3
	//     store. Every parameter is optional: without endpoint it is AWS
	//     S3 (the region then comes from the SDK's configuration when not
	//     given), with one the region defaults to us-east-1. Credentials
	//     come from the SDK's default chain (AWS_ACCESS_KEY_ID and
	//     AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared files, a
	//     container or instance role), never from the URL.
	URL string
	// DataDir is the origin's data directory (--data-dir).
	DataDir string

	// Timeout bounds the S3 store's waits: a Put, Read or Remove whole
	// (every attempt included, so a Put must send its object within it),
	// each attempt of an Open's GET until its answer, and each read of an
	// open Object that waits for data (a slow but moving transfer goes
	// on; a silent server fails it).
	Timeout time.Duration
	// MaxAttempts bounds the attempts of each S3 request (the first
	// included): the SDK's standard retryer retries 5xx, throttling and
	// broken connections with jittered exponential backoff.
	MaxAttempts int
	// MaxBackoff caps the wait between two attempts.
	MaxBackoff time.Duration
	// Credentials, when set, replaces the SDK's default chain (tests).
	Credentials aws.CredentialsProvider
	// Registerer receives the S3 store's metrics; nil skips them.
	Registerer prometheus.Registerer
	// Logger receives checksum failures and the SDK's retries; nil is
	// slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults: the files store.
func DefaultConfig() Config {
	return Config{
		Timeout:     60 * time.Second,
		MaxAttempts: 3,
		MaxBackoff:  2 * time.Second,
	}
}

// RegisterFlags registers where masters and renditions live on fs
// (--blobs, --blobs-*), each defaulting to its value in c: start from
// DefaultConfig.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.URL, "blobs", c.URL, "where masters and renditions live: files in <data-dir>/images (default), file:///path, or s3://bucket/prefix?endpoint=URL&region=R&path_style=true (credentials from the AWS SDK's usual chain)")
	fs.DurationVar(&c.Timeout, "blobs-timeout", c.Timeout, "bound of an S3 blob read, write or removal (and of each wait of a streamed read)")
	fs.IntVar(&c.MaxAttempts, "blobs-max-attempts", c.MaxAttempts, "attempts of each S3 blob request, the first included")
	fs.DurationVar(&c.MaxBackoff, "blobs-max-backoff", c.MaxBackoff, "longest wait between two attempts of an S3 blob request")
}

// Validate reports the first invalid setting, naming its flag.
func (c *Config) Validate() error {
	switch {
	case c.Timeout <= 0:
		return fmt.Errorf("blob store timeout (--blobs-timeout) %v: must be positive", c.Timeout)
	case c.MaxAttempts < 1:
		return fmt.Errorf("blob store max attempts (--blobs-max-attempts) %d: must be at least 1", c.MaxAttempts)
	case c.MaxBackoff <= 0:
		return fmt.Errorf("blob store max backoff (--blobs-max-backoff) %v: must be positive", c.MaxBackoff)
	}
	_, err := parseURL(c.URL, c.DataDir)
	return err
}

// New validates cfg and opens the store its URL names.
func New(ctx context.Context, cfg Config) (Blobs, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	loc, err := parseURL(cfg.URL, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	if loc.dir != "" {
		st, err := Open(loc.dir)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	st, err := newS3(ctx, cfg, loc.s3)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// OpenURL opens the store u names (see Config.URL) with the default
// settings.
func OpenURL(ctx context.Context, u, dataDir string) (Blobs, error) {
	cfg := DefaultConfig()
	cfg.URL, cfg.DataDir = u, dataDir
	return New(ctx, cfg)
}

// location is a parsed Config.URL: a directory or an S3 bucket.
type location struct {
	dir string
	s3  s3Location
}

type s3Location struct {
	bucket    string
	prefix    string // without leading or trailing slash
	endpoint  string // "" for AWS S3
	region    string // "" for the SDK's configuration
	pathStyle bool
}

// parseURL reads a Config.URL; its errors name --blobs.
func parseURL(raw, dataDir string) (location, error) {
	bad := func(format string, args ...any) (location, error) {
		return location{}, fmt.Errorf("blob store URL (--blobs) %q: %s", raw, fmt.Sprintf(format, args...))
	}
	if raw == "" || raw == "file:" {
		if dataDir == "" {
			return bad("the files store needs a data directory (--data-dir)")
		}
		return location{dir: filepath.Join(dataDir, "images")}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("not a URL")
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" || u.Path == "" || !filepath.IsAbs(u.Path) || u.RawQuery != "" {
			return bad("must be file: or file:///absolute/path")
		}
		return location{dir: filepath.Clean(u.Path)}, nil
	case "s3":
	default:
		return bad("must be file: or s3://bucket/prefix")
	}
	loc := s3Location{bucket: u.Host, prefix: strings.Trim(u.Path, "/")}
	switch {
	case u.User != nil:
		return bad("credentials do not go in the URL: the SDK's default chain provides them (AWS_ACCESS_KEY_ID, AWS_PROFILE, ...)")
	case !bucketShape(loc.bucket):
		return bad("bucket %q: must be 3 to 255 letters, digits, dots, hyphens and underscores", loc.bucket)
	case strings.Contains(loc.prefix, "//") || strings.Contains("/"+loc.prefix+"/", "/../") || strings.Contains("/"+loc.prefix+"/", "/./"):
		return bad("prefix %q: must have no empty, . or .. segment", loc.prefix)
	case len(loc.prefix) > 512:
		return bad("prefix: longer than 512 bytes")
	case u.Fragment != "":
		return bad("no fragment allowed")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("query: %v", err)
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return bad("%s: given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "endpoint":
			e, err := url.Parse(v)
			if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil || e.RawQuery != "" {
				return bad("endpoint %q: must be an absolute http(s) URL", v)
			}
			loc.endpoint = strings.TrimRight(v, "/")
		case "region":
			if !regionShape(v) {
				return bad("region %q: must be a region name such as us-east-1", v)
			}
			loc.region = v
		case "path_style":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return bad("path_style %q: must be true or false", v)
			}
			loc.pathStyle = b
		default:
			return bad("unknown parameter %q (endpoint, region and path_style are known)", k)
		}
	}
	if loc.endpoint != "" && loc.region == "" {
		loc.region = "us-east-1"
	}
	return location{s3: loc}, nil
}

func bucketShape(b string) bool {
	if len(b) < 3 || len(b) > 255 {
		return false
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func regionShape(r string) bool {
	if r == "" || len(r) > 64 {
		return false
	}
	for _, c := range r {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
