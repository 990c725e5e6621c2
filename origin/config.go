package origin

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/images"
	"github.com/pictorhq/pictor/origin/og"
	"github.com/pictorhq/pictor/origin/render"
	"github.com/pictorhq/pictor/origin/rendition"
	"github.com/pictorhq/pictor/origin/storage"
	"github.com/pictorhq/pictor/wasm"
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
	// Announce receives the one-time credentials of the default organization
	// (DefaultConfig: standard output).
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
	// Render configures the Chromium engine (--render-tabs, --render-queue,
	// --fonts-url, the --chromium flags). AllowPrivate, Gateway,
	// ProfileDir (<data-dir>/chromium) and Registerer are the origin's.
	Render render.Config
	// Egress configures the gateway of renders' outbound connections.
	// Tests set its Resolver and Dial to stand loopback servers in for
	// public hosts; Registerer is the origin's.
	Egress egress.Config
	// WASM configures the template sandbox; an empty CompilationCacheDir
	// (--wasm-cache) is <data-dir>/wasm-cache.
	WASM wasm.Config
	// Sandbox, when set, is the template sandbox the origin uses instead
	// of starting one from WASM, and does not close: the tests' origins
	// share one, which takes a fifth of a second of CPU to start under the
	// race detector.
	Sandbox *wasm.Engine
	// Storage configures the writes to storage destinations (timeouts,
	// part size, retries, the STS endpoint and region aws_s3 roles are
	// assumed through). AllowPrivate and Registerer are the origin's.
	Storage storage.Config
	// Blobs selects and configures where masters and renditions live
	// (--blobs: files in the data directory by default, or S3). DataDir,
	// Registerer and Logger are the origin's.
	Blobs blob.Config
	// OG configures the OG pages (--og-render-budget: the new renders an
	// OG configuration may start a minute). Its OnRecheck, when set, is
	// told of each background recheck of an OG page once it ended (tests);
	// its parts (Store, Configs, Orgs, Images, Pages, Templates, Caps),
	// Registerer and Now are the origin's.
	OG og.Config
	// StorageWritten, when set, is told of each background write to a
	// storage destination once it ended: an observer, for tests.
	StorageWritten func(imageID string, err error)
	// Now is the clock of timestamps, rate-limit windows and billing
	// periods (DefaultConfig: the wall clock). Tests set it.
	Now func() time.Time

	// HeaderTimeout bounds the reading of a request's line and headers,
	// from its first byte: past it the client gets 408 and is closed.
	HeaderTimeout time.Duration
	// BodyGrace and BodyMinRate are the slowest a request body may arrive
	// (api.BodyRate): from the end of its headers, a body must have
	// delivered BodyMinRate bytes for every second past BodyGrace, or it
	// gets 408 and its connection is closed.
	//
	// Behind an edge, which holds its clients to the same rule, the
	// origin must be the more lenient, since the edge relays what it reads
	// as it reads it: BodyGrace at least the edge's grace plus 5 s (the
	// relay's delay), BodyMinRate at most the edge's rate. The defaults
	// are the edge's defaults (10 s, 4 KiB/s) with that margin.
	BodyGrace   time.Duration
	BodyMinRate int64
	// RenderLease bounds how long origins sharing a store wait for a render
	// another origin holds before taking it over (rendition.Config.RenderLease).
	RenderLease time.Duration
	// CompactIdle is how long the render engine must have been idle before
	// fresh PNG masters are re-compressed in the background; a negative
	// value never (image.Service.Compact still does it).
	CompactIdle time.Duration
	// PreviewsPerMinute is how many previews (POST /v1/image/preview) an
	// organization may ask for in a sliding minute, across the origins
	// sharing a store (--previews-per-minute).
	PreviewsPerMinute int
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

// DefaultConfig returns the embedded defaults: each component's own
// (render, egress, wasm, storage, blob, og), the origin's request limits,
// the wall clock and standard output.
func DefaultConfig() Config {
	return Config{
		DataDir:          "./data",
		Addr:             "127.0.0.1:8081",
		Announce:         os.Stdout,
		CreateDefaultOrg: true,
		Render:           render.DefaultConfig(),
		Egress:           egress.DefaultConfig(),
		WASM:             wasm.DefaultConfig(),
		Storage:          storage.DefaultConfig(),
		Blobs:            blob.DefaultConfig(),
		OG:               og.DefaultConfig(),
		Now:              time.Now,
		HeaderTimeout:    DefaultHeaderTimeout,
		BodyGrace:        DefaultBodyGrace,
		BodyMinRate:      DefaultBodyMinRate,
		RenderLease:      rendition.DefaultRenderLease,
		CompactIdle:      rendition.DefaultCompactIdle,

		PreviewsPerMinute: images.DefaultPreviewsPerMinute,
	}
}

