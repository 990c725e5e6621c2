package origin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/render"
)

// Config configures the origin tier.
type Config struct {
	// DataDir holds the store, the master key and the admin endpoint file.
	DataDir string
	// Addr is the listen address of the API.
	Addr string
	// PublicURL is the base of every URL the API returns.
	PublicURL string
	// AllowPrivateURLs lets renders reach loopback and private networks.
	AllowPrivateURLs bool
	// MasterKey overrides the master key file (PICTOR_MASTER_KEY).
	MasterKey string
	// Announce receives the one-time credentials of the default organization;
	// nil means standard output.
	Announce io.Writer
	// CreateDefaultOrg creates the default organization on an empty store.
	CreateDefaultOrg bool
	// EdgeToken authenticates edges on the purge channel; empty reads or
	// creates <data-dir>/edge.token.
	EdgeToken string
	// Purger, when set, is an edge in this process (serve): purges reach it
	// directly as well as through the purge channel.
	Purger Purger
	// Listener, when set, is used instead of listening on Addr.
	Listener net.Listener
	// Chromium is the browser binary.
	Chromium string
	// ChromiumUser is the system user Chromium runs as (--chromium-user);
	// empty is render.Config.User's default.
	ChromiumUser string
	// ChromiumNoSandbox turns Chromium's sandbox off (--chromium-no-sandbox).
	ChromiumNoSandbox bool
	// ChromiumSiteIsolation turns Chromium's site isolation on
	// (--chromium-site-isolation).
	ChromiumSiteIsolation bool
	// RenderTabs is how many renders run at once (default: CPU count).
	RenderTabs int
	// RenderQueue is how many renders may wait for a tab before creation
	// answers 503.
	RenderQueue int
	// FontsURL is the base of the Google Fonts CSS API.
	FontsURL string
	// WasmCacheDir keeps the template sandbox's compiled guest across
	// restarts; empty means <data-dir>/wasm-cache.
	WasmCacheDir string
	// Egress replaces the resolver and dialer of renders' outbound
	// connections. Tests set it to stand loopback servers in for public
	// hosts; nil fields keep the system's.
	EgressResolver egress.Resolver
	EgressDial     func(ctx context.Context, network, addr string) (net.Conn, error)
	// Now is the clock of timestamps, rate-limit windows and billing
	// periods; nil is the wall clock. Tests set it.
	Now func() time.Time
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	rc := render.DefaultConfig()
	return Config{
		DataDir:          "./data",
		Addr:             "127.0.0.1:8081",
		CreateDefaultOrg: true,
		Chromium:         rc.Chromium,
		RenderTabs:       rc.Tabs,
		RenderQueue:      rc.Queue,
		FontsURL:         rc.FontsURL,
	}
}

// Validate reports the first invalid setting, naming its flag.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("--addr %q: %w", c.Addr, err)
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--public-url %q: want an absolute http(s) URL", c.PublicURL)
		}
	}
	if c.Announce == nil {
		c.Announce = os.Stdout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}
