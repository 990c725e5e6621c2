package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
)

// Upstream is an HTTP proxy of the organization that a session sends what
// it relays through, instead of dialing the sites itself.
//
// Plain http requests go to it in absolute form with Proxy-Authorization;
// CONNECT tunnels (https, WebSockets) are opened through it with a CONNECT
// of its own, then spliced. The address rule applies to the proxy itself:
// its host is resolved by the session and every address is checked as a
// site's would be (private ones only with Policy.AllowPrivate, metadata
// never). A target reached through it is not resolved by the session, the
// proxy resolves it; but a target that is an IP literal in a refused range,
// a cloud metadata name or (without AllowPrivate) a localhost name is
// refused before anything is sent, and the scheme rules and the internal
// host stay as they are.
//
// Bypass lists the hosts that go direct, through the session's own checks
// as without an upstream. An entry is one of:
//   - a host name, "intranet.example.com": that host only, read as the
//     session reads hosts (case, trailing dot and IDN do not matter);
//   - "*.example.com": every name below example.com, at any depth, but
//     not example.com itself;
//   - an IP literal, "203.0.113.7", "2001:db8::7" or "[2001:db8::7]": that
//     address, whichever way a request spells it (a name that resolves to
//     it does not match: names are not resolved to choose the route).
//
// There are no ports, CIDR ranges, ".example.com" suffixes or other
// wildcards, and "*" alone is not an entry. At most 1,000 entries. This is
// what origin/proxy accepts as bypass_hosts, and Proxy.Bypasses matches
// the same way.
//
// The credentials never appear in a log, an error or an answer; String and
// LogValue hide the password.
type Upstream struct {
	// Host is the proxy's host name or IP literal, without a port.
	Host string
	// Port is the proxy's port.
	Port int
	// Scheme is "http", or "https" for TLS to the proxy itself (not to be
	// confused with the tunnels through it); "" means "http".
	Scheme string
	// Username and Password are sent as Basic authentication on every
	// request and CONNECT; none is sent when Username is empty.
	Username, Password string
	// Bypass lists the hosts reached directly; see above.
	Bypass []string
}

// maxBypass bounds Upstream.Bypass.
const maxBypass = 1000

// Validate reports the first field of u that a session would refuse; the
// error matches ErrInvalidUpstream. It does not resolve the host: the
// address rule is applied when the session connects (Check applies it
// beforehand).
func (u Upstream) Validate() error {
	_, err := parseUpstream(u)
	return err
}

// String is the proxy as a URL, the password hidden.
func (u Upstream) String() string {
	scheme := u.Scheme
	if scheme == "" {
		scheme = "http"
	}
	user := ""
	if u.Username != "" {
		user = url.User(u.Username).String() + ":***@"
	}
	return scheme + "://" + user + authority(u.Host, u.Port)
}

// GoString hides the password from %#v as well.
func (u Upstream) GoString() string { return "egress.Upstream(" + u.String() + ")" }

// LogValue hides the password from slog.
func (u Upstream) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("proxy", authority(u.Host, u.Port)),
		slog.String("scheme", u.Scheme),
		slog.String("username", u.Username),
		slog.Int("bypass", len(u.Bypass)),
	)
}

var (
	_ fmt.Stringer   = Upstream{}
	_ fmt.GoStringer = Upstream{}
	_ slog.LogValuer = Upstream{}
)

// authority joins a host as configured and a port, IPv6 in brackets.
func authority(host string, port int) string {
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), strconv.Itoa(port))
}

// upstream is a validated Upstream.
type upstream struct {
	name     string // host:port as configured, what errors and answers show
	rawHost  string // Host as configured
	host     host
	port     uint16
	tls      bool
	dialAddr string // canonical host:port, the Transport's proxy address
	proxyURL *url.URL
	auth     string // the Proxy-Authorization value, "" without credentials
	bypass   bypassList
}

