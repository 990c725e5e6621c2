package edge

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"time"

	"github.com/pictorhq/pictor/edge/origins"
)

// Config configures the edge tier.
type Config struct {
	// Addr is the public listen address.
	Addr string
	// OriginURLs are the base URLs of the origins (--origin-url, repeated
	// or comma-separated). The edge health-checks them and sends each miss
	// and relayed request to a healthy one, failing over to the next.
	OriginURLs []string
	// OriginURL is the one origin's base URL, used when OriginURLs is
	// empty: a shorthand for callers with a single origin.
	OriginURL string
	// OriginCheckInterval is the time between two health checks (GET
	// /healthz) of each origin, when there are several; OriginCheckTimeout
	// bounds one. An origin is down after two failed checks in a row, or at
	// once when a request cannot connect to it or its connection is reset;
	// it is up again after one check that passes, or an answer to a request
	// sent after it went down (see package origins).
	OriginCheckInterval time.Duration
	OriginCheckTimeout  time.Duration
	// PublicURL is the base of image URLs served here.
	PublicURL string
	// CacheDir holds the disk cache.
	CacheDir string
	// CacheMem bounds the memory cache, in bytes.
	CacheMem int64
	// CacheDisk bounds the disk cache, in bytes.
	CacheDisk int64
	// EdgeToken authenticates the edge on the origin's purge channel.
	EdgeToken string
	// Name identifies the edge in the origin's logs.
	Name string
	// Standalone is an edge in its own process: without an edge token it
	// cannot hear purges, so it caches nothing. An edge in the origin's
	// process (serve) gets purges directly.
	Standalone bool
	// Listener, when set, is used instead of listening on Addr.
	Listener net.Listener

	// MaxConns bounds the client connections open at once; one more is
	// answered 503 (standard body, Retry-After) and closed at once.
	MaxConns int
	// MaxConnsPerIP bounds the connections of one client address; one more
	// is answered 429 and closed. 0 means no per-address limit.
	MaxConnsPerIP int
	// HeaderTimeout bounds the time from a request's first byte (a new
	// connection's accept, for its first request) to the end of its
	// headers: a slower client gets 408 and is closed.
	HeaderTimeout time.Duration
	// BodyGrace and BodyMinRate bound a request body's upload: after
	// BodyGrace, the body must have arrived at BodyMinRate bytes per second
	// on average since its headers, or it gets 408 and is closed.
	BodyGrace   time.Duration
	BodyMinRate int64
	// TrustedProxies are the networks of proxies in front of the edge (load
	// balancers) whose X-Forwarded-For names the client: behind them, the
	// client of a request is the address they saw, which the origin's
	// per-client limits count by (forward.Client). None by default: the
	// peer is the client.
	TrustedProxies []netip.Prefix
	// IdleTimeout bounds the wait for the next request on a keep-alive
	// connection.
	IdleTimeout time.Duration

	// Now is the clock of OG images' freshness; nil is time.Now. Tests
	// set it to make entries stale without waiting.
	Now func() time.Time
}

// DefaultConfig returns the defaults of the operator contract.
func DefaultConfig() Config {
	return Config{
		Addr:                "127.0.0.1:8080",
		OriginURL:           "http://127.0.0.1:8081",
		OriginCheckInterval: origins.DefaultInterval,
		OriginCheckTimeout:  origins.DefaultTimeout,
		CacheDir:            "./data/edge-cache",
		CacheMem:            256 << 20,
		CacheDisk:           8 << 30,
		MaxConns:            4_096,
		MaxConnsPerIP:       1_000,
		HeaderTimeout:       10 * time.Second,
		BodyGrace:           10 * time.Second,
		// 4 KiB/s (32 kbit/s) is below any mobile uplink still in service:
		// a 7 MiB body (the largest the origin takes) at that rate takes
		// 30 minutes, and a 2G/EDGE upload (≥ 50 kbit/s) passes. A client
		// must keep sending to keep its connection.
		BodyMinRate: 4 << 10,
		IdleTimeout: 2 * time.Minute,
	}
}

// Origins returns the origins' base URLs: OriginURLs, or OriginURL alone.
func (c *Config) Origins() []string {
	if len(c.OriginURLs) > 0 {
		return c.OriginURLs
	}
	if c.OriginURL != "" {
		return []string{c.OriginURL}
	}
	return nil
}

// Validate reports the first invalid setting, naming its flag; of the
// origin URLs, it names every one that is not valid.
func (c *Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("--addr %q: %w", c.Addr, err)
	}
	switch err := origins.CheckURLs(c.Origins()); {
	case errors.Is(err, origins.ErrNoOrigin):
		return errors.New("--origin-url is required")
	case err != nil:
		return fmt.Errorf("--origin-url %w", err)
	}
	if c.OriginCheckInterval <= 0 {
		return fmt.Errorf("--origin-check-interval %v: want a positive duration", c.OriginCheckInterval)
	}
	if c.OriginCheckTimeout <= 0 {
		return fmt.Errorf("--origin-check-timeout %v: want a positive duration", c.OriginCheckTimeout)
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--public-url %q: want an absolute http(s) URL", c.PublicURL)
		}
	}
	if c.CacheDir == "" {
		return errors.New("--cache-dir must not be empty")
	}
	if c.CacheMem < 1<<20 {
		return fmt.Errorf("--cache-mem %d: want at least 1 MiB", c.CacheMem)
	}
	if c.CacheDisk < 4<<20 {
		return fmt.Errorf("--cache-disk %d: want at least 4 MiB", c.CacheDisk)
	}
	if c.MaxConns < 1 {
		return fmt.Errorf("--max-conns %d: want at least 1", c.MaxConns)
	}
	if c.MaxConnsPerIP < 0 || c.MaxConnsPerIP > c.MaxConns {
		return fmt.Errorf("--max-conns-per-ip %d: want 0 (no limit) to --max-conns (%d)", c.MaxConnsPerIP, c.MaxConns)
	}
	if c.HeaderTimeout <= 0 {
		return fmt.Errorf("--header-timeout %v: want a positive duration", c.HeaderTimeout)
	}
	if c.BodyGrace < 0 {
		return fmt.Errorf("--body-grace %v: want 0 or more", c.BodyGrace)
	}
	if c.BodyMinRate < 1 || c.BodyMinRate > 1<<30 {
		return fmt.Errorf("--body-min-rate %d: want 1 byte to 1 GiB per second", c.BodyMinRate)
	}
	if c.IdleTimeout <= 0 {
		return errors.New("IdleTimeout must be positive")
	}
	return nil
}
