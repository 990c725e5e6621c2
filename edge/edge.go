package edge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"golang.org/x/sync/singleflight"

	"github.com/pictorhq/pictor/edge/cache"
	"github.com/pictorhq/pictor/edge/forward"
	edgesync "github.com/pictorhq/pictor/edge/sync"
	"github.com/pictorhq/pictor/origin/apierr"
	"github.com/pictorhq/pictor/origin/logging"
)

// Edge is a running edge tier.
type Edge struct {
	cfg      Config
	fwd      *forward.Forwarder
	cache    *cache.Cache
	maxEntry int64
	flights  singleflight.Group
	sub      *edgesync.Subscriber
	server   *fasthttp.Server
	ln       net.Listener
	served   chan error
	ready    atomic.Bool
	stopSub  context.CancelFunc
	subDone  chan struct{}
	registry *prometheus.Registry
	scrape   fasthttp.RequestHandler
	metrics  edgeMetrics
	idPrefix []byte
	idSeq    atomic.Uint64
}

type edgeMetrics struct {
	hitsL1, hitsL2, misses, fetches prometheus.Counter
	bytes                           prometheus.Counter
	forwarded                       *prometheus.CounterVec
	transform                       prometheus.Histogram
}

// New wires an edge from cfg and opens its cache.
func New(cfg Config) (*Edge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fwd, err := forward.New(cfg.OriginURL)
	if err != nil {
		return nil, err
	}
	e := &Edge{cfg: cfg, fwd: fwd, registry: prometheus.NewRegistry(), idPrefix: []byte(logging.NewRequestID()[:12] + "-")}
	cc := cache.DefaultConfig()
	cc.Dir, cc.MemBytes, cc.DiskBytes, cc.Registerer = cfg.CacheDir, cfg.CacheMem, cfg.CacheDisk, e.registry
	cc.MaxEntryBytes = min(cc.MaxEntryBytes, cc.DiskBytes/4)
	if e.cache, err = cache.Open(cc); err != nil {
		return nil, err
	}
	e.maxEntry = cc.MaxEntryBytes
	if cfg.EdgeToken != "" {
		e.sub, err = edgesync.New(edgesync.Config{OriginURL: cfg.OriginURL, Token: cfg.EdgeToken, Name: cfg.Name,
			StateFile: filepath.Join(cfg.CacheDir, "purge.position"), Purger: e})
		if err != nil {
			e.cache.Close()
			return nil, err
		}
	}
	e.metrics = edgeMetrics{
		hitsL1:  prometheus.NewCounter(prometheus.CounterOpts{Name: "pictor_edge_hits_l1_total", Help: "Image requests answered from memory."}),
		hitsL2:  prometheus.NewCounter(prometheus.CounterOpts{Name: "pictor_edge_hits_l2_total", Help: "Image requests answered from disk."}),
		misses:  prometheus.NewCounter(prometheus.CounterOpts{Name: "pictor_edge_misses_total", Help: "Image requests that needed the origin."}),
		fetches: prometheus.NewCounter(prometheus.CounterOpts{Name: "pictor_edge_origin_fetches_total", Help: "Fetches from the origin to fill the cache."}),
		bytes:   prometheus.NewCounter(prometheus.CounterOpts{Name: "pictor_edge_served_bytes_total", Help: "Body bytes served from the cache."}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pictor_edge_forwarded_total",
			Help: "Requests relayed to the origin, by status code."}, []string{"code"}),
		transform: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pictor_edge_transform_duration_seconds",
			Help: "Time to make a transformed rendition.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
	}
	e.registry.MustRegister(e.metrics.hitsL1, e.metrics.hitsL2, e.metrics.misses, e.metrics.fetches, e.metrics.bytes,
		e.metrics.forwarded, e.metrics.transform, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	e.scrape = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(e.registry, promhttp.HandlerOpts{}))
	e.server = &fasthttp.Server{
		Handler: e.handle,
		Name:    "pictor",
		// Bodies stream to the origin, which bounds them per endpoint:
		// fasthttp reads at most 8 KiB of one ahead, whatever its length.
		StreamRequestBody: true,
		ReadBufferSize:    readBufferSize,
		ErrorHandler:      requestError,
		// Headers and a typical image go out in one write: with fasthttp's
		// default 4 KiB, a 25 KB JPEG took two syscalls.
		WriteBufferSize:              64 << 10,
		IdleTimeout:                  2 * time.Minute,
		ReadTimeout:                  5 * time.Minute,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		Logger:                       fasthttpLogger{},
	}
	return e, nil
}

// readBufferSize bounds a request's line and headers.
const readBufferSize = 16 << 10

// requestError answers a request fasthttp could not read, with the
// standard error body instead of fasthttp's plain text.
func requestError(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.As(err, &small):
		err = apierr.New(fasthttp.StatusRequestHeaderFieldsTooLarge, "The request line and headers must fit in %d KiB", readBufferSize>>10)
	case errors.As(err, &ne) && ne.Timeout():
		err = apierr.New(fasthttp.StatusRequestTimeout, "The request was not received in time")
	default:
		err = apierr.BadRequest("Malformed HTTP request")
	}
	forward.WriteError(ctx, err)
}

