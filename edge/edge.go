package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/pictorhq/pictor/edge/forward"
	"github.com/pictorhq/pictor/origin/logging"
)

// Edge is a running edge tier.
type Edge struct {
	cfg      Config
	fwd      *forward.Forwarder
	server   *fasthttp.Server
	ln       net.Listener
	served   chan error
	ready    atomic.Bool
	registry *prometheus.Registry
	metrics  fasthttp.RequestHandler
	requests *prometheus.CounterVec
}

// New wires an edge from cfg.
func New(cfg Config) (*Edge, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fwd, err := forward.New(cfg.OriginURL)
	if err != nil {
		return nil, err
	}
	e := &Edge{cfg: cfg, fwd: fwd, registry: prometheus.NewRegistry()}
	e.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pictor_edge_requests_total",
		Help: "Requests answered by the edge, by how (local, forwarded) and status code.",
	}, []string{"via", "code"})
	e.registry.MustRegister(e.requests, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	e.metrics = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(e.registry, promhttp.HandlerOpts{}))
	e.server = &fasthttp.Server{
		Handler:                      e.handle,
		Name:                         "pictor",
		StreamRequestBody:            true,
		MaxRequestBodySize:           cfg.MaxRequestBody,
		ReadBufferSize:               16 << 10,
		IdleTimeout:                  2 * time.Minute,
		ReadTimeout:                  5 * time.Minute,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		Logger:                       fasthttpLogger{},
	}
	return e, nil
}

// Addr returns the listen address, once started.
func (e *Edge) Addr() string {
	if e.ln == nil {
		return e.cfg.Addr
	}
	return e.ln.Addr().String()
}

// Start begins serving.
func (e *Edge) Start(ctx context.Context) error {
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

// Stop stops accepting, lets in-flight requests finish and releases
// connections. It is safe after a partial start.
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
	e.fwd.Close()
	return errors.Join(errs...)
}

func (e *Edge) handle(ctx *fasthttp.RequestCtx) {
	id := logging.AcceptRequestID(string(ctx.Request.Header.Peek("X-Request-Id")))
	ctx.Response.Header.Set("X-Request-Id", id)
	via := "local"
	switch string(ctx.Path()) {
	case "/healthz":
		e.healthz(ctx)
	case "/metrics":
		e.metrics(ctx)
	default:
		via = "forward"
		e.fwd.Forward(ctx, id)
	}
	e.requests.WithLabelValues(via, strconv.Itoa(ctx.Response.StatusCode())).Inc()
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

// fasthttpLogger routes fasthttp's own messages to slog.
type fasthttpLogger struct{}

func (fasthttpLogger) Printf(format string, args ...any) {
	slog.Warn("fasthttp", "detail", fmt.Sprintf(format, args...))
}
