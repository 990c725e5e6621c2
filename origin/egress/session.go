package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Policy is what one render may reach.
type Policy struct {
	// AllowPrivate lifts the address rule (--allow-private-urls): loopback
	// and private networks become reachable. Cloud metadata addresses and
	// names stay blocked, and the scheme rules stay.
	AllowPrivate bool
	// InternalHost names the host, e.g. "pictor.internal", whose plain-http
	// requests on port 80 Internal answers in-process; it is never resolved
	// or dialed, and CONNECT to it is refused.
	InternalHost string
	// Internal serves InternalHost. It gets origin-form requests (path and
	// query as sent) and must return once their context is done.
	Internal http.Handler
	// Upstream, when set, is the proxy every request goes through except
	// the internal host's and Upstream.Bypass's; Session.SetUpstream
	// changes it. Its failures are the session's own answers, with a
	// *ProxyError.
	Upstream *Upstream
	// Peer says which local processes the session serves besides the
	// connections of its own Dial; the zero Peer serves no other. A
	// connection it refuses is closed at once, unread.
	Peer Peer
}

// Blocked is one request a session refused by policy.
type Blocked struct {
	// Target is the host:port of a CONNECT or the request URI of an http
	// request.
	Target string
	// Reason matches ErrBlockedAddress, ErrCloudMetadata, ErrBlockedScheme
	// or ErrInvalidHost.
	Reason error
}

// maxBlocked caps the refusals a session keeps; later ones are only counted
// and logged.
const maxBlocked = 1000

const (
	readHeaderTimeout = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	// maxHeaderBytes bounds the head of an upstream response.
	maxHeaderBytes = 1 << 20
	// maxRequestHeaderBytes bounds the head of a request from Chromium. It
	// is above anything Chromium sends (URLs of up to 2 MiB, cookies, the
	// custom headers), so that net/http never answers a request with a 431
	// of its own: an answer that carries no AnswerHeader would be taken for
	// the site's.
	maxRequestHeaderBytes = 4 << 20
)

