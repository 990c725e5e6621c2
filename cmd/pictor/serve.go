package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/edge"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/logging"
)

// shutdownGrace bounds how long in-flight requests may take to finish;
// stopBound is what the components may take past it to stop (the edge
// closes what is left and waits for its handlers, the stores close) before
// serveUntilDone gives up on them and returns. Variables for tests.
var (
	shutdownGrace = 30 * time.Second
	stopBound     = 5 * time.Second
)

// relayMargin is what the origin of serve adds to the edge's body grace:
// the relay's delay between the two.
const relayMargin = 5 * time.Second

func newLogger(w io.Writer, l slog.Level) *slog.Logger { return logging.New(w, l) }

// originConfig is the origin's configuration from its flags (RegisterFlags,
// shared by serve and origin) and the master keys' variables.
type originConfig struct {
	origin.Config
	logLevel string
}

// register registers the flags serve and origin share.
func (c *originConfig) register(fs *flagSet) {
	c.Config = origin.DefaultConfig()
	c.RegisterFlags(fs.FlagSet)
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
}

// fromEnv completes the configuration with what only the environment
// holds (the master keys) and the command's output.
func (c *originConfig) fromEnv(e env) origin.Config {
	cfg := c.Config
	cfg.Version = version
	cfg.MasterKey = e.getenv("PICTOR_MASTER_KEY")
	cfg.PreviousMasterKeys = e.getenv("PICTOR_MASTER_KEY_PREVIOUS")
	cfg.NextMasterKeys = e.getenv("PICTOR_MASTER_KEY_NEXT")
	cfg.Announce = e.stdout
	return cfg
}

// serveCacheMem is serve's default edge memory cache: half a separate
// edge's, since the origin's Chromium shares the machine and the whole
// service must stay under 1.5 GiB with the default pool (the soak).
const serveCacheMem = 128 << 20

func runServe(ctx context.Context, args []string, e env) error {
	fs := newFlagSet("serve", e.stderr, e.getenv)
	var oc originConfig
	oc.register(fs)
	def := edge.DefaultConfig()
	limits := def
	var addr, originAddr, cacheDir string
	var cacheMem, cacheDisk int64
	fs.StringVar(&addr, "addr", "127.0.0.1:8080", "public listen address (edge)")
	fs.StringVar(&originAddr, "origin-addr", "127.0.0.1:8081", "internal listen address (origin)")
	fs.StringVar(&cacheDir, "cache-dir", "", "edge disk cache directory (default <data-dir>/edge-cache)")
	fs.Int64Var(&cacheMem, "cache-mem", serveCacheMem, "edge memory cache size in bytes (a separate edge's default is twice this)")
	fs.Int64Var(&cacheDisk, "cache-disk", def.CacheDisk, "edge disk cache size in bytes")
	registerEdgeLimits(fs, &limits)
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := setupLogging(e, oc.logLevel); err != nil {
		return err
	}
	// Listen first, so port 0 works and the public URL is known before wiring.
	edgeLn, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", addr, err)
	}
	originLn, err := net.Listen("tcp", originAddr)
	if err != nil {
		edgeLn.Close()
		return fmt.Errorf("--origin-addr %s: %w", originAddr, err)
	}
	publicURL := oc.PublicURL
	if publicURL == "" {
		publicURL = "http://" + edgeLn.Addr().String()
	}

	ocfg := oc.fromEnv(e)
	ocfg.Addr = originLn.Addr().String()
	ocfg.Listener = originLn
	ocfg.PublicURL = publicURL
	ecfg := limits
	ecfg.Addr = edgeLn.Addr().String()
	ecfg.Listener = edgeLn
	ecfg.OriginURL = "http://" + originLn.Addr().String()
	ecfg.PublicURL = publicURL
	ecfg.CacheMem = cacheMem
	ecfg.CacheDisk = cacheDisk
	ecfg.CacheDir = cacheDir
	if ecfg.CacheDir == "" {
		ecfg.CacheDir = filepath.Join(ocfg.DataDir, "edge-cache")
	}
	// The origin behind this edge must be the more lenient with bodies,
	// since the edge relays what it reads as it reads it (origin.Config).
	ocfg.BodyGrace = ecfg.BodyGrace + relayMargin
	ocfg.BodyMinRate = ecfg.BodyMinRate
	// A bad edge setting fails before the origin starts.
	if err := ecfg.Validate(); err != nil {
		edgeLn.Close()
		originLn.Close()
		return err
	}

	o, err := origin.New(ctx, ocfg)
	if err != nil {
		edgeLn.Close()
		originLn.Close()
		return err
	}
	ed, err := edge.New(ecfg)
	if err != nil {
		edgeLn.Close()
		return errors.Join(err, o.Stop(context.Background()))
	}
	// The origin purges the edge of this process directly.
	o.SetPurger(edgePurger{ed})
	announce := fmt.Sprintf("Pictor is listening on http://%s (origin API on http://%s)\nBase URL: %s\n",
		edgeLn.Addr(), originLn.Addr(), publicURL) + mcpLine(o)
	return serveUntilDone(ctx, e, announce, o, ed)
}

