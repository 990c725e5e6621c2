package edge

import (
	"errors"
	"fmt"
	"net"
	"net/url"
)

// Config configures the edge tier.
type Config struct {
	// Addr is the public listen address.
	Addr string
	// OriginURL is the base URL of the origin tier.
	OriginURL string
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
}

// DefaultConfig returns the defaults of the operator contract.
func DefaultConfig() Config {
	return Config{
		Addr:      "127.0.0.1:8080",
		OriginURL: "http://127.0.0.1:8081",
		CacheDir:  "./data/edge-cache",
		CacheMem:  256 << 20,
		CacheDisk: 8 << 30,
	}
}

// Validate reports the first invalid setting, naming its flag.
func (c *Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("--addr %q: %w", c.Addr, err)
	}
	u, err := url.Parse(c.OriginURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--origin-url %q: want an absolute http(s) URL", c.OriginURL)
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
	return nil
}