// Session is the proxy of one render, listening on 127.0.0.1.
type Session struct {
	g        *Gateway
	policy   Policy
	internal string // InternalHost, parsed
	log      *slog.Logger
	ln       net.Listener
	srv      *http.Server
	tr       *http.Transport
	proxy    *httputil.ReverseProxy
	dialer   net.Dialer
	ctx      context.Context // canceled by Close; every request derives from it
	cancel   context.CancelFunc
	served   chan struct{}

	// marker is the secret part of AnswerHeader.
	marker string

	mu       sync.Mutex
	closed   bool
	route    *route // where requests go now; replaced by SetUpstream
	conns    map[*trackedConn]struct{}
	dialed   map[uint32]struct{} // inodes of Dial's sockets, until accepted
	blocked  []Blocked
	failures []Failure // the last maxFailures answers of the session's own, by seq % maxFailures
	failed   uint64    // answers of the session's own so far
	handlers sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// Open starts a session for one render on a fresh port of 127.0.0.1,
// serving the peers p.Peer admits. Unless p.Peer is AnyPeer, the first
// Open of a gateway checks that the kernel answers the peer lookups, and
// fails with ErrPeerLookup if it does not.
func (g *Gateway) Open(p Policy) (*Session, error) {
	s := &Session{
		g:      g,
		policy: p,
		log:    g.cfg.Logger,
		marker: newMarker(),
		served: make(chan struct{}),
		conns:  map[*trackedConn]struct{}{},
		dialed: map[uint32]struct{}{},
	}
	if p.Peer.kind != peerAny {
		if err := g.checkPeerLookup(); err != nil {
			return nil, err
		}
	}
	if p.InternalHost != "" {
		h, err := parseHost(p.InternalHost)
		if err != nil || h.name == "" {
			return nil, fmt.Errorf("egress policy InternalHost %q: want a host name", p.InternalHost)
		}
		if p.Internal == nil {
			return nil, fmt.Errorf("egress policy InternalHost %q: Internal handler is nil", p.InternalHost)
		}
		s.internal = h.name
	}
	s.route = &route{}
	if p.Upstream != nil {
		up, err := parseUpstream(*p.Upstream)
		if err != nil {
			return nil, fmt.Errorf("egress policy Upstream: %w", err)
		}
		s.route.up = up
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress session listen: %w", err)
	}
	s.ln = ln
	if p.Peer.kind != peerAny {
		s.ln = &peerListener{Listener: ln, s: s}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	errorLog := slog.NewLogLogger(g.cfg.Logger.Handler(), slog.LevelDebug)
	s.dialer = net.Dialer{
		Timeout:   g.cfg.DialTimeout,
		KeepAlive: 30 * time.Second,
		Control:   s.control,
	}
	s.tr = &http.Transport{
		Proxy:                  proxyOf, // the request's upstream, never an environment proxy
		DialContext:            s.dialTransport,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true, // relay Accept-Encoding and bodies untouched
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxHeaderBytes,
	}
	s.proxy = &httputil.ReverseProxy{
		Rewrite:        rewrite,
		Transport:      s.tr,
		FlushInterval:  -1,
		ErrorLog:       errorLog,
		ErrorHandler:   s.upstreamError,
		ModifyResponse: s.upstreamResponse,
	}
	s.srv = &http.Server{
		Handler:                      http.HandlerFunc(s.serve),
		ReadHeaderTimeout:            readHeaderTimeout,
		IdleTimeout:                  idleTimeout,
		MaxHeaderBytes:               maxRequestHeaderBytes,
		ErrorLog:                     errorLog,
		BaseContext:                  func(net.Listener) context.Context { return s.ctx },
		DisableGeneralOptionsHandler: true,
	}
	go func() {
		defer close(s.served)
		_ = s.srv.Serve(s.ln)
	}()
	g.metrics.sessions.Inc()
	return s, nil
}

// SetUpstream sends every request from now on through u, or directly when
// u is nil, with the rest of the policy unchanged. It validates u first
// (the error matches ErrInvalidUpstream) and then ends every connection
// and tunnel the session has open, so that nothing opened on the previous
// route (a tunnel Chromium would reuse, a pooled connection, a dial under
// way) carries a request of the next render; requests in flight fail with
// ErrClosed. Call it between renders, with the session idle.
func (s *Session) SetUpstream(u *Upstream) error {
	rt := &route{}
	if u != nil {
		up, err := parseUpstream(*u)
		if err != nil {
			return fmt.Errorf("egress session upstream: %w", err)
		}
		rt.up = up
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.route = rt
	conns := s.conns
	s.conns = map[*trackedConn]struct{}{}
	s.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
	s.tr.CloseIdleConnections()
	return nil
}

// currentRoute is where a request that starts now goes.
func (s *Session) currentRoute() *route {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.route
}

// Addr is the proxy address, 127.0.0.1:PORT.
func (s *Session) Addr() string { return s.ln.Addr().String() }

// Blocked returns the requests refused so far, oldest first.
func (s *Session) Blocked() []Blocked {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.blocked)
}

// Close stops the listener, closes every connection and tunnel of the
// session and waits for its requests to end. It is safe to call twice.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		conns := s.conns
		s.conns = nil
		s.mu.Unlock()
		// Connections first, so that no canceled request gets an answer
		// out, then the context that ends dials, lookups and requests.
		err := s.srv.Close()
		for c := range conns {
			_ = c.Conn.Close()
		}
		s.cancel()
		s.handlers.Wait()
		<-s.served
		s.tr.CloseIdleConnections()
		s.g.metrics.sessions.Dec()
		if err != nil {
			s.closeErr = fmt.Errorf("close egress session: %w", err)
		}
	})
	return s.closeErr
}

// serve dispatches one proxy request.
func (s *Session) serve(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		kind, target := kindHTTP, r.RequestURI
		if r.Method == http.MethodConnect {
			kind, target = kindConnect, r.Host
		}
		s.answer(w, http.StatusServiceUnavailable, "egress: session closed", newFailure(kind, target, ErrClosed))
		return
	}
	defer s.handlers.Done()
	if r.Method == http.MethodConnect {
		s.serveConnect(w, r)
		return
	}
	s.serveHTTP(w, r)
}