// RegisterFlags registers on fs the settings that serve and origin share,
// each defaulting to its value in c (start from DefaultConfig): the data
// directory, the record store, the public URL, the purge channel's token,
// and the components' own flags (render, storage, blobs, the template
// sandbox's cache, the render lease, the OG render budget). The listen
// address and the request limits differ between the commands: they
// register those themselves (RegisterLimitFlags for origin).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "data directory (store, master key, caches)")
	fs.StringVar(&c.Store, "store", c.Store, "PostgreSQL database of the records, postgres://user:password@host:port/db, shared by several origins (default: the embedded store in --data-dir)")
	fs.StringVar(&c.PublicURL, "public-url", c.PublicURL, "base URL of returned image URLs (default http://<addr>)")
	fs.BoolVar(&c.AllowPrivateURLs, "allow-private-urls", c.AllowPrivateURLs, "let renders reach loopback and private networks")
	fs.StringVar(&c.EdgeToken, "edge-token", c.EdgeToken, "token edges present on the purge channel; several separated by commas are all accepted, to move edges from one to another (default: <data-dir>/edge.token, a token a line)")
	c.Render.RegisterFlags(fs)
	fs.StringVar(&c.WASM.CompilationCacheDir, "wasm-cache", c.WASM.CompilationCacheDir, "compiled template sandbox cache (default <data-dir>/wasm-cache)")
	fs.DurationVar(&c.RenderLease, "render-lease", c.RenderLease, "how long another origin sharing the store waits for a render whose origin stopped renewing its lease (died) before rendering itself")
	fs.IntVar(&c.OG.Budget, "og-render-budget", c.OG.Budget, "new renders an OG configuration may start a minute; past it a page without an image answers 503")
	c.Storage.RegisterFlags(fs)
	c.Blobs.RegisterFlags(fs)
	fs.IntVar(&c.PreviewsPerMinute, "previews-per-minute", c.PreviewsPerMinute, "previews (POST /v1/image/preview: rendered, not stored, no credit) an organization may ask for in a sliding minute; past it 429 with Retry-After")
}

// RegisterLimitFlags registers on fs the request limits of the origin's
// own port (--header-timeout, --body-grace, --body-min-rate), each
// defaulting to its value in c. Behind serve's edge they are the edge's.
func (c *Config) RegisterLimitFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.HeaderTimeout, "header-timeout", c.HeaderTimeout,
		"time from a request's first byte to the end of its headers; a slower client gets 408")
	fs.DurationVar(&c.BodyGrace, "body-grace", c.BodyGrace,
		"time a request body may take before --body-min-rate applies (behind an edge: at least the edge's plus 5s)")
	fs.Int64Var(&c.BodyMinRate, "body-min-rate", c.BodyMinRate,
		"bytes per second a request body must average after --body-grace (behind an edge: at most the edge's)")
}

// Validate reports the first invalid setting, naming its flag. The
// components' settings are validated by their New, with the parts the
// origin fills in.
func (c *Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	if c.Store != "" {
		if err := validStoreURL(c.Store); err != nil {
			return err
		}
	}
	bc := c.Blobs
	bc.DataDir = c.DataDir
	if err := bc.Validate(); err != nil {
		return err
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
	// The flags are the edge's, for the same rules.
	if c.HeaderTimeout <= 0 {
		return fmt.Errorf("--header-timeout %v: want a positive duration", c.HeaderTimeout)
	}
	if c.BodyGrace < 0 {
		return fmt.Errorf("--body-grace %v: want a positive duration", c.BodyGrace)
	}
	if c.RenderLease < time.Second || c.RenderLease > time.Hour {
		return fmt.Errorf("--render-lease %v: want 1s to 1h", c.RenderLease)
	}
	if c.BodyMinRate < 1 || c.BodyMinRate > 1<<30 {
		return fmt.Errorf("--body-min-rate %d: want 1 byte to 1 GiB per second", c.BodyMinRate)
	}
	if c.OG.Budget < 1 {
		return fmt.Errorf("--og-render-budget %d: want at least 1", c.OG.Budget)
	}
	if c.PreviewsPerMinute < 1 || c.PreviewsPerMinute > images.MaxPreviewsPerMinute {
		return fmt.Errorf("--previews-per-minute %d: want 1 to %d", c.PreviewsPerMinute, images.MaxPreviewsPerMinute)
	}
	if c.Announce == nil || c.Now == nil {
		return errors.New("origin: Announce and Now must be set (start from DefaultConfig)")
	}
	return nil
}

func (c *Config) bodyRate() api.BodyRate {
	return api.BodyRate{Grace: c.BodyGrace, MinRate: c.BodyMinRate}
}
