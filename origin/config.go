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

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/render"
	"github.com/pictorhq/pictor/origin/storage"
)

// Config configures the origin tier.
type Config struct {
	// DataDir holds the store, the master key and the admin endpoint file.
	DataDir string
	// Store, when set, is the PostgreSQL database of the records
	// (--store postgres://...) that several origins share; empty keeps
	// them in the embedded store in DataDir.
	Store string
	// Addr is the listen address of the API.
	Addr string
	// PublicURL is the base of every URL the API returns, the OAuth
	// issuer and the MCP endpoint's base.
	PublicURL string
	// Version is the build's version, shown to MCP clients.
	Version string
	// AllowPrivateURLs lets renders reach loopback and private networks.
	AllowPrivateURLs bool
	// MasterKey overrides the master key file (PICTOR_MASTER_KEY).
	MasterKey string
	// PreviousMasterKeys are master keys that came before MasterKey,
	// separated by commas (PICTOR_MASTER_KEY_PREVIOUS; those of
	// <data-dir>/master.key.previous are added): what they sealed still
	// opens and is sealed again under the current key (seal.Ring).
	PreviousMasterKeys string
	// NextMasterKeys are master keys that will replace MasterKey,
	// separated by commas (PICTOR_MASTER_KEY_NEXT): what they sealed
	// opens and stays as it is, while origins sharing a store move to one.
	NextMasterKeys string
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
	// Storage configures the writes to storage destinations (timeouts,
	// part size, retries, the STS endpoint and region aws_s3 roles are
	// assumed through). AllowPrivate and Registerer are the origin's.
	Storage storage.Config
	// Blobs selects and configures where masters and renditions live
	// (--blobs: files in the data directory by default, or S3). DataDir,
	// Registerer and Logger are the origin's.
	Blobs blob.Config
	// OGRechecked and StorageWritten, when set, are told of each
	// background recheck of an OG page and each background write to a
	// storage destination once it ended: observers, for tests.
	OGRechecked    func(configID, path string)
	StorageWritten func(imageID string, err error)
	// OGRenderBudget is the new renders an OG configuration may start a
	// minute (default og.DefaultBudget).
	OGRenderBudget int
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

	// HeaderTimeout bounds the reading of a request's line and headers,
	// from its first byte: past it the client gets 408 and is closed.
	// 0 means DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// BodyGrace and BodyMinRate are the slowest a request body may arrive
	// (api.BodyRate): from the end of its headers, a body must have
	// delivered BodyMinRate bytes for every second past BodyGrace, or it
	// gets 408 and its connection is closed. 0 means the defaults.
	//
	// Behind an edge, which holds its clients to the same rule, the
	// origin must be the more lenient, since the edge relays what it reads
	// as it reads it: BodyGrace at least the edge's grace plus 5 s (the
	// relay's delay), BodyMinRate at most the edge's rate. The defaults
	// are the edge's defaults (10 s, 4 KiB/s) with that margin.
	BodyGrace   time.Duration
	BodyMinRate int64
	// RenderLease bounds how long origins sharing a store wait for a render
	// another origin holds before taking it over (images.Config.RenderLease;
	// 0 keeps its default).
	RenderLease time.Duration
	// CompactIdle is how long the render engine must have been idle before
	// fresh PNG masters are re-compressed in the background; 0 means 1 s,
	// a negative value never (image.Service.Compact still does it).
	CompactIdle time.Duration
}

// Defaults of the request limits of the origin's port.
const (
	DefaultHeaderTimeout = 10 * time.Second
	DefaultBodyGrace     = 15 * time.Second
	DefaultBodyMinRate   = 4 << 10 // bytes per second
)

// ShutdownForceWait bounds how long Stop waits, once its context has ended
// and every connection was closed, for the requests still running to
// return (each follows its request's context, canceled then).
const ShutdownForceWait = 5 * time.Second

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
		Storage:          storage.DefaultConfig(),
		Blobs:            blob.DefaultConfig(),
		HeaderTimeout:    DefaultHeaderTimeout,
		BodyGrace:        DefaultBodyGrace,
		BodyMinRate:      DefaultBodyMinRate,
	}
}

// Validate reports the first invalid setting, naming its flag.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	if c.Store != "" {
		if err := validStoreURL(c.Store); err != nil {
			return err
		}
	}
	if bc := c.Blobs; bc.Timeout != 0 { // zero: a Config made without DefaultConfig takes the defaults
		bc.DataDir = c.DataDir
		if err := bc.Validate(); err != nil {
			return err
		}
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
	// Zero is the default; the flags are the edge's, for the same rules.
	if c.HeaderTimeout < 0 {
		return fmt.Errorf("--header-timeout %v: want a positive duration", c.HeaderTimeout)
	}
	if c.BodyGrace < 0 {
		return fmt.Errorf("--body-grace %v: want a positive duration", c.BodyGrace)
	}
	if c.RenderLease != 0 && (c.RenderLease < time.Second || c.RenderLease > time.Hour) {
		return fmt.Errorf("--render-lease %v: want 1s to 1h", c.RenderLease)
	}
	if c.BodyMinRate < 0 || c.BodyMinRate > 1<<30 {
		return fmt.Errorf("--body-min-rate %d: want 1 byte to 1 GiB per second", c.BodyMinRate)
	}
	if c.HeaderTimeout == 0 {
		c.HeaderTimeout = DefaultHeaderTimeout
	}
	if c.BodyGrace == 0 {
		c.BodyGrace = DefaultBodyGrace
	}
	if c.BodyMinRate == 0 {
		c.BodyMinRate = DefaultBodyMinRate
	}
	if c.Announce == nil {
		c.Announce = os.Stdout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

func (c *Config) bodyRate() api.BodyRate {
	return api.BodyRate{Grace: c.BodyGrace, MinRate: c.BodyMinRate}
}
