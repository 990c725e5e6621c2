package edge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
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
	"github.com/pictorhq/pictor/edge/gcpace"
	"github.com/pictorhq/pictor/edge/linger"
	"github.com/pictorhq/pictor/edge/origins"
	"github.com/pictorhq/pictor/edge/purgelog"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/logging"
)

// cpus is how many CPUs Go uses by default (the machine's, or its cgroup's
// quota), read when the package initializes: before main gives a process
// with an edge more Go processors than that (cmd/pictor/procs.go).
// Transforms are bounded by CPUs, not processors.
var cpus = runtime.GOMAXPROCS(0)

// Edge is a running edge tier.
type Edge struct {
	cfg      Config
	origins  *origins.Pool
	fwd      *forward.Forwarder
	cache    *cache.Cache
	maxEntry int64
	flights  singleflight.Group
	stores   *stores
	sub      *purgelog.Subscriber
	server   *fasthttp.Server
	served   chan error
	ready    atomic.Bool
	stopSub  context.CancelFunc
	subDone  chan struct{}
	registry *prometheus.Registry
	scrape   fasthttp.RequestHandler
	metrics  edgeMetrics
	og       *ogState
	// transforms bounds the renditions made at once (libvips holds each
	// image decoded while it works); waiting counts those queued for one.
	transforms chan struct{}
	waiting    atomic.Int32
	idPrefix   []byte
	idSeq      atomic.Uint64
	// unpace removes the cache from the GC pacer (gcpace); set by Start.
	unpace func()

	lnMu sync.Mutex
	ln   *listener // set by Start

	// base is the context every relay and fill derives from; Stop cancels
	// it once the drain is over.
	base     context.Context
	cancel   context.CancelFunc
	inflight inflight

	// prefetchTimeout bounds the body bytes fasthttp reads before the
	// handler (8 KiB at most): BodyGrace plus their time at BodyMinRate.
	prefetchTimeout time.Duration
}

type edgeMetrics struct {
	hitsL1, hitsL2, misses, fetches prometheus.Counter
	bytes                           prometheus.Counter
	forwarded, refused              *prometheus.CounterVec
	transform                       prometheus.Histogram
}

// New wires an edge from cfg and opens its cache.
func New(cfg Config) (*Edge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Edge{cfg: cfg, registry: prometheus.NewRegistry(), idPrefix: []byte(logging.NewRequestID()[:12] + "-"), stores: newStores()}
	pc := origins.DefaultConfig()
	pc.URLs, pc.Interval, pc.Timeout, pc.Registerer = cfg.Origins(), cfg.OriginCheckInterval, cfg.OriginCheckTimeout, e.registry
	var err error
	if e.origins, err = origins.New(pc); err != nil {
		return nil, err
	}
	if e.fwd, err = forward.New(forward.Config{Origins: e.origins, BodyGrace: cfg.BodyGrace, BodyMinRate: cfg.BodyMinRate,
		TrustedProxies: cfg.TrustedProxies}); err != nil {
		return nil, err
	}
	e.base, e.cancel = context.WithCancel(context.Background())
	e.transforms = make(chan struct{}, max(2, cpus))
	e.prefetchTimeout = cfg.BodyGrace + time.Duration(float64(prefetchBytes)/float64(cfg.BodyMinRate)*float64(time.Second))
	cc := cache.DefaultConfig()
	cc.Dir, cc.MemBytes, cc.DiskBytes, cc.Registerer = cfg.CacheDir, cfg.CacheMem, cfg.CacheDisk, e.registry
	cc.MaxEntryBytes = min(cc.MaxEntryBytes, cc.DiskBytes/4)
	if e.cache, err = cache.Open(cc); err != nil {
		return nil, err
	}
	e.maxEntry = cc.MaxEntryBytes
	if cfg.EdgeToken != "" {
		e.sub, err = purgelog.New(purgelog.Config{Origins: e.origins, Token: cfg.EdgeToken, Name: cfg.Name,
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
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pictor_edge_connections_refused_total",
			Help: "Connections answered at once and closed: at --max-conns (limit), at --max-conns-per-ip (per_ip), out of file descriptors (descriptors)."},
			[]string{"reason"}),
		transform: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "pictor_edge_transform_duration_seconds",
			Help: "Time to make a transformed rendition.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
	}
	for _, reason := range []string{refusedLimit, refusedPerIP, refusedDescriptors} {
		e.metrics.refused.WithLabelValues(reason) // exported at 0 before the first
	}
	e.og = newOGState(cfg.Now)
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pictor_edge_connections_open", Help: "Client connections open."},
		func() float64 {
			if ln := e.listener(); ln != nil {
				return float64(ln.open())
			}
			return 0
		})
	e.registry.MustRegister(e.metrics.hitsL1, e.metrics.hitsL2, e.metrics.misses, e.metrics.fetches, e.metrics.bytes,
		e.metrics.forwarded, e.metrics.refused, e.metrics.transform, open,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	e.registry.MustRegister(e.og.collectors()...)
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
		WriteBufferSize: 64 << 10,
		// ReadTimeout runs from a request's first byte (a connection's
		// accept, for its first request) to the end of its headers; a body
		// gets its own deadlines (headerReceived, then the forwarder's
		// minimum rate).
		ReadTimeout:    cfg.HeaderTimeout,
		IdleTimeout:    cfg.IdleTimeout,
		HeaderReceived: e.headerReceived,
		// The listener admits at most MaxConns and answers the next one
		// with the standard body; fasthttp's own limit (plain text) is a
		// backstop it never reaches: a connection leaves the listener's
		// count at Close, a moment before its worker is free again.
		Concurrency:                  2 * cfg.MaxConns,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		// fasthttp's error logs otherwise quote the request's bytes,
		// credentials included.
		SecureErrorLogMessage: true,
		Logger:                fasthttpLogger{},
	}
	return e, nil
}

