package origin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/pgkv"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/console"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/cursor"
	"github.com/pictorhq/pictor/origin/deliver"
	"github.com/pictorhq/pictor/origin/edgehub"
	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/mcpserver"
	"github.com/pictorhq/pictor/origin/oauth"
	"github.com/pictorhq/pictor/origin/og"
	"github.com/pictorhq/pictor/origin/ogconfig"
	"github.com/pictorhq/pictor/origin/ogpage"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/proxy"
	"github.com/pictorhq/pictor/origin/ratelimit"
	"github.com/pictorhq/pictor/origin/render"
	"github.com/pictorhq/pictor/origin/rendition"
	"github.com/pictorhq/pictor/origin/seal"
	"github.com/pictorhq/pictor/origin/storage"
	"github.com/pictorhq/pictor/origin/storedest"
	"github.com/pictorhq/pictor/origin/template"
	"github.com/pictorhq/pictor/wasm"
)

// StoreDir is the store's directory inside the data directory.
const StoreDir = "kv"

// Origin is a running origin tier.
type Origin struct {
	cfg       Config
	store     kv.Store
	orgs      *org.Store
	keys      *apikey.Store
	box       *seal.Box // the master keys
	admin     *admin.Server
	registry  *prometheus.Registry
	router    *api.Router
	console   *console.Console
	table     []api.Route // the route table the router serves
	blobs     blob.Blobs
	kept      *keptBlobs // the files store of the data directory, which a backup reads; nil for other stores
	engine    *render.Engine
	images    *rendition.Service
	limiter   ratelimit.Limiter // the router's, the console's and the previews' windows
	hub       *edgehub.Hub
	purger    atomic.Pointer[Purger] // the edge in this process (Config.Purger, SetPurger)
	sandbox   *wasm.Engine
	tpls      *template.Store
	ogcs      *ogconfig.Store
	proxies   *proxy.Store
	dests     *storedest.Store
	storage   *storage.Connector
	templates *template.Handler
	og        *og.Service
	oauth     *oauth.Server // nil when MCP is off (a public URL with a path)
	mcp       *mcpserver.Server
	// stopSweeps ends the periodic sweeps that Start began; sweeps waits
	// for them.
	stopSweeps context.CancelFunc
	sweeps     sync.WaitGroup
	ln         *api.Listener
	srv        *http.Server
	ready      atomic.Bool
	served     chan error
	// endRequests cancels the context of every request, when Stop's
	// grace is over (cause apierr.ErrShuttingDown).
	endRequests context.CancelCauseFunc
}

// New opens the store and wires the API. The caller must Stop the result,
// even when Start was never called.
func New(ctx context.Context, cfg Config) (*Origin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := &Origin{cfg: cfg, registry: prometheus.NewRegistry()}
	if err := o.open(ctx); err != nil {
		o.closeStore()
		return nil, err
	}
	return o, nil
}

