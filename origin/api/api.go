package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/field"
	"github.com/pictorhq/pictor/origin/contract/logging"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/ratelimit"
	"github.com/pictorhq/pictor/origin/sharedmetric"
)

// Route is one line of the route table.
type Route struct {
	Method  string // GET also serves HEAD
	Pattern string // net/http pattern path, e.g. /v1/api-keys/{id}
	// Public routes need no credentials. Every other route names the
	// permission its caller must hold.
	Public     bool
	Permission perm.Permission
	// Group is the management rate-limit group, "" for unlimited routes.
	Group ratelimit.Group
	// Check, when set, runs after the permission check and before the
	// rate limit: a refusal of the caller's plan (a 403) costs no
	// allowance, as a missing permission costs none.
	Check func(p *auth.Principal) error
	// Serve answers the request, or returns the error the router answers
	// with in the standard body. Handler, instead, answers every request
	// itself, errors included (the operators' endpoints, the purge channel,
	// the MCP endpoint and its authorization server). A route has exactly
	// one of the two.
	Serve   HandlerFunc
	Handler http.HandlerFunc
	// Doc describes the route in the OpenAPI document: one of
	// origin/openapi's Operations. Every route has one, or is Hidden.
	Doc Doc
	// Hidden, when not "", leaves the route out of the document and says
	// why (operators' endpoints, the MCP endpoint and its authorization
	// server).
	Hidden string
}

// HandlerFunc answers a request, or returns the error to answer it with.
// The router writes a non-nil error in the standard body (apierr.Write),
// unless the handler already started its answer: then the error can only
// be logged, and the answer stays as the handler left it.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Doc is a route's description in the OpenAPI document. origin/openapi
// defines them and builds the document from the route table (it imports
// this package, so the type is named here).
type Doc interface {
	// OperationID names the operation in the document.
	OperationID() string
}

// Config wires the router.
type Config struct {
	Authenticator auth.Authenticator
	Limiter       ratelimit.Limiter
	// Registerer receives the HTTP metrics; nil skips them.
	Registerer prometheus.Registerer
	// Body, when set, is the slowest a request body may arrive (see
	// BodyRate); nil sets no minimum.
	Body *BodyRate
}

// Router dispatches requests along the route table.
type Router struct {
	cfg      Config
	mux      *http.ServeMux
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	limited  *prometheus.CounterVec

	mu       sync.Mutex
	inflight int
	idle     chan struct{} // closed when inflight drops to 0, nil while none waits
}

// New builds the router. It panics on a route that is neither public nor
// guarded by a permission, or whose permission is unknown, and on HTTP
// metrics that conflict with collectors already registered: the table and
// the metrics are code.
func New(cfg Config, routes []Route) *Router {
	f := sharedmetric.With(cfg.Registerer)
	rt := &Router{
		cfg: cfg,
		mux: http.NewServeMux(),
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_origin_http_requests_total",
			Help: "HTTP requests answered by the origin, by route and status code.",
		}, []string{"route", "code"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "pictor_origin_http_request_duration_seconds",
			Help:    "Time to answer an origin HTTP request, by route.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}, []string{"route"}),
		limited: f.NewCounterVec(prometheus.CounterOpts{
			Name: "pictor_origin_rate_limited_total",
			Help: "Management requests rejected by the rate limiter, by group.",
		}, []string{"group"}),
	}
	if err := f.Err(); err != nil {
		panic(err)
	}
	for _, r := range routes {
		if !r.Public && !perm.Valid(r.Permission) {
			panic(fmt.Sprintf("route %s %s has no valid permission", r.Method, r.Pattern))
		}
		if (r.Serve == nil) == (r.Handler == nil) {
			panic(fmt.Sprintf("route %s %s needs exactly one of Serve and Handler", r.Method, r.Pattern))
		}
		rt.mux.Handle(r.Method+" "+r.Pattern, rt.guard(r))
	}
	return rt
}