// readBufferSize bounds a request's line and headers.
const readBufferSize = 16 << 10

// prefetchBytes is what fasthttp reads of a streamed body before the
// handler runs.
const prefetchBytes = 8 << 10

// headerReceived gives a request with a body the time to send the part
// fasthttp reads ahead; the header deadline would otherwise apply to it.
func (e *Edge) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if hasBody(h) {
		return fasthttp.RequestConfig{ReadTimeout: e.prefetchTimeout}
	}
	return fasthttp.RequestConfig{}
}

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
		err = malformed(ctx)
	}
	forward.WriteError(ctx, err)
}

// Addr returns the listen address, once started.
func (e *Edge) Addr() string {
	if ln := e.listener(); ln != nil {
		return ln.Addr().String()
	}
	return e.cfg.Addr
}

func (e *Edge) listener() *listener {
	e.lnMu.Lock()
	defer e.lnMu.Unlock()
	return e.ln
}

// syncWait bounds how long a starting edge waits to catch up with the
// origin's purges before it serves anyway (the origin may be down).
const syncWait = 10 * time.Second

// fdHeadroom is what the edge leaves of its open-file limit to files and
// connections to the origin when it compares the limit with MaxConns.
const fdHeadroom = 256

// Start begins the origins' health checks, catches up with their purge
// log, then begins serving.
func (e *Edge) Start(ctx context.Context) error {
	if soft, hard, err := raiseOpenFileLimit(); err != nil {
		slog.WarnContext(ctx, "edge cannot raise its open-file limit", "error", err)
	} else {
		slog.InfoContext(ctx, "edge open-file limit", "limit", soft, "hard_limit", hard, "go_processors", runtime.GOMAXPROCS(0), "cpus", cpus)
		if uint64(e.cfg.MaxConns)+fdHeadroom > soft {
			slog.WarnContext(ctx, "the open-file limit is below --max-conns: past it new connections are answered 503",
				"limit", soft, "max_conns", e.cfg.MaxConns)
		}
	}
	e.origins.Start()
	// The memory cache is live by design: the collector paces the rest.
	e.unpace = gcpace.Register(func() int64 { return e.cache.Stats().L1Bytes })
	if e.sub != nil {
		subCtx, cancel := context.WithCancel(context.Background())
		e.stopSub, e.subDone = cancel, make(chan struct{})
		go func() { defer close(e.subDone); e.sub.Run(subCtx) }()
		wctx, wcancel := context.WithTimeout(ctx, syncWait)
		err := e.sub.WaitReady(wctx)
		wcancel()
		if err != nil {
			slog.WarnContext(ctx, "edge serving before catching up with the origin's purges", "error", err)
		}
	} else if e.cfg.Standalone {
		slog.WarnContext(ctx, "edge has no edge token: it cannot hear purges, so it caches nothing and relays every request")
	}
	inner := e.cfg.Listener
	if inner == nil {
		var err error
		if inner, err = net.Listen("tcp", e.cfg.Addr); err != nil {
			return fmt.Errorf("edge listen %s: %w", e.cfg.Addr, err)
		}
	}
	ln := newListener(inner, e.cfg.MaxConns, e.cfg.MaxConnsPerIP, e.metrics.refused)
	e.lnMu.Lock()
	e.ln = ln
	e.lnMu.Unlock()
	e.served = make(chan error, 1)
	served := e.served
	go func() {
		err := e.server.Serve(ln)
		if err != nil {
			slog.Error("edge stopped accepting connections", "error", err)
		}
		served <- err
	}()
	// Serve registers the listener before its first Accept. A drain that
	// began before then would find no listener, return at once, and leave
	// the server serving for good; so Start returns once it serves.
	select {
	case <-ln.accepting:
	case err := <-served:
		e.served = nil
		return fmt.Errorf("edge serve: %w", err)
	}
	e.ready.Store(true)
	slog.InfoContext(ctx, "edge listening", "addr", e.Addr(), "origins", e.originLabels())
	return nil
}