func (o *Origin) open(ctx context.Context) error {
	store, err := OpenStore(o.cfg.DataDir, o.cfg.Store)
	if err != nil {
		return err
	}
	o.store = store
	box, err := seal.LoadKeys(seal.Keys{Current: o.cfg.MasterKey, Previous: o.cfg.PreviousMasterKeys, Next: o.cfg.NextMasterKeys}, o.cfg.DataDir)
	if err != nil {
		return err
	}
	o.box = box
	slog.Info("master keys", "current", box.KeyID(), "previous", box.PreviousKeyIDs(), "next", box.NextKeyIDs())
	o.orgs = org.NewStore(store, o.cfg.Now)
	o.keys = apikey.NewStore(store, box, o.orgs, o.cfg.Now)
	if err := o.openOAuth(box); err != nil {
		return err
	}
	o.ogcs = ogconfig.NewStore(store, o.cfg.Now)
	o.proxies = proxy.NewStore(store, box, o.cfg.Now)
	o.dests = storedest.NewStore(store, box, o.cfg.Now)
	sc := o.cfg.Storage
	sc.AllowPrivate, sc.Registerer = o.cfg.AllowPrivateURLs, o.registry
	if o.storage, err = storage.New(sc); err != nil {
		return err
	}
	o.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	o.registry.MustRegister(storeCollectors(store)...)
	gc := o.cfg.Egress
	gc.Registerer = o.registry
	gw, err := egress.New(gc)
	if err != nil {
		return err
	}
	rc := o.cfg.Render
	rc.AllowPrivate = o.cfg.AllowPrivateURLs
	rc.Gateway = gw
	rc.ProfileDir = filepath.Join(o.cfg.DataDir, "chromium")
	rc.Registerer = o.registry
	if o.engine, err = render.New(rc); err != nil {
		return err
	}
	bc := o.cfg.Blobs
	bc.DataDir, bc.Registerer, bc.Logger = o.cfg.DataDir, o.registry, slog.Default()
	blobs, err := blob.New(context.Background(), bc)
	if err != nil {
		return err
	}
	if st, ok := blobs.(*blob.Store); ok && o.cfg.Store == "" && (bc.URL == "" || bc.URL == "file:") {
		o.kept = &keptBlobs{Store: st}
		blobs = o.kept
		removeStaleBackups(o.cfg.DataDir)
	}
	o.blobs = blobs
	token, err := loadEdgeToken(o.cfg.EdgeToken, o.cfg.DataDir)
	if err != nil {
		return err
	}
	// Events other origins publish reach the edge in this process too.
	apply := func(ev contract.Event) {
		if err := o.purgeHere(context.Background(), ev); err != nil {
			slog.Error("an edge purge from another origin failed", "kind", ev.Kind, "error", err)
		}
	}
	if o.cfg.Purger != nil {
		o.SetPurger(o.cfg.Purger)
	}
	if o.hub, err = edgehub.New(ctx, store, token, edgehub.Options{Shared: o.cfg.Store != "", Apply: apply}); err != nil {
		return err
	}
	wc := o.cfg.WASM
	if wc.CompilationCacheDir == "" { // follows --data-dir
		wc.CompilationCacheDir = filepath.Join(o.cfg.DataDir, "wasm-cache")
	}
	if o.sandbox = o.cfg.Sandbox; o.sandbox == nil {
		if o.sandbox, err = wasm.New(context.Background(), wc); err != nil {
			return fmt.Errorf("template sandbox: %w", err)
		}
	}
	o.registry.MustRegister(sandboxCollectors(o.sandbox)...)
	o.tpls = template.NewStore(store, o.cfg.Now)
	ic := rendition.DefaultConfig()
	ic.Store, ic.Blobs, ic.Engine, ic.Now = store, blobs, o.engine, o.cfg.Now
	ic.BackgroundRenders, ic.RenderLease, ic.CompactIdle, ic.Shared = rc.Tabs, o.cfg.RenderLease, o.cfg.CompactIdle, o.cfg.Store != ""
	ic.Proxies = proxyRoutes{o.proxies}
	ic.Destinations = deliver.Destinations{Dests: o.dests, Connector: o.storage}
	ic.OnStored = o.cfg.StorageWritten
	ic.OnDelete = func(ctx context.Context, ids []string) error { return o.purge(ctx, contract.ImagesDeleted, ids) }
	o.images, err = rendition.NewService(ctx, ic)
	if err != nil {
		return err
	}
	o.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pictor_storage_write_queue",
			Help: "Background writes of fresh images to storage destinations waiting for a worker.",
		}, func() float64 { return float64(o.images.StoreStats().Waiting) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pictor_storage_writes_dropped_total",
			Help: "Background writes to storage destinations dropped because the queue was full (PUT /v1/store writes them).",
		}, func() float64 { return float64(o.images.StoreStats().Dropped) }))
	o.templates = &template.Handler{Store: o.tpls, Engine: o.sandbox, Cursors: o.cursors(box),
		OnChange: func(ctx context.Context, id string) error {
			return o.purge(ctx, contract.TagsPurged, []string{contract.TemplateTag(id)})
		}}
	pc := ogpage.DefaultConfig()
	pc.Gateway, pc.AllowPrivate, pc.Registerer = gw, o.cfg.AllowPrivateURLs, o.registry
	pages, err := ogpage.New(pc)
	if err != nil {
		return err
	}
	oc := o.cfg.OG
	oc.Store, oc.Configs, oc.Orgs, oc.Images, oc.Pages, oc.Templates = store, o.ogcs, o.orgs, o.images, pages, o.templates
	oc.Caps, oc.Registerer = o.ogcs, o.registry
	oc.Now = o.cfg.Now
	if o.og, err = og.New(oc); err != nil {
		return err
	}
	body := o.cfg.bodyRate()
	// One process on the embedded store counts in memory (no synced write
	// per management call); origins sharing a store share the windows.
	var limiter ratelimit.Limiter = ratelimit.NewMemory(o.cfg.Now)
	if o.cfg.Store != "" {
		limiter = ratelimit.NewStore(store, o.cfg.Now)
	}
	o.limiter = limiter
	cc := console.DefaultConfig()
	cc.Store, cc.Keys, cc.Limiter, cc.Now = store, o.keys, limiter, o.cfg.Now
	cc.API = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { o.router.ServeHTTP(w, r) })
	cc.Secure = strings.HasPrefix(o.cfg.PublicURL, "https://")
	cc.Variables = o.templates.Variables
	if u, err := url.Parse(o.cfg.PublicURL); err == nil && u.Scheme != "" && u.Host != "" {
		cc.ImageOrigin = u.Scheme + "://" + u.Host
	}
	cc.MCPEndpoint = o.MCPURL()
	cc.PreviewsPerMinute = o.cfg.PreviewsPerMinute
	if o.console, err = console.New(cc); err != nil {
		return err
	}
	o.table = append(o.routes(ctx, box), o.console.Routes()...)
	o.router = api.New(api.Config{
		Authenticator: o.keys,
		Limiter:       limiter,
		Registerer:    o.registry,
		Body:          &body,
	}, o.table)
	return o.openMCP()
}