// enter admits a request unless the session is closed.
func (s *Session) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

// plan is where an allowed http request goes; it rides in the request
// context from the handler to rewrite, the Transport's Proxy and
// dialTransport.
type plan struct {
	rt    *route
	addrs []netip.Addr // checked, dialed in order; none when via is set
	port  uint16
	host  string // Host header: the authority of the request line
	// via is the upstream proxy the request goes through, nil when direct;
	// authority is then what the proxy is asked for.
	via       *upstream
	authority string
}

type planKey struct{}

// target is the address dialTransport is asked for: the checked address,
// or the proxy.
func (p *plan) target() string {
	if p.via != nil {
		return p.via.dialAddr
	}
	return netip.AddrPortFrom(p.addrs[0], p.port).String()
}

// proxyOf is the Transport's Proxy: the request's upstream, if any.
func proxyOf(r *http.Request) (*url.URL, error) {
	if p, ok := r.Context().Value(planKey{}).(*plan); ok && p.via != nil {
		return p.via.proxyURL, nil
	}
	return nil, nil
}

// serveHTTP relays an absolute-form http:// (or ws://) request.
func (s *Session) serveHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.RequestURI
	u := r.URL
	if u.Scheme != "http" && u.Scheme != "ws" {
		scheme := u.Scheme
		if scheme == "" {
			scheme = "origin-form"
		}
		s.refuse(w, r, kindHTTP, target, fmt.Errorf("%w: %s request", ErrBlockedScheme, scheme))
		return
	}
	hostname, port, err := splitHostPort(u.Host, 80)
	if err != nil {
		s.refuse(w, r, kindHTTP, target, err)
		return
	}
	h, err := parseHost(hostname)
	if err != nil {
		s.refuse(w, r, kindHTTP, target, err)
		return
	}
	if s.internal != "" && h.name == s.internal {
		if port != 80 {
			s.refuse(w, r, kindHTTP, target, fmt.Errorf("%w: internal host %s serves port 80 only", ErrBlockedScheme, s.internal))
			return
		}
		s.serveInternal(w, r)
		return
	}
	rt := s.currentRoute()
	p := &plan{rt: rt, port: port, host: hostHeader(u.Host, h)}
	if p.via = rt.via(h); p.via != nil {
		if err := s.checkProxied(hostname, h); err != nil {
			s.refuse(w, r, kindHTTP, target, err)
			return
		}
		p.authority = proxiedAuthority(h, port)
		if port == 80 {
			p.authority = strings.TrimSuffix(p.authority, ":80")
		}
		p.host = p.authority
	} else {
		addrs, err := s.resolve(r.Context(), hostname, h)
		if err != nil {
			s.refuseOrFail(w, r, kindHTTP, target, err)
			return
		}
		p.addrs = addrs
	}
	// Counted as allowed by s.upstreamResponse or as an error by
	// s.upstreamError, before the client sees the answer.
	s.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), planKey{}, p)))
}

// hostHeader is the Host header sent upstream: the authority of the request
// line as given, or its ASCII form if it is not ASCII (an IDN that Chromium
// would have sent as punycode).
func hostHeader(authority string, h host) string {
	if isASCII(authority) {
		return authority
	}
	name := h.name
	if h.addr.IsValid() {
		name = h.addr.String()
		if h.addr.Is6() {
			name = "[" + name + "]"
		}
	}
	if _, p, ok := strings.Cut(authority[strings.LastIndexByte(authority, ']')+1:], ":"); ok && p != "" {
		return name + ":" + p
	}
	return name
}