// component is a tier with a lifecycle.
type component interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// serveUntilDone starts the components in order, prints announce and
// waits for ctx; then it stops them in reverse order within shutdownGrace.
// It returns within shutdownGrace + stopBound whatever the components do:
// one still stopping then is reported, and left to the process's exit.
func serveUntilDone(ctx context.Context, e env, announce string, comps ...component) error {
	var err error
	for _, c := range comps {
		if err = c.Start(ctx); err != nil {
			break
		}
	}
	if err == nil {
		fmt.Fprint(e.stdout, announce)
		<-ctx.Done()
		slog.Info("shutting down")
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	// Stop everything New created, started or not, newest first.
	var current atomic.Int32 // the component being stopped
	stopped := make(chan []error, 1)
	go func() {
		var errs []error
		for i := len(comps) - 1; i >= 0; i-- {
			current.Store(int32(i))
			if serr := comps[i].Stop(stopCtx); serr != nil {
				errs = append(errs, serr)
			}
		}
		stopped <- errs
	}()
	limit := time.NewTimer(shutdownGrace + stopBound)
	defer limit.Stop()
	select {
	case serrs := <-stopped:
		errs = append(errs, serrs...)
	case <-limit.C:
		what := fmt.Sprintf("%T", comps[current.Load()])
		slog.Error("shutdown did not finish in time; giving up", "stopping", what, "limit", shutdownGrace+stopBound)
		errs = append(errs, fmt.Errorf("shutdown: %s still stopping after %v", what, shutdownGrace+stopBound))
	}
	return errors.Join(errs...)
}

func runEdge(ctx context.Context, args []string, e env) error {
	fs := newFlagSet("edge", e.stderr, e.getenv)
	def := edge.DefaultConfig()
	cfg := def
	var logLevel string
	var originURLs urlList
	fs.Var(&originURLs, "origin-url", "base `URL` of an origin (required); repeat the flag or separate URLs with commas for several origins over one store: "+
		"the edge health-checks them (GET /healthz) and sends each miss and relayed request to a healthy one, failing over to the next")
	fs.DurationVar(&cfg.OriginCheckInterval, "origin-check-interval", def.OriginCheckInterval,
		"time between two health checks of each origin, when there are several; an origin is down after two failed checks, or at once when a request cannot connect")
	fs.DurationVar(&cfg.OriginCheckTimeout, "origin-check-timeout", def.OriginCheckTimeout, "bound of one health check of an origin")
	fs.StringVar(&cfg.EdgeToken, "edge-token", "", "the origin's purge channel token (its <data-dir>/edge.token); without it the edge caches nothing, relays masters and still makes transformed renditions")
	fs.StringVar(&cfg.Name, "name", "", "name of this edge in the origin's logs")
	fs.Int64Var(&cfg.CacheDisk, "cache-disk", def.CacheDisk, "disk cache size in bytes")
	fs.StringVar(&cfg.Addr, "addr", def.Addr, "public listen address")
	fs.StringVar(&cfg.CacheDir, "cache-dir", def.CacheDir, "disk cache directory")
	fs.Int64Var(&cfg.CacheMem, "cache-mem", def.CacheMem, "memory cache size in bytes")
	fs.StringVar(&cfg.PublicURL, "public-url", "", "base URL of image URLs (default http://<addr>)")
	fs.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	registerEdgeLimits(fs, &cfg)
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := fs.require("origin-url"); err != nil {
		return err
	}
	if err := setupLogging(e, logLevel); err != nil {
		return err
	}
	cfg.OriginURL, cfg.OriginURLs = "", originURLs
	// A bad origin URL fails before the edge listens.
	if err := cfg.Validate(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", cfg.Addr, err)
	}
	cfg.Listener = ln
	cfg.Standalone = true
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + ln.Addr().String()
	}
	ed, err := edge.New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	return serveUntilDone(ctx, e, fmt.Sprintf("Pictor edge is listening on http://%s\n", ln.Addr()), ed)
}

func runOrigin(ctx context.Context, args []string, e env) error {
	fs := newFlagSet("origin", e.stderr, e.getenv)
	var oc originConfig
	oc.register(fs)
	oc.RegisterLimitFlags(fs.FlagSet)
	fs.StringVar(&oc.Addr, "addr", oc.Addr, "listen address")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := setupLogging(e, oc.logLevel); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", oc.Addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", oc.Addr, err)
	}
	cfg := oc.fromEnv(e)
	cfg.Addr = ln.Addr().String()
	cfg.Listener = ln
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + ln.Addr().String()
	}
	o, err := origin.New(ctx, cfg)
	if err != nil {
		ln.Close()
		return err
	}
	return serveUntilDone(ctx, e, fmt.Sprintf("Pictor origin is listening on http://%s\n", ln.Addr())+mcpLine(o), o)
}

// mcpLine announces the MCP endpoint, when it is on.
func mcpLine(o *origin.Origin) string {
	if u := o.MCPURL(); u != "" {
		return "MCP endpoint: " + u + "\n"
	}
	return ""
}

// edgePurger hands the origin's purges to the edge in the same process.
type edgePurger struct{ e *edge.Edge }

func (p edgePurger) PurgeImages(_ context.Context, ids []string) error {
	for _, id := range ids {
		if _, err := p.e.PurgeImage(id); err != nil {
			return err
		}
	}
	return nil
}

func (p edgePurger) PurgeOrg(_ context.Context, orgID string) error {
	_, err := p.e.PurgeOrg(orgID)
	return err
}

func (p edgePurger) PurgeTag(_ context.Context, tag string) error {
	_, err := p.e.PurgeTag(tag)
	return err
}