// sandboxCollectors export the template sandbox's counts.
func sandboxCollectors(e *wasm.Engine) []prometheus.Collector {
	renders := func(engine string, f func(wasm.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "pictor_template_renders_total",
			Help:        "Template renders, by the sandbox module that made them (evaluator: a cached template's fast path; go_guest: a first render, or one the evaluator handed back).",
			ConstLabels: prometheus.Labels{"engine": engine},
		}, func() float64 { return float64(f(e.Stats())) })
	}
	return []prometheus.Collector{
		renders("evaluator", func(s wasm.Stats) uint64 { return s.Evaluated }),
		renders("go_guest", func(s wasm.Stats) uint64 { return s.GoGuest }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pictor_template_handed_back_total",
			Help: "Renders of a cached template the evaluator handed to the Go guest (errors, cases it does not cover).",
		}, func() float64 { return float64(e.Stats().HandedBack) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pictor_template_sandbox_ready_instances",
			Help: "Sandbox instances ready in the pool.",
		}, func() float64 { return float64(e.Stats().Ready) }),
	}
}

// storeCollectors export whether the record store answers: PostgreSQL
// (--store) may not; the embedded store always does, and exports the same
// series (up, none unavailable) so that dashboards and alerts read one
// name for both.
func storeCollectors(store kv.Store) []prometheus.Collector {
	stats := func() pgkv.Stats { return pgkv.Stats{} }
	if pg, ok := store.(*pgkv.Store); ok {
		stats = pg.Stats
	}
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "pictor_store_unavailable_total",
			Help: "Calls of the record store that could not reach it or got no answer in time (PostgreSQL, --store: refused or lost connections, restarts, timeouts); the requests they served were answered 503.",
		}, func() float64 { return float64(stats().Unavailable) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "pictor_store_up",
			Help: "0 from a call of the record store that could not reach it until one reaches it again, else 1.",
		}, func() float64 {
			if stats().Down {
				return 0
			}
			return 1
		}),
	}
}

// storeOpenTimeout bounds connecting to a PostgreSQL store and migrating
// its schema at start.
const storeOpenTimeout = time.Minute

// OpenStore opens the record store: the embedded pebble store in the data
// directory when storeURL is empty, or the PostgreSQL database a
// postgres:// (postgresql://) URL names (--store), whose schema it
// migrates. Either way it then applies the data migrations the store lacks
// (migrations.go) and refuses a store a newer binary migrated.
func OpenStore(dataDir, storeURL string) (kv.Store, error) {
	if storeURL == "" {
		s, err := pebblekv.Open(filepath.Join(dataDir, StoreDir), pebblekv.Options{Logger: slog.Default()})
		if err != nil {
			return nil, err
		}
		if err := migrateStore(s); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	if err := validStoreURL(storeURL); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeOpenTimeout)
	defer cancel()
	s, err := pgkv.Open(ctx, storeURL, pgkv.Options{Logger: slog.Default()})
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	if err := migrateStore(s); err != nil {
		s.Close()
		return nil, fmt.Errorf("--store: %w", err)
	}
	return s, nil
}

// validStoreURL accepts the --store values: a PostgreSQL URL. The message
// never repeats the URL, which may hold a password.
func validStoreURL(u string) error {
	if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		return errors.New("--store: want a postgres://user:password@host:port/database URL, or nothing for the embedded store in --data-dir")
	}
	return nil
}