func parseUpstream(u Upstream) (*upstream, error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidUpstream, field, fmt.Sprintf(format, args...))
	}
	if u.Host == "" {
		return nil, bad("Host", "empty")
	}
	if strings.ContainsAny(u.Host, ":") && !strings.HasPrefix(u.Host, "[") {
		if _, err := netip.ParseAddr(u.Host); err != nil {
			return nil, bad("Host", "%q: a host without a port", u.Host)
		}
	}
	h, err := parseHost(u.Host)
	if err != nil {
		return nil, bad("Host", "%v", err)
	}
	if h.addr.Zone() != "" {
		return nil, bad("Host", "%q: zoned address", u.Host)
	}
	if c, _ := classify(h.addr); h.addr.IsValid() && c == metadata || metadataNames[h.name] {
		return nil, bad("Host", "%q: cloud metadata address", u.Host)
	}
	if u.Port < 1 || u.Port > 65535 {
		return nil, bad("Port", "%d: want 1 to 65535", u.Port)
	}
	up := &upstream{name: authority(u.Host, u.Port), rawHost: u.Host, host: h, port: uint16(u.Port)}
	switch u.Scheme {
	case "", "http":
	case "https":
		up.tls = true
	default:
		return nil, bad("Scheme", "%q: want http or https", u.Scheme)
	}
	if strings.IndexByte(u.Username, ':') >= 0 {
		return nil, bad("Username", "holds ':'")
	}
	if hasControl(u.Username) {
		return nil, bad("Username", "holds a control character")
	}
	if hasControl(u.Password) {
		return nil, bad("Password", "holds a control character")
	}
	if u.Username == "" && u.Password != "" {
		return nil, bad("Password", "set without Username")
	}
	if u.Username != "" {
		up.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.Username+":"+u.Password))
	}
	canon := h.name
	if h.addr.IsValid() {
		canon = h.addr.String()
	}
	up.dialAddr = net.JoinHostPort(canon, strconv.Itoa(u.Port))
	up.proxyURL = &url.URL{Scheme: "http", Host: up.dialAddr}
	if len(u.Bypass) > maxBypass {
		return nil, bad("Bypass", "%d entries, at most %d", len(u.Bypass), maxBypass)
	}
	up.bypass = bypassList{names: map[string]bool{}, suffixes: map[string]bool{}, addrs: map[netip.Addr]bool{}}
	for i, e := range u.Bypass {
		if err := up.bypass.add(e); err != nil {
			return nil, bad(fmt.Sprintf("Bypass[%d]", i), "%q: %v", e, err)
		}
	}
	return up, nil
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// bypassList holds Upstream.Bypass, parsed.
type bypassList struct {
	names    map[string]bool     // exact names
	suffixes map[string]bool     // "example.com" for "*.example.com"
	addrs    map[netip.Addr]bool // IP literals
}

func (b *bypassList) add(entry string) error {
	entry, suffix := strings.CutPrefix(entry, "*.")
	if strings.ContainsAny(entry, "*/") {
		return errors.New("only a name, an IP literal or a leading \"*.\" is supported")
	}
	if strings.IndexByte(entry, ':') >= 0 && !strings.HasPrefix(entry, "[") {
		if _, err := netip.ParseAddr(entry); err != nil {
			return errors.New("no port is supported")
		}
	} else if strings.HasPrefix(entry, "[") && !strings.HasSuffix(entry, "]") {
		return errors.New("no port is supported")
	}
	h, err := parseHost(entry)
	if err != nil {
		return err
	}
	switch {
	case h.addr.IsValid() && suffix:
		return errors.New("a wildcard takes a name, not an address")
	case h.addr.IsValid():
		b.addrs[h.addr.WithZone("")] = true
	case suffix:
		b.suffixes[h.name] = true
	default:
		b.names[h.name] = true
	}
	return nil
}

// match reports whether h goes direct.
func (b *bypassList) match(h host) bool {
	if h.addr.IsValid() {
		return b.addrs[h.addr.WithZone("")]
	}
	if b.names[h.name] {
		return true
	}
	for name := h.name; ; {
		i := strings.IndexByte(name, '.')
		if i < 0 {
			return false
		}
		name = name[i+1:]
		if b.suffixes[name] {
			return true
		}
	}
}

// route is where a session sends what it relays: direct, or through an
// upstream proxy. A new one replaces it on every SetUpstream; connections
// opened under another route are refused.
type route struct {
	up *upstream // nil: direct
}

// via returns the upstream that a request for h goes through, nil when it
// goes direct.
func (rt *route) via(h host) *upstream {
	if rt.up == nil || rt.up.bypass.match(h) {
		return nil
	}
	return rt.up
}

// checkProxied applies to a target that the proxy will resolve what can be
// judged without resolving it: IP literals, metadata and localhost names.
func (s *Session) checkProxied(raw string, h host) error {
	if h.addr.IsValid() {
		if h.addr.Zone() != "" {
			return fmt.Errorf("%w: %q: zoned address through an upstream proxy", ErrInvalidHost, raw)
		}
		return verdict(raw, h.addr, s.policy.AllowPrivate)
	}
	if metadataNames[h.name] {
		return &AddressError{Host: raw, Range: "cloud metadata name", Metadata: true}
	}
	if isLocalhost(h.name) && !s.policy.AllowPrivate {
		return &AddressError{Host: raw, Range: "loopback name"}
	}
	return nil
}

// proxiedAuthority is what the proxy is asked for: the host as the session
// read it (so that the proxy cannot read a spelling differently) and port.
func proxiedAuthority(h host, port uint16) string {
	name := h.lookup
	if h.addr.IsValid() {
		name = h.addr.String()
	}
	return net.JoinHostPort(name, strconv.Itoa(int(port)))
}

// proxyFail builds the error of a failure because of up.
func proxyFail(up *upstream, kind error, status int, reason string, cause error) *ProxyError {
	return &ProxyError{Proxy: up.name, Reason: reason, Status: status, Kind: kind, Err: cause}
}