// rewrite points the outbound request at the checked address and keeps the
// Host of the request line. ReverseProxy has already dropped the hop-by-hop
// headers and, because Rewrite is set, adds no X-Forwarded-* header.
func rewrite(pr *httputil.ProxyRequest) {
	p := pr.In.Context().Value(planKey{}).(*plan)
	pr.Out.URL.Scheme = "http"
	pr.Out.URL.Host = p.target()
	if p.via != nil {
		// The proxy gets the request line's authority as the session
		// read it; the Transport writes it in absolute form.
		pr.Out.URL.Host = p.authority
	}
	pr.Out.URL.User = nil
	pr.Out.Host = p.host
	stripProxyHeaders(pr.Out.Header)
	if p.via != nil && p.via.auth != "" {
		pr.Out.Header["Proxy-Authorization"] = []string{p.via.auth}
	}
	// ReverseProxy removed any Forwarded or X-Forwarded-* header the page
	// set itself; put them back so that the proxy stays invisible.
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		if v, ok := pr.In.Header[k]; ok && !connectionListed(pr.In.Header, k) {
			pr.Out.Header[k] = slices.Clone(v)
		}
	}
}

// connectionListed reports whether the Connection header names k.
func connectionListed(h http.Header, k string) bool {
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), k) {
				return true
			}
		}
	}
	return false
}

// stripProxyHeaders drops the Proxy-* headers meant for this proxy.
func stripProxyHeaders(h http.Header) {
	for k := range h {
		if strings.HasPrefix(k, "Proxy-") {
			delete(h, k)
		}
	}
}

// upstreamResponse counts a relayed request and drops the Proxy-* headers
// of its response, and any AnswerHeader: only the session's own answers
// carry one. A 407 of an upstream proxy is its refusal, never relayed.
func (s *Session) upstreamResponse(resp *http.Response) error {
	if p, ok := resp.Request.Context().Value(planKey{}).(*plan); ok && p.via != nil {
		if resp.StatusCode == http.StatusProxyAuthRequired {
			return s.proxyStatusError(p.via, resp.StatusCode, false)
		}
		s.g.metrics.proxied.WithLabelValues(kindHTTP, proxyResultOK).Inc()
	}
	s.g.metrics.requests.WithLabelValues(kindHTTP, outcomeAllowed).Inc()
	stripProxyHeaders(resp.Header)
	resp.Header.Del(AnswerHeader)
	return nil
}

// upstreamError answers a request whose upstream failed.
func (s *Session) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	var pe *ProxyError
	switch p, _ := r.Context().Value(planKey{}).(*plan); {
	case errors.As(err, &pe):
		err = pe
	case p != nil && p.via != nil && !errors.Is(err, ErrClosed):
		// Whatever broke after the proxy accepted the connection: the
		// session spoke to the proxy only.
		err = s.proxyIOError(r.Context(), p.via, err)
	case !errors.Is(err, ErrDial) && !errors.Is(err, ErrBlockedAddress) && !errors.Is(err, ErrInvalidHost) && !errors.Is(err, ErrClosed):
		err = fmt.Errorf("%w: %w", ErrUpstream, err)
	}
	s.fail(w, r, kindHTTP, r.RequestURI, err)
}

// serveInternal hands a request for InternalHost to Policy.Internal.
func (s *Session) serveInternal(w http.ResponseWriter, r *http.Request) {
	in := r.Clone(r.Context())
	in.URL = &url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	in.RequestURI = in.URL.RequestURI()
	stripProxyHeaders(in.Header)
	s.g.metrics.requests.WithLabelValues(kindInternal, outcomeAllowed).Inc()
	s.policy.Internal.ServeHTTP(&internalWriter{ResponseWriter: w, s: s, target: r.RequestURI}, in)
}