// Bounds of Stop.
const (
	// defaultDrain is how long Stop lets requests finish when its context
	// has no deadline.
	defaultDrain = 30 * time.Second
	// forceWait is how long Stop waits, after the drain, for the handlers
	// of the connections it closed to return.
	forceWait = 2 * time.Second
)

// Stop stops accepting and lets in-flight requests finish until ctx ends
// (30 s if it has no deadline). Then it cancels whatever is still relayed
// to the origin, filling the cache or revalidating an OG image in the
// background, closes every connection left (a client sending a request
// slowly, a response still streaming), logs at warn what it cut off, and
// waits at most forceWait for their handlers and, as long again, for the
// revalidations. It stops following purges, finishes writing the entries
// answered but not yet cached (store), and closes the cache, unless a
// handler or a revalidation still runs (then it reports an error and
// leaves the cache open). It is safe after a partial start and returns
// within ctx's deadline plus twice forceWait and the time to close the
// cache.
func (e *Edge) Stop(ctx context.Context) error {
	e.ready.Store(false)
	if e.unpace != nil {
		defer e.unpace()
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultDrain)
		defer cancel()
	}
	var errs []error
	handlersDone := true
	if e.served != nil {
		began := time.Now()
		drainErr := e.server.ShutdownWithContext(ctx)
		// Closed by the drain already; closed here too, so that serving
		// ends whatever the drain found.
		e.listener().Close()
		if ctx.Err() != nil {
			if err := e.force(time.Since(began)); err != nil {
				errs = append(errs, err)
				handlersDone = false
			}
		} else if drainErr != nil {
			errs = append(errs, fmt.Errorf("drain edge: %w", drainErr))
		}
		if err := <-e.served; err != nil {
			errs = append(errs, err)
		}
		e.served = nil
	}
	e.cancel()
	if err := e.og.stop(forceWait); err != nil {
		// One may still write to the cache: it stays open.
		errs = append(errs, err)
		handlersDone = false
	}
	if e.stopSub != nil {
		e.stopSub()
		select {
		case <-e.subDone:
			e.stopSub = nil
		case <-time.After(forceWait):
			// It may still apply a purge: the cache stays open.
			errs = append(errs, errors.New("stop edge: the purge channel's subscriber did not return"))
			handlersDone = false
		}
	}
	e.origins.Stop()
	e.fwd.Close()
	if e.cache != nil && handlersDone {
		e.stores.settle()
		if err := e.cache.Close(); err != nil && !errors.Is(err, cache.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// originLabels lists the origins, without credentials, for the logs.
func (e *Edge) originLabels() []string {
	var labels []string
	for _, o := range e.origins.Origins() {
		labels = append(labels, o.String())
	}
	return labels
}

// force ends what the drain left: it cancels relays and fills, closes the
// connections and waits at most forceWait for their handlers to return.
func (e *Edge) force(drained time.Duration) error {
	ln := e.listener()
	inFlight := e.inflight.attr(time.Now())
	// Connections first: a canceled relay would otherwise answer its client
	// 503 on a connection about to close.
	closed := ln.closeAll()
	e.cancel()
	slog.Warn("edge drain timed out: closed the connections left and canceled the requests in flight",
		"drain", drained.Round(time.Millisecond).String(), "connections", closed, inFlight)
	select {
	case <-ln.waitEmpty():
		return nil
	case <-time.After(forceWait):
		left := ln.open()
		slog.Warn("edge handlers still running after their connections were closed; the cache is left open",
			"connections", left, e.inflight.attr(time.Now()))
		return fmt.Errorf("stop edge: %d connections still served %v after they were closed", left, forceWait)
	}
}

var (
	pathHealthz  = []byte("/healthz")
	pathMetrics  = []byte("/metrics")
	hdrRequestID = []byte(contract.HeaderRequestID)
	// canonRequestID is its name as fasthttp spells it, which every
	// answer's SetCanonical writes without normalising it again.
	canonRequestID = canonicalKey(hdrRequestID)
)

func (e *Edge) handle(ctx *fasthttp.RequestCtx) {
	// A request id is read and written under its name in fasthttp's
	// spelling (fasthttp normalises the request's header names as it
	// parses them), and one made here is made on the stack.
	var idBuf [48]byte
	rid := ctx.Request.Header.PeekCanonical(canonRequestID)
	if !contract.ValidRequestID(rid) {
		rid = strconv.AppendUint(append(idBuf[:0], e.idPrefix...), e.idSeq.Add(1), 36)
	}
	ctx.Response.Header.SetCanonical(canonRequestID, rid)
	t := targetOf(ctx)
	path := t.path
	switch {
	case bytes.Equal(path, pathHealthz):
		e.healthz(ctx)
		closeIfUnread(ctx)
		return
	case bytes.Equal(path, pathMetrics):
		e.scrape(ctx)
		closeIfUnread(ctx)
		return
	case bytes.HasPrefix(path, pathDocs) || bytes.HasPrefix(path, pathOpenAPI):
		if docFiles.serve(ctx, path) {
			closeIfUnread(ctx)
			return
		}
	case (ctx.IsGet() || ctx.IsHead()) && (bytes.HasPrefix(path, ogPrefix) || bytes.HasPrefix(t.orig, ogPrefix)):
		e.serveOG(ctx, rid, t.orig)
		closeIfUnread(ctx)
		return
	case (ctx.IsGet() || ctx.IsHead()) && bytes.HasPrefix(path, imagePrefix):
		if e.serveImage(ctx, rid, path, t.query) {
			closeIfUnread(ctx)
			return
		}
	}
	token := e.inflight.begin(string(rid), string(ctx.Method()), string(path))
	e.fwd.Forward(e.base, ctx, string(rid), func() { e.inflight.end(token) })
	e.metrics.forwarded.WithLabelValues(strconv.Itoa(ctx.Response.StatusCode())).Inc()
}

// requestTarget is what the edge reads of a request's target.
type requestTarget struct {
	path  []byte // normalised: URI.Path
	orig  []byte // as sent: URI.PathOriginal
	query []byte // URI.QueryString
}

// targetOf returns the target of ctx's request, read once: fasthttp's
// server parsed it before the handler.
func targetOf(ctx *fasthttp.RequestCtx) requestTarget {
	uri := ctx.URI()
	return requestTarget{path: uri.Path(), orig: uri.PathOriginal(), query: uri.QueryString()}
}

// closeIfUnread closes the connection after a request answered without
// reading its body: the rest of the body (fasthttp reads at most 8 KiB of
// one ahead, and nothing of a chunked one) would be read as the next
// request. The connection lingers, so that the client reads the answer.
func closeIfUnread(ctx *fasthttp.RequestCtx) {
	if hasBody(&ctx.Request.Header) {
		linger.CloseAfter(ctx)
	}
}

// caching reports whether the edge may answer from its cache: it needs a
// purge channel (an edge token, or an origin in the same process).
func (e *Edge) caching() bool { return e.sub != nil || !e.cfg.Standalone }

func (e *Edge) healthz(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	switch {
	case !e.ready.Load():
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		ctx.SetBodyString(`{"status":"starting"}` + "\n")
	case e.listener() != nil && e.listener().overloaded():
		// Out of file descriptors, or at --max-conns: new connections are
		// being refused.
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		ctx.Response.Header.Set("Retry-After", retryAfterValue)
		ctx.SetBodyString(`{"status":"overloaded"}` + "\n")
	default:
		ctx.SetBodyString(`{"status":"ok"}` + "\n")
	}
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

// fasthttpLogger routes fasthttp's own messages to slog. A connection that
// ended in a client's error (closed mid-request, malformed) is the client's
// doing, answered already: debug, or a flood of such clients would flood
// the log.
type fasthttpLogger struct{}

func (fasthttpLogger) Printf(format string, args ...any) {
	level := slog.LevelWarn
	if strings.HasPrefix(format, "error when serving connection ") {
		level = slog.LevelDebug
	}
	slog.Log(context.Background(), level, "fasthttp", "detail", fmt.Sprintf(format, args...))
}

// maxTransformQueue bounds the renditions waiting for a turn: past it a
// miss that needs one answers 503 at once.
const maxTransformQueue = 64

// errTransformsBusy answers a rendition that found the queue full.
var errTransformsBusy = apierr.New(fasthttp.StatusServiceUnavailable, "The edge is busy making other renditions; try again shortly").WithHeader("Retry-After", "1")

// transform runs fn when a transform slot is free, within ctx.
func (e *Edge) transform(ctx context.Context, fn func() ([]byte, error)) ([]byte, error) {
	select {
	case e.transforms <- struct{}{}:
	default:
		if e.waiting.Add(1) > maxTransformQueue {
			e.waiting.Add(-1)
			return nil, errTransformsBusy
		}
		select {
		case e.transforms <- struct{}{}:
			e.waiting.Add(-1)
		case <-ctx.Done():
			e.waiting.Add(-1)
			return nil, ctx.Err()
		}
	}
	defer func() { <-e.transforms }()
	return fn()
}
