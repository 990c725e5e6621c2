package ogpage

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/idna"

	"github.com/pictorhq/pictor/origin/egress"
)

// Request is one source page to fetch.
type Request struct {
	// URL is the page: the configuration's base_url and the normalised
	// path. It must be an absolute http or https URL without credentials.
	URL string
	// Headers are the configuration's custom headers. They are sent only to
	// URL's origin and to HeaderOrigins, never to another origin a redirect
	// leads to. Accept-Encoding, Range and the conditional headers are the
	// fetcher's own: a value for them is not sent.
	Headers map[string]string
	// HeaderOrigins are further origins (scheme://host[:port]) that get
	// Headers.
	HeaderOrigins []string
	// ETag and LastModified, from the Page of the previous fetch, make the
	// fetch conditional: a 304 gives a Page with NotModified set.
	ETag         string
	LastModified string
	// UserAgent replaces Config.UserAgent when set.
	UserAgent string
}

// Page is a fetched source page.
type Page struct {
	// URL is where the page was found, after redirects.
	URL string
	// Status is the HTTP status of the final answer: 2xx, or 304.
	Status int
	// NotModified reports a 304 to a conditional fetch: the page is as it
	// was, Caching is the answer's and Head is empty.
	NotModified bool
	// Fetched is when the answer arrived: pass it to Fresh.
	Fetched time.Time
	// Caching holds the validators and the page's own lifetime.
	Caching
	// Truncated reports a head still open after Config.MaxBytes of body:
	// Head holds what those bytes said.
	Truncated bool
	// BytesRead is how much of the body was read, counted as MaxBytes is.
	BytesRead int64
	// Head is what the page's <head> says.
	Head
}

// Fetcher fetches source pages. It is safe for concurrent use.
type Fetcher struct {
	cfg     Config
	metrics *metrics
}

// New validates cfg and returns a Fetcher.
func New(cfg Config) (*Fetcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Fetcher{cfg: cfg, metrics: m}, nil
}

// accept is the Accept header of a fetch.
const accept = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5"

// maxResponseHeaderBytes bounds the head of an answer, as the egress
// bounds it on plain http.
const maxResponseHeaderBytes = 1 << 20

// Fetch GETs the page through an egress session of its own and reads its
// head. It follows up to Config.MaxRedirects redirects (each target checked
// by the egress as the first), reads at most Config.MaxBytes of body and
// stops reading at the end of the head, all within Config.Timeout. The
// error matches one of the package's sentinels, or context.Canceled.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (*Page, error) {
	start := time.Now()
	page, err := f.fetch(ctx, req)
	f.metrics.duration.Observe(time.Since(start).Seconds())
	f.metrics.fetches.WithLabelValues(outcome(page, err)).Inc()
	if err != nil {
		f.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "ogpage fetch failed",
			slog.String("url", req.URL), slog.Any("error", err))
	}
	return page, err
}