// AdminService returns the operator commands over a store that no origin
// of this process holds (shared tells a store shared by origins). On the
// embedded store its backups read the files store of dataDir. A
// suspension revokes the organization's MCP connections and appends the
// purge to the edges' log, as a running origin's does: origins sharing the
// store hand it to their edges at once, and the command waits for the
// edges' acknowledgements; on the embedded store, edges get it when they
// next connect to its origin. done releases what the service started.
func AdminService(ctx context.Context, store kv.Store, keys seal.Keys, dataDir string, shared bool) (svc *admin.Service, done func(), err error) {
	box, err := seal.LoadKeys(keys, dataDir)
	if err != nil {
		return nil, nil, err
	}
	// The hub serves no edge here: its token only has to be valid.
	token := make([]byte, 32)
	rand.Read(token)
	hub, err := edgehub.New(ctx, store, hex.EncodeToString(token), edgehub.Options{Shared: shared})
	if err != nil {
		return nil, nil, err
	}
	orgs := org.NewStore(store, nil)
	svc = &admin.Service{Orgs: orgs, Keys: apikey.NewStore(store, box, orgs, nil), Store: store, OnSuspend: func(ctx context.Context, orgID string) error {
		if err := oauth.RevokeOrg(ctx, store, orgID); err != nil {
			return err
		}
		return hub.Publish(ctx, contract.OrgSuspended, []string{orgID})
	}, ResealPass: func(ctx context.Context) (ResealReport, error) { return Reseal(ctx, store, box) }}
	if !shared {
		// The caller holds the store: nothing else writes meanwhile.
		svc.WriteBackup = func(ctx context.Context, w io.Writer) (*admin.Manifest, error) {
			files, err := blob.Open(filepath.Join(dataDir, imagesDir))
			if err != nil {
				return nil, err
			}
			return writeBackup(ctx, w, backupSource{store: store, dataDir: dataDir, files: files})
		}
	}
	return svc, hub.Close, nil
}

// SetPurger connects an edge of the same process, before Start.
func (o *Origin) SetPurger(p Purger) { o.purger.Store(&p) }

// Handler returns the API handler (for tests and embedding).
func (o *Origin) Handler() http.Handler { return o.router }

// Routes returns the route table the origin serves (the OpenAPI document
// is built from it).
func (o *Origin) Routes() []api.Route { return slices.Clone(o.table) }

// Addr returns the address the API listens on, once started.
func (o *Origin) Addr() string {
	if o.ln == nil {
		return o.cfg.Addr
	}
	return o.ln.Addr().String()
}

// maxHeaderBytes bounds a request's line and headers (net/http allows
// 4 KiB more); past it net/http answers 431, in the standard body.
const maxHeaderBytes = 64 << 10

// PublicURL is the base of returned URLs.
func (o *Origin) PublicURL() string {
	if o.cfg.PublicURL != "" {
		return strings.TrimRight(o.cfg.PublicURL, "/")
	}
	return "http://" + o.Addr()
}

// Start creates the default organization on an empty store, starts the admin
// endpoint and begins serving the API.
func (o *Origin) Start(ctx context.Context) error {
	if err := o.engine.Start(ctx); err != nil {
		return err
	}
	svc := &admin.Service{Orgs: o.orgs, Keys: o.keys, Store: o.store, Now: o.cfg.Now, OnSuspend: func(ctx context.Context, orgID string) error {
		if o.oauth != nil {
			if err := o.oauth.RevokeOrg(ctx, orgID); err != nil {
				return err
			}
		}
		return o.purge(ctx, contract.OrgSuspended, []string{orgID})
	}, ResealPass: o.Reseal, WriteBackup: func(ctx context.Context, w io.Writer) (*admin.Manifest, error) {
		if o.kept == nil {
			return nil, errUnsupported
		}
		return writeBackup(ctx, w, backupSource{store: o.store, dataDir: o.cfg.DataDir, files: o.kept.Store, kept: o.kept})
	}}
	if o.cfg.CreateDefaultOrg {
		if err := o.bootstrap(ctx, svc); err != nil {
			return err
		}
	}
	adm, err := admin.NewServer(svc, o.cfg.DataDir)
	if err != nil {
		return err
	}
	o.admin = adm
	go func() {
		if err := adm.Serve(); err != nil {
			slog.Error("admin endpoint stopped", "error", err)
		}
	}()
	ln := o.cfg.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", o.cfg.Addr); err != nil {
			return fmt.Errorf("origin listen %s: %w", o.cfg.Addr, err)
		}
	}
	o.ln = api.NewListener(ln, maxHeaderBytes)
	requests, endRequests := context.WithCancelCause(context.Background())
	o.endRequests = endRequests
	o.srv = &http.Server{
		Handler:           o.router,
		ReadHeaderTimeout: o.cfg.HeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return requests },
	}
	o.ln.ServerHooks(o.srv)
	o.served = make(chan error, 1)
	go func() { o.served <- o.srv.Serve(o.ln) }()
	sweepCtx, stopSweeps := context.WithCancel(context.Background())
	o.stopSweeps = stopSweeps
	o.sweepOAuth(sweepCtx, &o.sweeps)
	o.ready.Store(true)
	slog.InfoContext(ctx, "origin listening", "addr", o.Addr())
	return nil
}