// ServeHTTP implements http.Handler.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	markAnswering(r.Context())
	rt.enter()
	defer rt.leave()
	id := logging.AcceptRequestID(r.Header.Get(contract.HeaderRequestID))
	w.Header().Set(contract.HeaderRequestID, id)
	r = r.WithContext(logging.WithRequestID(r.Context(), id))
	sw := &statusWriter{ResponseWriter: w}
	if rt.cfg.Body != nil && r.Body != nil && r.Body != http.NoBody {
		sw.body = &rateBody{ReadCloser: r.Body, rc: http.NewResponseController(w), rate: *rt.cfg.Body, start: start}
		r.Body = sw.body
	}
	route := "unmatched"
	defer func() {
		// A panic before the answer started is a 500 in the standard body.
		// Once it started, the answer can only be cut short: abort it, as
		// net/http does, so that the client (an edge, which caches) sees a
		// broken answer rather than a whole-looking truncated one.
		abort := false
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			slog.ErrorContext(r.Context(), "panic", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if sw.wrote {
				abort = true
			} else {
				apierr.Write(sw, r, apierr.Internal(fmt.Errorf("panic: %v", v)))
			}
		}
		elapsed := time.Since(start)
		code := strconv.Itoa(sw.code())
		rt.requests.WithLabelValues(route, code).Inc()
		rt.duration.WithLabelValues(route).Observe(elapsed.Seconds())
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", route),
			slog.Int("status", sw.code()), slog.Int64("bytes", sw.bytes),
			slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
			slog.String("remote", r.RemoteAddr), slog.String("forwarded_for", r.Header.Get("X-Forwarded-For")),
		}
		if abort {
			attrs = append(attrs, slog.Bool("aborted", true))
		}
		slog.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		if abort {
			panic(http.ErrAbortHandler)
		}
	}()
	if _, pattern := rt.mux.Handler(r); pattern != "" {
		route = pattern
		rt.mux.ServeHTTP(sw, r)
		return
	}
	rt.unmatched(sw, r)
}

// unmatched answers a request no route takes: 404, or 405 with Allow when
// the path exists for other methods. Redirects for unclean paths pass through.
func (rt *Router) unmatched(w http.ResponseWriter, r *http.Request) {
	h, _ := rt.mux.Handler(r)
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	switch rec.status {
	case http.StatusMethodNotAllowed:
		e := apierr.New(http.StatusMethodNotAllowed, "Method %s is not allowed on %s", r.Method, r.URL.Path)
		e.WithHeader("Allow", rec.header.Get("Allow"))
		apierr.Write(w, r, e)
	case http.StatusMovedPermanently, http.StatusPermanentRedirect, http.StatusTemporaryRedirect, http.StatusFound:
		http.Redirect(w, r, rec.header.Get("Location"), rec.status)
	default:
		apierr.Write(w, r, apierr.NotFound("No route for %s %s", r.Method, r.URL.Path))
	}
}

type callerKey struct{}

// WithCaller returns ctx marking a request that this process makes to the
// router on behalf of p, already authenticated another way (an MCP tool
// call with an OAuth token): the guard takes p as the caller instead of
// reading credentials, and applies everything else — the permission, the
// plan check, the rate limit shared with p's organization — as for any
// request. Requests from the network never carry it: only code in this
// process can set a context value.
func WithCaller(ctx context.Context, p *auth.Principal) context.Context {
	return context.WithValue(ctx, callerKey{}, p)
}

func callerFrom(ctx context.Context) *auth.Principal {
	p, _ := ctx.Value(callerKey{}).(*auth.Principal)
	return p
}