func (f *Fetcher) fetch(parent context.Context, req Request) (*Page, error) {
	target, err := parseTarget(req.URL)
	if err != nil {
		return nil, err
	}
	origins := map[string]bool{originOf(target): true}
	for _, o := range req.HeaderOrigins {
		norm, err := parseOrigin(o)
		if err != nil {
			return nil, err
		}
		origins[norm] = true
	}
	headers, err := customHeaders(req.Headers)
	if err != nil {
		return nil, err
	}
	for _, v := range []string{req.ETag, req.LastModified, req.UserAgent} {
		if !httpguts.ValidHeaderFieldValue(v) {
			return nil, failf(ErrInvalidRequest, nil, "validator or User-Agent %q cannot be sent", v)
		}
	}

	ctx, cancel := context.WithTimeout(parent, f.cfg.Timeout)
	defer cancel()
	// No Peer rule: the session serves this fetch's own connections
	// (sess.Dial, in transport) and no other process's.
	sess, err := f.cfg.Gateway.Open(egress.Policy{AllowPrivate: f.cfg.AllowPrivate})
	if err != nil {
		return nil, fmt.Errorf("ogpage: %w", err)
	}
	defer sess.Close()
	tr := f.transport(sess)
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport:     &hops{base: tr, sess: sess, headers: headers, origins: origins},
		CheckRedirect: f.checkRedirect,
	}

	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, failf(ErrInvalidRequest, err, "URL %q cannot be requested", req.URL)
	}
	hreq.Header.Set("User-Agent", cmp.Or(req.UserAgent, f.cfg.UserAgent))
	hreq.Header.Set("Accept", accept)
	// On the first request and, as the client copies them, on every
	// redirect: the validators are those of the page where the chain ended.
	if req.ETag != "" {
		hreq.Header.Set("If-None-Match", req.ETag)
	}
	if req.LastModified != "" {
		hreq.Header.Set("If-Modified-Since", req.LastModified)
	}
	conditional := req.ETag != "" || req.LastModified != ""

	resp, err := client.Do(hreq)
	if err != nil {
		return nil, f.classify(parent, ctx, target.Host, err)
	}
	defer resp.Body.Close()
	final := resp.Request.URL
	page := &Page{URL: final.String(), Status: resp.StatusCode, Fetched: time.Now()}
	if resp.StatusCode == http.StatusNotModified && conditional {
		page.NotModified = true
		page.Caching = parseCaching(resp.Header, page.Fetched)
		page.ETag = cmp.Or(page.ETag, req.ETag)
		page.LastModified = cmp.Or(page.LastModified, req.LastModified)
		return page, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{Status: resp.StatusCode, Host: final.Host}
	}
	page.Caching = parseCaching(resp.Header, page.Fetched)

	body := &limitedReader{r: resp.Body, n: f.cfg.MaxBytes}
	br := bufio.NewReaderSize(body, 4096)
	contentType := resp.Header.Get("Content-Type")
	if contentType == "" {
		// As a browser would: sniff a page that does not say.
		sniff, err := br.Peek(512)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, f.classify(parent, ctx, final.Host, err)
		}
		contentType = http.DetectContentType(sniff)
	}
	if mt := mediaType(contentType); mt != "text/html" && mt != "application/xhtml+xml" {
		return nil, failf(ErrNotHTML, nil, "%s sent %q", final.Host, mt)
	}
	head, ended, err := parseHead(br, contentType)
	if err != nil {
		return nil, f.classify(parent, ctx, final.Host, err)
	}
	page.Head = head
	page.Truncated = !ended && body.hit
	page.BytesRead = body.read
	return page, nil
}

// transport is the Transport of one fetch: every request goes to the
// session, http ones as absolute-form requests and https ones through
// CONNECT tunnels; it dials nothing else.
func (f *Fetcher) transport(sess *egress.Session) *http.Transport {
	proxy := &url.URL{Scheme: "http", Host: sess.Addr()}
	return &http.Transport{
		Proxy: http.ProxyURL(proxy),
		// Through the session's own Dial: the session serves no other
		// process's connections (egress.Peer).
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr != proxy.Host {
				return nil, fmt.Errorf("ogpage: dial %s: only the egress session may be dialed", addr)
			}
			return sess.Dial(ctx)
		},
		// A refused or failed CONNECT is answered by the session, marked.
		OnProxyConnectResponse: func(_ context.Context, _ *url.URL, _ *http.Request, res *http.Response) error {
			if a := answeredBy(sess, res); a != nil {
				return a
			}
			return nil
		},
		TLSClientConfig:        &tls.Config{RootCAs: f.cfg.RootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		MaxIdleConnsPerHost:    2,
	}
}

// checkRedirect bounds redirect chains and keeps them on http and https.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	from := via[len(via)-1].URL.Host
	if len(via) > f.cfg.MaxRedirects {
		return failf(ErrTooManyRedirects, nil, "%s redirected more than %d times", via[0].URL.Host, f.cfg.MaxRedirects)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return failf(ErrBlocked, egress.ErrBlockedScheme, "%s redirected to a %s: URL", from, req.URL.Scheme)
	}
	req.URL.User = nil // no credentials a redirect made up
	return nil
}

// hops is the RoundTripper of each request of a fetch, redirects included:
// it adds the custom headers where they may go and turns the session's own
// answers into errors.
type hops struct {
	base    http.RoundTripper
	sess    *egress.Session
	headers map[string]string // canonical names
	origins map[string]bool
}

var _ http.RoundTripper = (*hops)(nil)

func (h *hops) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 && h.origins[originOf(req.URL)] {
		req = req.Clone(req.Context())
		for k, v := range h.headers {
			req.Header[k] = []string{v}
		}
	}
	resp, err := h.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if a := answeredBy(h.sess, resp); a != nil {
		resp.Body.Close()
		return nil, a
	}
	return resp, nil
}

