package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/sharedmetric"
)

// Config configures a Gateway.
type Config struct {
	// DialTimeout bounds each name lookup and each connection attempt of a
	// session.
	DialTimeout time.Duration
	// Resolver looks up the names renders ask for; nil means
	// net.DefaultResolver.
	Resolver Resolver
	// Registerer receives the egress metrics; nil skips them.
	Registerer prometheus.Registerer
	// Logger receives blocked requests and upstream failures; nil means
	// slog.Default().
	Logger *slog.Logger
	// ProxyRootCAs are the authorities trusted for upstream proxies reached
	// over TLS (Upstream.Scheme "https"); nil means the system's.
	ProxyRootCAs *x509.CertPool
	// Dial, when set, replaces the socket dial of an address that passed
	// every check. It is a test seam: it lets tests stand a loopback server
	// in for a public host, which this sandbox cannot reach.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{DialTimeout: 10 * time.Second, Resolver: net.DefaultResolver, Logger: slog.Default()}
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	if c.DialTimeout <= 0 {
		return fmt.Errorf("egress DialTimeout %v: must be positive", c.DialTimeout)
	}
	if c.Resolver == nil || c.Logger == nil {
		return errors.New("egress Resolver and Logger: required (DefaultConfig sets them)")
	}
	return nil
}

// Gateway holds what the sessions of every render share: the resolver, the
// dial settings and the metrics.
type Gateway struct {
	cfg     Config
	metrics *metrics
	// dialHook, when set by tests, replaces the socket dial of a checked
	// address.
	dialHook func(ctx context.Context, network, addr string) (net.Conn, error)

	// probeOnce runs checkPeerLookup's probe, which set probeErr.
	probeOnce sync.Once
	probeErr  error
	// refused holds the users and reasons of the peers refused so far, so
	// that each is logged at Warn once.
	refusedMu sync.Mutex
	refused   map[refusalKey]struct{}
}

// New validates cfg and returns a Gateway.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Gateway{cfg: cfg, metrics: m, dialHook: cfg.Dial, refused: map[refusalKey]struct{}{}}, nil
}

// Check is the package Check with the gateway's resolver and dial timeout.
func (g *Gateway) Check(ctx context.Context, host string, allowPrivate bool) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.DialTimeout)
	defer cancel()
	return Check(ctx, g.cfg.Resolver, host, allowPrivate)
}

// Request kinds and outcomes of the requests metric.
const (
	kindHTTP     = "http"
	kindConnect  = "connect"
	kindInternal = "internal"

	outcomeAllowed        = "allowed"
	outcomeBlockedAddress = "blocked_address"
	outcomeBlockedScheme  = "blocked_scheme"
	outcomeError          = "error"

	// Results of the proxied metric: the ProxyError kinds, and ok.
	proxyResultOK          = "ok"
	proxyResultBlocked     = "blocked"
	proxyResultUnreachable = "unreachable"
	proxyResultAuth        = "auth"
	proxyResultFailed      = "failed"
)

// proxyResult is the proxied metric's result for pe.
func proxyResult(pe *ProxyError) string {
	switch pe.Kind {
	case ErrProxyBlocked:
		return proxyResultBlocked
	case ErrProxyUnreachable:
		return proxyResultUnreachable
	case ErrProxyAuth:
		return proxyResultAuth
	}
	return proxyResultFailed
}

type metrics struct {
	requests *prometheus.CounterVec
	proxied  *prometheus.CounterVec
	dials    *prometheus.HistogramVec
	sessions prometheus.Gauge
	tunnels  prometheus.Gauge
	// refusedPeers counts connections closed unserved by reason (user,
	// process, lookup).
	refusedPeers *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) (*metrics, error) {
	f := sharedmetric.With(r)
	m := &metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_egress_requests_total",
			Help: "Requests of renders through the egress proxy, by kind (http, connect, internal) and outcome.",
		}, []string{"kind", "outcome"}),
		proxied: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_egress_upstream_proxy_requests_total",
			Help: "Requests relayed through an organization's upstream proxy, by kind (http, connect) and result (ok, blocked, unreachable, auth, failed).",
		}, []string{"kind", "result"}),
		dials: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pictor_egress_dial_duration_seconds",
			Help:    "Time to connect to a checked upstream address, by result (ok, error).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}, []string{"result"}),
		sessions: f.NewGauge(prometheus.GaugeOpts{
			Name: "pictor_egress_sessions_open",
			Help: "Egress sessions open, one per render in progress.",
		}),
		tunnels: f.NewGauge(prometheus.GaugeOpts{
			Name: "pictor_egress_tunnels_open",
			Help: "CONNECT tunnels open.",
		}),
		refusedPeers: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_egress_refused_peers_total",
			Help: "Connections to an egress session closed unserved because they did not come from its client, by reason (user: a socket of another user; process: of the right user but another process; lookup: the kernel could not say whose).",
		}, []string{"reason"}),
	}
	return m, f.Err()
}