// guard wraps a route's handler with authentication, the permission check
// and the rate limit.
func (rt *Router) guard(route Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if route.Public {
			route.serve(w, r)
			return
		}
		p, err := rt.admit(w, r, &route)
		if err != nil {
			fail(w, r, err)
			return
		}
		route.serve(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}

// admit authenticates the caller of a guarded route and applies the
// permission, the plan check and the rate limit: the caller, or the error
// to answer with.
func (rt *Router) admit(w http.ResponseWriter, r *http.Request, route *Route) (*auth.Principal, error) {
	// Authenticated answers are per caller: no cache may keep them.
	w.Header().Set("Cache-Control", "no-store")
	p := callerFrom(r.Context())
	if p == nil {
		var err error
		if p, err = auth.Authenticate(rt.cfg.Authenticator, r); err != nil {
			return nil, err
		}
	}
	if !p.Grant.Has(route.Permission) {
		return nil, apierr.Forbidden("Missing permission: this operation requires %s", route.Permission)
	}
	if route.Check != nil {
		if err := route.Check(p); err != nil {
			return nil, err
		}
	}
	if route.Group != "" {
		if err := rt.limit(w, r, p, route.Group); err != nil {
			return nil, err
		}
	}
	// url.URL.Query, which handlers may use, drops a malformed pair
	// silently; such a query is refused here instead, naming the
	// parameter. (Public routes read their query with field.Query
	// themselves, or not at all.)
	if _, err := field.Query(r); err != nil {
		return nil, err
	}
	return p, nil
}

// serve runs the route's handler and answers its error, if any.
func (route *Route) serve(w http.ResponseWriter, r *http.Request) {
	if route.Handler != nil {
		route.Handler(w, r)
		return
	}
	if err := route.Serve(w, r); err != nil {
		fail(w, r, err)
	}
}

// fail answers err in the standard body, unless the answer already
// started (w is the router's statusWriter, which knows): a second body
// would corrupt the first, so the error is only logged.
func fail(w http.ResponseWriter, r *http.Request, err error) {
	if sw, ok := w.(*statusWriter); ok && sw.wrote {
		slog.WarnContext(r.Context(), "handler failed after answering", "status", sw.status, "error", err.Error())
		return
	}
	apierr.Write(w, r, err)
}

func (rt *Router) limit(w http.ResponseWriter, r *http.Request, p *auth.Principal, g ratelimit.Group) error {
	quota := g.Quota()
	d, err := rt.cfg.Limiter.Allow(r.Context(), p.Org.ID+"|"+string(g), quota, ratelimit.Window)
	if err != nil {
		return fmt.Errorf("rate limit %s: %w", g, err)
	}
	h := w.Header()
	h.Set("RateLimit-Policy", fmt.Sprintf("%q;q=%d;w=%d", g, quota, int(ratelimit.Window/time.Second)))
	h.Set("RateLimit", fmt.Sprintf("%q;r=%d", g, d.Remaining))
	if d.Allowed {
		return nil
	}
	rt.limited.WithLabelValues(string(g)).Inc()
	return apierr.TooManyRequests(d.RetryAfter, "Rate limit exceeded for %s: %d requests per %d seconds per organization",
		g, quota, int(ratelimit.Window/time.Second))
}

// enter and leave count the requests in ServeHTTP, for Wait.
func (rt *Router) enter() {
	rt.mu.Lock()
	rt.inflight++
	rt.mu.Unlock()
}

func (rt *Router) leave() {
	rt.mu.Lock()
	rt.inflight--
	if rt.inflight == 0 && rt.idle != nil {
		close(rt.idle)
		rt.idle = nil
	}
	rt.mu.Unlock()
}

// InFlight returns how many requests are being handled.
func (rt *Router) InFlight() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.inflight
}

// Wait returns once no request is being handled, or with how many still
// are when ctx ends first.
func (rt *Router) Wait(ctx context.Context) (int, error) {
	rt.mu.Lock()
	if rt.inflight == 0 {
		rt.mu.Unlock()
		return 0, nil
	}
	if rt.idle == nil {
		rt.idle = make(chan struct{})
	}
	idle := rt.idle
	rt.mu.Unlock()
	select {
	case <-idle:
		return 0, nil
	case <-ctx.Done():
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return rt.inflight, ctx.Err()
	}
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	body   *rateBody // nil without a body or a minimum rate
	status int
	bytes  int64
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
		w.answering()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
		w.answering()
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// ReadFrom hands a copy of a body to the ResponseWriter's own ReadFrom
// (net/http's, which sends an *os.File with sendfile).
func (w *statusWriter) ReadFrom(src io.Reader) (int64, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
		w.answering()
	}
	n, err := io.Copy(w.ResponseWriter, src)
	w.bytes += n
	return n, err
}

func (w *statusWriter) code() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.status
}

// answering runs once, before the header goes out.
func (w *statusWriter) answering() {
	if w.body != nil {
		w.body.answering(w.ResponseWriter.Header())
	}
}

// EnableFullDuplex exempts the body from the minimum rate (it is read
// alongside the answer, at the pace of the conversation), then enables
// full duplex on the connection.
func (w *statusWriter) EnableFullDuplex() error {
	if w.body != nil {
		w.body.exempt.Store(true)
	}
	return http.NewResponseController(w.ResponseWriter).EnableFullDuplex()
}

// Unwrap lets http.ResponseController reach the connection (flush, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// recorder captures the status and headers of ServeMux's own 404/405.
type recorder struct {
	header http.Header
	status int
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *recorder) WriteHeader(code int)        { r.status = code }