// serveConnect opens a tunnel to a checked address.
func (s *Session) serveConnect(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	hostname, port, err := splitHostPort(target, 0)
	if err != nil {
		s.refuse(w, r, kindConnect, target, err)
		return
	}
	h, err := parseHost(hostname)
	if err != nil {
		s.refuse(w, r, kindConnect, target, err)
		return
	}
	if s.internal != "" && h.name == s.internal {
		s.refuse(w, r, kindConnect, target, fmt.Errorf("%w: internal host %s is plain http only", ErrBlockedScheme, s.internal))
		return
	}
	rt := s.currentRoute()
	var up net.Conn
	if via := rt.via(h); via != nil {
		if err := s.checkProxied(hostname, h); err != nil {
			s.refuse(w, r, kindConnect, target, err)
			return
		}
		up, err = s.connectVia(r.Context(), rt, via, proxiedAuthority(h, port))
		if err != nil {
			s.fail(w, r, kindConnect, target, err)
			return
		}
		s.g.metrics.proxied.WithLabelValues(kindConnect, proxyResultOK).Inc()
	} else {
		addrs, err := s.resolve(r.Context(), hostname, h)
		if err != nil {
			s.refuseOrFail(w, r, kindConnect, target, err)
			return
		}
		up, err = s.dialChecked(r.Context(), rt, addrs, port)
		if err != nil {
			s.fail(w, r, kindConnect, target, err)
			return
		}
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = up.Close()
		s.fail(w, r, kindConnect, target, fmt.Errorf("hijack: %w", err))
		return
	}
	client, err := s.track(conn, rt)
	if err != nil {
		_ = up.Close()
		return
	}
	s.g.metrics.requests.WithLabelValues(kindConnect, outcomeAllowed).Inc()
	s.g.metrics.tunnels.Inc()
	defer s.g.metrics.tunnels.Dec()
	_ = conn.SetDeadline(time.Time{})
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = client.Close()
		_ = up.Close()
		return
	}
	// Bytes the client sent after the CONNECT head, e.g. a TLS hello.
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			_ = client.Close()
			_ = up.Close()
			return
		}
	}
	splice(client, up)
}

// splice copies both ways until both sides are done, passing a clean end
// of one direction on as a half close; an error closes everything.
func splice(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(b, a)
	}()
	pipe(a, b)
	<-done
	_ = a.Close()
	_ = b.Close()
}

func pipe(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		_ = src.Close()
		_ = dst.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = dst.Close()
}

// resolve checks a parsed host with the session's resolver and policy.
func (s *Session) resolve(ctx context.Context, raw string, h host) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, s.g.cfg.DialTimeout)
	defer cancel()
	return resolve(ctx, s.g.cfg.Resolver, raw, h, s.policy.AllowPrivate)
}

// refuseOrFail answers a failed check: a policy refusal or a lookup error.
func (s *Session) refuseOrFail(w http.ResponseWriter, r *http.Request, kind, target string, err error) {
	if errors.Is(err, ErrBlockedAddress) || errors.Is(err, ErrInvalidHost) {
		s.refuse(w, r, kind, target, err)
		return
	}
	s.fail(w, r, kind, target, err)
}

// refuse answers a request the policy refuses and records it.
func (s *Session) refuse(w http.ResponseWriter, r *http.Request, kind, target string, err error) {
	status, outcome, reason := http.StatusForbidden, outcomeBlockedAddress, "address not allowed"
	var ae *AddressError
	switch {
	case errors.As(err, &ae):
		reason = ae.Range + " address not allowed"
	case errors.Is(err, ErrBlockedScheme):
		outcome, reason = outcomeBlockedScheme, "scheme not allowed"
	case errors.Is(err, ErrInvalidHost):
		status, outcome, reason = http.StatusBadRequest, outcomeError, "invalid host"
	}
	s.mu.Lock()
	if len(s.blocked) < maxBlocked {
		s.blocked = append(s.blocked, Blocked{Target: target, Reason: err})
	}
	s.mu.Unlock()
	s.g.metrics.requests.WithLabelValues(kind, outcome).Inc()
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "egress request blocked",
		slog.String("kind", kind), slog.String("target", target), slog.Any("error", err))
	s.answer(w, status, "Blocked by the Pictor egress policy: "+reason, newFailure(kind, target, err))
}