// bootstrap creates the default organization when the store has none and
// prints its credentials once.
func (o *Origin) bootstrap(ctx context.Context, svc *admin.Service) error {
	exists, err := o.orgs.Any(ctx)
	if err != nil || exists {
		return err
	}
	created, err := svc.CreateOrg(ctx, "default", "scale")
	if err != nil {
		return fmt.Errorf("create default organization: %w", err)
	}
	fmt.Fprintf(o.cfg.Announce, `
Pictor created the default organization (plan scale). Its API key is shown only this once:

  org_id:  %s
  api_id:  %s
  api_key: %s

Use them as HTTP Basic credentials (api_id:api_key).

`, created.OrgID, created.Key.APIID, created.Key.APIKey)
	return nil
}

// Stop drains in-flight requests until ctx ends, then ends the rest: their
// contexts are canceled and every connection is closed (slow bodies,
// streams and hijacked connections included). It stops the admin endpoint
// and closes the store last, and returns within ctx's deadline plus
// ShutdownForceWait and the render engine's stop. It is safe after a
// partial start.
func (o *Origin) Stop(ctx context.Context) error {
	o.ready.Store(false)
	var errs []error
	if o.stopSweeps != nil {
		o.stopSweeps()
		o.sweeps.Wait()
		o.stopSweeps = nil
	}
	if o.hub != nil {
		o.hub.Close() // edge streams never go idle by themselves
	}
	running := 0
	if o.srv != nil {
		if err := o.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("drain origin: %w", err))
			running = o.forceStop()
		}
		if err := <-o.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
		o.endRequests(apierr.ErrShuttingDown)
		o.srv = nil
	}
	if o.admin != nil {
		if err := o.admin.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		o.admin = nil
	}
	if o.og != nil {
		o.og.Close() // its background rechecks use the images
		o.og = nil
	}
	if o.images != nil {
		o.images.Close() // its background writes use the storage connector
		o.images = nil
	}
	if o.storage != nil {
		o.storage.Close()
		o.storage = nil
	}
	if o.engine != nil {
		if err := o.engine.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		o.engine = nil
	}
	if o.sandbox != nil && o.cfg.Sandbox == nil { // its own, not the caller's
		if err := o.sandbox.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		o.sandbox = nil
	}
	if running > 0 {
		// A request still runs and may yet use the store: closing it under
		// the request would crash the process. The process is ending.
		errs = append(errs, fmt.Errorf("origin: %d requests still running %v after shutdown; store left open", running, ShutdownForceWait))
	} else if err := o.closeStore(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// forceStop ends what Shutdown's grace left running. It cancels every
// request's context, so that those waiting on it (a render, a purge) answer
// 503 at once, and gives them answerWait to; then it closes the listener
// and every connection (slow bodies, streams, hijacked connections) and
// waits up to ShutdownForceWait for the handlers to return. It returns how
// many still run.
func (o *Origin) forceStop() int {
	o.endRequests(apierr.ErrShuttingDown)
	answered, cancel := context.WithTimeout(context.Background(), answerWait)
	o.router.Wait(answered)
	cancel()
	o.srv.Close()
	if n := o.ln.CloseAll(); n > 0 {
		slog.Warn("origin stop: closed connections still open after the grace", "connections", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownForceWait)
	defer cancel()
	n, _ := o.router.Wait(ctx)
	return n
}

// answerWait is how long requests whose context Stop canceled get to
// answer before their connections are closed.
const answerWait = time.Second

func (o *Origin) closeStore() error {
	var errs []error
	if o.blobs != nil {
		errs = append(errs, o.blobs.Close())
		o.blobs = nil
	}
	if o.store != nil {
		errs = append(errs, o.store.Close())
		o.store = nil
	}
	return errors.Join(errs...)
}

func (o *Origin) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !o.ready.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"status":"starting"}` + "\n"))
		return
	}
	w.Write([]byte(`{"status":"ok"}` + "\n"))
}

func (o *Origin) metrics() http.HandlerFunc {
	return promhttp.HandlerFor(o.registry, promhttp.HandlerOpts{}).ServeHTTP
}

// cursors signs pagination cursors with the current master key and accepts
// those of the others.
func (o *Origin) cursors(box *seal.Box) cursor.Codec {
	keys := box.MACKeys("cursor")
	return cursor.New(keys[0], keys[1:]...)
}