// Addr returns the listen address, once started.
func (e *Edge) Addr() string {
	if e.ln == nil {
		return e.cfg.Addr
	}
	return e.ln.Addr().String()
}

// syncWait bounds how long a starting edge waits to catch up with the
// origin's purges before it serves anyway (the origin may be down).
const syncWait = 10 * time.Second

// Start catches up with the origin's purge log, then begins serving.
func (e *Edge) Start(ctx context.Context) error {
	if e.sub != nil {
		subCtx, cancel := context.WithCancel(context.Background())
		e.stopSub, e.subDone = cancel, make(chan struct{})
		go func() { defer close(e.subDone); e.sub.Run(subCtx) }()
		wctx, wcancel := context.WithTimeout(ctx, syncWait)
		err := e.sub.WaitReady(wctx)
		wcancel()
		if err != nil {
			slog.Warn("edge serving before catching up with the origin's purges", "error", err)
		}
	} else if e.cfg.Standalone {
		slog.Warn("edge has no edge token: it cannot hear purges, so it caches nothing and relays every request")
	}
	ln := e.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", e.cfg.Addr); err != nil {
			return fmt.Errorf("edge listen %s: %w", e.cfg.Addr, err)
		}
	}
	e.ln = ln
	e.served = make(chan error, 1)
	go func() { e.served <- e.server.Serve(ln) }()
	e.ready.Store(true)
	slog.InfoContext(ctx, "edge listening", "addr", e.Addr(), "origin", e.cfg.OriginURL)
	return nil
}

// Stop stops accepting, lets in-flight requests finish, stops following
// purges and closes the cache. It is safe after a partial start.
func (e *Edge) Stop(ctx context.Context) error {
	e.ready.Store(false)
	var errs []error
	if e.ln != nil {
		if err := e.server.ShutdownWithContext(ctx); err != nil {
			errs = append(errs, fmt.Errorf("drain edge: %w", err))
		}
		if err := <-e.served; err != nil {
			errs = append(errs, err)
		}
		e.ln = nil
	}
	if e.stopSub != nil {
		e.stopSub()
		<-e.subDone
		e.stopSub = nil
	}
	e.fwd.Close()
	if e.cache != nil {
		if err := e.cache.Close(); err != nil && !errors.Is(err, cache.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var (
	pathHealthz  = []byte("/healthz")
	pathMetrics  = []byte("/metrics")
	hdrRequestID = []byte("X-Request-Id")
)

func (e *Edge) handle(ctx *fasthttp.RequestCtx) {
	rid := ctx.Request.Header.PeekBytes(hdrRequestID)
	if validRequestID(rid) {
		ctx.Response.Header.SetBytesKV(hdrRequestID, rid)
	} else {
		var buf [48]byte
		ctx.Response.Header.SetBytesKV(hdrRequestID, strconv.AppendUint(append(buf[:0], e.idPrefix...), e.idSeq.Add(1), 36))
		rid = ctx.Response.Header.PeekBytes(hdrRequestID)
	}
	path := ctx.Path()
	switch {
	case bytes.Equal(path, pathHealthz):
		e.healthz(ctx)
		return
	case bytes.Equal(path, pathMetrics):
		e.scrape(ctx)
		return
	case e.caching() && (ctx.IsGet() || ctx.IsHead()) && bytes.HasPrefix(path, imagePrefix):
		if e.serveImage(ctx, rid) {
			return
		}
	}
	e.fwd.Forward(ctx, string(rid))
	e.metrics.forwarded.WithLabelValues(strconv.Itoa(ctx.Response.StatusCode())).Inc()
}

// caching reports whether the edge may answer from its cache: it needs a
// purge channel (an edge token, or an origin in the same process).
func (e *Edge) caching() bool { return e.sub != nil || !e.cfg.Standalone }

// validRequestID accepts a caller's id when it is short printable ASCII.
func validRequestID(id []byte) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

func (e *Edge) healthz(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	if !e.ready.Load() {
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		ctx.SetBodyString(`{"status":"starting"}` + "\n")
		return
	}
	ctx.SetBodyString(`{"status":"ok"}` + "\n")
}

// Purges, as the purge channel or an origin in the same process deliver them.

// PurgeImage drops every cached copy of an image.
func (e *Edge) PurgeImage(id string) (int, error) { return e.cache.PurgeImage(id) }

// PurgeOrg drops every cached copy of an organization's images.
func (e *Edge) PurgeOrg(orgID string) (int, error) { return e.cache.PurgeOrg(orgID) }

// PurgeTag drops what a signing key's URLs produced.
func (e *Edge) PurgeTag(tag string) (int, error) { return e.cache.PurgeTag(tag) }

// PurgeAll drops the whole cache (an edge that fell off the purge log).
func (e *Edge) PurgeAll() error { return e.cache.PurgeAll() }

// fasthttpLogger routes fasthttp's own messages to slog.
type fasthttpLogger struct{}

func (fasthttpLogger) Printf(format string, args ...any) {
	slog.Warn("fasthttp", "detail", fmt.Sprintf(format, args...))
}