// fail answers a request the policy allowed but that could not be relayed.
// A failure of the upstream proxy is logged at Warn, once per request,
// and its answer names the proxy and the reason, never the credentials.
func (s *Session) fail(w http.ResponseWriter, r *http.Request, kind, target string, err error) {
	s.g.metrics.requests.WithLabelValues(kind, outcomeError).Inc()
	status := http.StatusBadGateway
	if isTimeout(err) {
		status = http.StatusGatewayTimeout
	}
	if pe := (*ProxyError)(nil); errors.As(err, &pe) {
		s.g.metrics.proxied.WithLabelValues(kind, proxyResult(pe)).Inc()
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "egress upstream proxy failed",
			slog.String("kind", kind), slog.String("target", target), slog.String("proxy", pe.Proxy),
			slog.Int("status", pe.Status), slog.Any("error", err))
		s.answer(w, status, "egress: upstream proxy "+pe.Proxy+": "+pe.Reason, newFailure(kind, target, err))
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "egress upstream failed",
		slog.String("kind", kind), slog.String("target", target), slog.Any("error", err))
	s.answer(w, status, "egress: upstream unavailable", newFailure(kind, target, err))
}

// control re-checks, on the socket about to connect, the address the
// dialer was given.
func (s *Session) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: dial %q", ErrInvalidHost, address)
	}
	return verdict(address, ap.Addr(), s.policy.AllowPrivate)
}

// dialTransport is the Transport's dial: the request's plan when addr is
// its target (the checked address, or the upstream proxy), else addr
// itself, which must be a literal the policy allows and is never dialed
// for a request that goes through a proxy.
func (s *Session) dialTransport(ctx context.Context, _, addr string) (net.Conn, error) {
	rt := s.currentRoute()
	if p, ok := ctx.Value(planKey{}).(*plan); ok {
		switch {
		case p.target() == addr && p.via != nil:
			return s.dialUpstream(ctx, p.rt, p.via)
		case p.target() == addr:
			return s.dialChecked(ctx, p.rt, p.addrs, p.port)
		case p.via != nil:
			return nil, fmt.Errorf("%w: dial %q for a request through proxy %s", ErrInvalidHost, addr, p.via.name)
		}
		rt = p.rt
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: dial %q", ErrInvalidHost, addr)
	}
	if err := verdict(addr, ap.Addr(), s.policy.AllowPrivate); err != nil {
		return nil, err
	}
	return s.dialChecked(ctx, rt, []netip.Addr{ap.Addr()}, ap.Port())
}

// dialChecked connects to the first of the checked addrs that accepts. The
// connection is tracked and ends with the session or its route rt.
func (s *Session) dialChecked(ctx context.Context, rt *route, addrs []netip.Addr, port uint16) (net.Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	var errs []error
	for _, a := range addrs {
		addr := netip.AddrPortFrom(a, port).String()
		start := time.Now()
		c, err := s.dialOne(ctx, addr)
		result := "ok"
		if err != nil {
			result = "error"
		}
		s.g.metrics.dials.WithLabelValues(result).Observe(time.Since(start).Seconds())
		if err == nil {
			return s.track(c, rt)
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrDial, errors.Join(errs...))
}

// dialOne makes one connection attempt, bounded by the dial timeout. addr
// must be an IP literal: nothing below resolves a name.
func (s *Session) dialOne(ctx context.Context, addr string) (net.Conn, error) {
	if _, err := netip.ParseAddrPort(addr); err != nil {
		return nil, fmt.Errorf("%w: dial %q: not an address", ErrInvalidHost, addr)
	}
	ctx, cancel := context.WithTimeout(ctx, s.g.cfg.DialTimeout)
	defer cancel()
	if s.g.dialHook != nil {
		return s.g.dialHook(ctx, "tcp", addr)
	}
	return s.dialer.DialContext(ctx, "tcp", addr)
}

// trackedConn is a connection Close ends.
type trackedConn struct {
	net.Conn
	s    *Session
	once sync.Once
}

// track registers c, or closes it if the session is closed or no longer
// on route rt.
func (s *Session) track(c net.Conn, rt *route) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil, ErrClosed
	}
	if rt != s.route {
		_ = c.Close()
		return nil, fmt.Errorf("%w: its upstream changed", ErrClosed)
	}
	tc := &trackedConn{Conn: c, s: s}
	s.conns[tc] = struct{}{}
	return tc, nil
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}

// CloseWrite half-closes TCP connections.
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