// answered is an answer the egress session made itself.
type answered struct{ f egress.Failure }

func (a *answered) Error() string {
	return fmt.Sprintf("egress answered for %s: %v", a.f.Target, a.f.Err)
}

// answeredBy returns the session's failure when resp is the session's own
// answer, nil when it is the site's (a site's copy of the header included:
// it does not know the session's marker).
func answeredBy(sess *egress.Session, resp *http.Response) *answered {
	v := resp.Header.Get(egress.AnswerHeader)
	if v == "" {
		return nil
	}
	if f, ok := sess.Answered(v); ok {
		return &answered{f}
	}
	return nil
}

// limitedReader reads at most n bytes and notes whether more were asked
// for.
type limitedReader struct {
	r    io.Reader
	n    int64
	read int64
	hit  bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		l.hit = true
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	l.read += int64(n)
	return n, err
}

// mediaType is the lower-cased type/subtype of a Content-Type, parameters
// dropped, as browsers read it.
func mediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// parseTarget checks a Request's URL.
func parseTarget(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, failf(ErrInvalidRequest, err, "URL %q is not valid", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, failf(ErrInvalidRequest, nil, "URL %q is not http or https", raw)
	case u.Opaque != "" || u.Host == "":
		return nil, failf(ErrInvalidRequest, nil, "URL %q has no host", raw)
	case u.User != nil:
		return nil, failf(ErrInvalidRequest, nil, "URL must not hold credentials")
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// parseOrigin checks an origin of HeaderOrigins and normalises it.
func parseOrigin(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", failf(ErrInvalidRequest, err, "header origin %q is not scheme://host[:port]", raw)
	}
	return originOf(u), nil
}

// originOf is u's origin as compared: scheme, host lower-cased (in ASCII
// form) and port, a default port dropped.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if a, err := idna.Lookup.ToASCII(host); err == nil {
		host = a
	}
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	if port == "" || (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return scheme + "://" + host
	}
	return scheme + "://" + host + ":" + port
}

// forbiddenHeader reports the headers of the connection and its framing,
// which no configuration may set (the image API refuses them too).
func forbiddenHeader(lower string) bool {
	switch lower {
	case "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer":
		return true
	}
	return strings.HasPrefix(lower, "proxy-")
}

// ownHeader reports the headers the fetcher sets or must not receive from
// a configuration: a custom Accept-Encoding would turn transparent
// decompression off, a Range or a validator would change the answer.
func ownHeader(lower string) bool {
	switch lower {
	case "accept-encoding", "range", "if-range", "if-none-match", "if-modified-since", "if-match", "if-unmodified-since":
		return true
	}
	return false
}

// customHeaders checks a Request's headers and returns those to send, by
// canonical name.
func customHeaders(in map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(in))
	for name, value := range in {
		name = strings.TrimSpace(name)
		value = strings.Trim(value, " \t")
		lower := strings.ToLower(name)
		switch {
		case !httpguts.ValidHeaderFieldName(name):
			return nil, failf(ErrInvalidRequest, nil, "header name %q is not valid", name)
		case !httpguts.ValidHeaderFieldValue(value):
			return nil, failf(ErrInvalidRequest, nil, "header %s has a value that cannot be sent", name)
		case forbiddenHeader(lower):
			return nil, failf(ErrInvalidRequest, nil, "header %s cannot be set", name)
		case ownHeader(lower):
			continue
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		if _, dup := out[key]; dup {
			return nil, failf(ErrInvalidRequest, nil, "header %s is given twice", key)
		}
		out[key] = value
	}
	return out, nil
}

// outcome is the label of a fetch in the fetches metric.
func outcome(p *Page, err error) string {
	switch {
	case err == nil && p.NotModified:
		return outcomeNotModified
	case err == nil:
		return outcomeOK
	case errors.Is(err, ErrBlocked):
		return outcomeBlocked
	case errors.Is(err, ErrTimeout):
		return outcomeTimeout
	case errors.Is(err, ErrUnreachable):
		return outcomeUnreachable
	case errors.Is(err, ErrTooManyRedirects):
		return outcomeRedirects
	case errors.Is(err, ErrNotHTML):
		return outcomeNotHTML
	case errors.Is(err, ErrStatus):
		return outcomeStatus
	case errors.Is(err, ErrInvalidRequest):
		return outcomeInvalid
	case errors.Is(err, context.Canceled):
		return outcomeCanceled
	}
	return outcomeInternal
}