// dialUpstream connects to the route's proxy: its host resolved and
// checked like a site's, the checked addresses dialed, TLS when asked for.
func (s *Session) dialUpstream(ctx context.Context, rt *route, up *upstream) (net.Conn, error) {
	addrs, err := s.resolve(ctx, up.rawHost, up.host)
	if err != nil {
		var ae *AddressError
		switch {
		case errors.As(err, &ae):
			reason := "proxy is at a " + ae.Range + " address, which is not allowed"
			if !ae.Addr.IsValid() {
				reason = "proxy's host is a " + ae.Range + ", which is not allowed"
			}
			return nil, proxyFail(up, ErrProxyBlocked, 0, reason, err)
		case errors.Is(err, ErrResolve):
			return nil, proxyFail(up, ErrProxyUnreachable, 0, "could not resolve the proxy's host", err)
		}
		return nil, proxyFail(up, ErrProxyUnreachable, 0, "could not reach the proxy", err)
	}
	c, err := s.dialChecked(ctx, rt, addrs, up.port)
	if err != nil {
		reason := "could not connect to the proxy"
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			reason = "proxy refused the connection"
		case isTimeout(err):
			reason = "proxy did not accept the connection in time"
		case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
			reason = "no route to the proxy"
		}
		return nil, proxyFail(up, ErrProxyUnreachable, 0, reason, err)
	}
	if !up.tls {
		return c, nil
	}
	name := up.host.name
	if up.host.addr.IsValid() {
		name = up.host.addr.String()
	}
	tc := tls.Client(c, &tls.Config{
		ServerName: name,
		RootCAs:    s.g.cfg.ProxyRootCAs,
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
	})
	hctx, cancel := context.WithTimeout(ctx, s.g.cfg.DialTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = c.Close()
		return nil, proxyFail(up, ErrProxyUnreachable, 0, "TLS handshake with the proxy failed", err)
	}
	return tc, nil
}

// connectVia opens a tunnel to target (host:port as proxiedAuthority gives
// it) through the route's proxy and returns it past the proxy's answer.
func (s *Session) connectVia(ctx context.Context, rt *route, up *upstream, target string) (net.Conn, error) {
	c, err := s.dialUpstream(ctx, rt, up)
	if err != nil {
		return nil, err
	}
	// The proxy answers once it has looked the target up and connected:
	// what the session allows itself for the same, and no longer than the
	// request.
	_ = c.SetDeadline(time.Now().Add(2 * s.g.cfg.DialTimeout))
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var b strings.Builder
	b.WriteString("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n")
	if up.auth != "" {
		b.WriteString("Proxy-Authorization: " + up.auth + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		_ = c.Close()
		return nil, s.proxyIOError(ctx, up, err)
	}
	head := &io.LimitedReader{R: c, N: maxHeaderBytes}
	br := bufio.NewReader(head)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		_ = c.Close()
		return nil, s.proxyIOError(ctx, up, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_ = c.Close()
		return nil, s.proxyStatusError(up, resp.StatusCode, true)
	}
	if !stop() {
		_ = c.Close()
		return nil, s.proxyIOError(ctx, up, ctx.Err())
	}
	_ = c.SetDeadline(time.Time{})
	if n := br.Buffered(); n > 0 {
		pending, _ := br.Peek(n)
		return &prefixConn{Conn: c, pending: append([]byte(nil), pending...)}, nil
	}
	return c, nil
}

// proxyStatusError is the error of a proxy's answer: 407 (and, to a
// CONNECT, which no site answers, 401) is about the credentials.
func (s *Session) proxyStatusError(up *upstream, status int, connect bool) *ProxyError {
	if status == http.StatusProxyAuthRequired || connect && status == http.StatusUnauthorized {
		if up.auth == "" {
			return proxyFail(up, ErrProxyAuth, status, fmt.Sprintf("proxy requires credentials (%d)", status), nil)
		}
		return proxyFail(up, ErrProxyAuth, status, fmt.Sprintf("proxy refused the credentials (%d)", status), nil)
	}
	if status == http.StatusForbidden || status == http.StatusMethodNotAllowed {
		return proxyFail(up, ErrProxyFailed, status, fmt.Sprintf("proxy refused the tunnel (%d)", status), nil)
	}
	return proxyFail(up, ErrProxyFailed, status, fmt.Sprintf("proxy could not open the tunnel (%d)", status), nil)
}

// proxyIOError is the error of a proxy connection that broke before its
// answer.
func (s *Session) proxyIOError(ctx context.Context, up *upstream, err error) *ProxyError {
	var pe *ProxyError
	if errors.As(err, &pe) {
		return pe
	}
	switch {
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return proxyFail(up, ErrProxyFailed, 0, "request canceled", err)
	case isTimeout(err):
		return proxyFail(up, ErrProxyFailed, 0, "proxy did not answer in time", err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return proxyFail(up, ErrProxyFailed, 0, "proxy closed the connection without answering", err)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return proxyFail(up, ErrProxyFailed, 0, "proxy reset the connection", err)
	}
	return proxyFail(up, ErrProxyFailed, 0, "proxy sent no valid answer", err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}

// prefixConn reads what the proxy sent past its answer first.
type prefixConn struct {
	net.Conn
	pending []byte
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// CloseWrite half-closes the connection below.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
