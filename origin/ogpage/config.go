package ogpage

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/sharedmetric"
)

// DefaultUserAgent is sent when neither the Request nor the Config names
// one.
const DefaultUserAgent = "Mozilla/5.0 (compatible; PictorOG/1.0)"

// Config configures a Fetcher.
type Config struct {
	// Gateway filters every request of every fetch; required.
	Gateway *egress.Gateway
	// AllowPrivate lets fetches reach loopback and private networks
	// (--allow-private-urls), as it lets renders. Cloud metadata stays
	// blocked.
	AllowPrivate bool
	// Timeout bounds a whole fetch: redirects, headers and body.
	Timeout time.Duration
	// MaxBytes bounds the body read, counted after Content-Encoding is
	// undone; the head is read from what fits.
	MaxBytes int64
	// MaxRedirects is how many redirects a fetch follows.
	MaxRedirects int
	// UserAgent is sent when the Request names none.
	UserAgent string
	// RootCAs verifies https source pages; nil means the system's.
	RootCAs *x509.CertPool
	// Registerer receives the fetch metrics; nil skips them.
	Registerer prometheus.Registerer
	// Logger receives failed fetches at debug level; nil means
	// slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults: 10 s, 2 MiB, 5 redirects.
func DefaultConfig() Config {
	return Config{
		Timeout:      10 * time.Second,
		MaxBytes:     2 << 20,
		MaxRedirects: 5,
		UserAgent:    DefaultUserAgent,
		Logger:       slog.Default(),
	}
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	if c.Gateway == nil {
		return errors.New("ogpage Gateway: required")
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("ogpage Timeout %v: must be positive", c.Timeout)
	}
	if c.MaxBytes < charsetPeek {
		return fmt.Errorf("ogpage MaxBytes %d: want at least %d", c.MaxBytes, charsetPeek)
	}
	if c.MaxRedirects < 0 {
		return fmt.Errorf("ogpage MaxRedirects %d: must not be negative", c.MaxRedirects)
	}
	if c.UserAgent == "" || c.Logger == nil {
		return errors.New("ogpage UserAgent and Logger: required (DefaultConfig sets them)")
	}
	return nil
}

// Outcomes of the fetches metric.
const (
	outcomeOK          = "ok"
	outcomeNotModified = "not_modified"
	outcomeBlocked     = "blocked"
	outcomeUnreachable = "unreachable"
	outcomeTimeout     = "timeout"
	outcomeRedirects   = "too_many_redirects"
	outcomeNotHTML     = "not_html"
	outcomeStatus      = "status"
	outcomeInvalid     = "invalid"
	outcomeCanceled    = "canceled"
	outcomeInternal    = "error"
)

type metrics struct {
	fetches  *prometheus.CounterVec
	duration prometheus.Histogram
}

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	f := sharedmetric.With(r)
	m := &metrics{
		fetches: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_ogpage_fetches_total",
			Help: "Fetches of OG source pages, by outcome (ok, not_modified, blocked, unreachable, timeout, status, ...).",
		}, []string{"outcome"}),
		duration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "pictor_ogpage_fetch_duration_seconds",
			Help:    "Time to fetch an OG source page and read its head, whatever the outcome.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}),
	}
	return m, f.Err()
}
