package forward

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/edge/compress"
	"github.com/pictorhq/pictor/edge/linger"
	"github.com/pictorhq/pictor/edge/origins"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/logging"
)

// hopByHop headers belong to one connection and are never relayed.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// Config configures a Forwarder.
type Config struct {
	// Origins are the origins requests are relayed to, one healthy origin
	// per request, failing over to the next (see Forward).
	Origins *origins.Pool
	// Origin is the one origin's base URL when Origins is nil.
	Origin string
	// BodyGrace and BodyMinRate bound a request body's upload: after
	// BodyGrace from the start of the relay, the body must have arrived at
	// BodyMinRate bytes per second on average, or the client gets 408.
	BodyGrace   time.Duration
	BodyMinRate int64
	// TrustedProxies are the networks of the proxies in front of the edge
	// (load balancers) whose X-Forwarded-For names the client (Client).
	TrustedProxies []netip.Prefix
}

// DefaultConfig returns a Config without an origin and the edge's body limits.
func DefaultConfig() Config {
	return Config{BodyGrace: 10 * time.Second, BodyMinRate: 4 << 10}
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	if c.Origins == nil {
		u, err := url.Parse(c.Origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("origin URL %q: want an absolute http(s) URL", c.Origin)
		}
	}
	if c.BodyGrace < 0 {
		return fmt.Errorf("body grace %v: want 0 or more", c.BodyGrace)
	}
	if c.BodyMinRate < 1 {
		return fmt.Errorf("body minimum rate %d: want at least 1 byte per second", c.BodyMinRate)
	}
	return nil
}

// dialTimeout bounds a connection to an origin. It is wall time, and
// counts the time the dialing goroutine waits to run: an edge whose
// CPUs are busy took more than a second for loopback connections under
// a flood of OG misses. An origin that stops answering is taken out of
// the rotation by the health checks within a few seconds; one that
// refuses connections fails at once.
const dialTimeout = 5 * time.Second

// Forwarder relays requests to the origins.
type Forwarder struct {
	cfg    Config
	pool   *origins.Pool
	client *http.Client
}

// New returns a Forwarder to the origins.
func New(cfg Config) (*Forwarder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pool := cfg.Origins
	if pool == nil {
		pc := origins.DefaultConfig()
		pc.URLs = []string{cfg.Origin}
		var err error
		if pool, err = origins.New(pc); err != nil {
			return nil, err
		}
	}
	transport := &http.Transport{
		Proxy:                 nil, // never relay through an environment proxy
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true, // relay Accept-Encoding and encoded bodies untouched
		ResponseHeaderTimeout: 0,    // renders may take long; the origin enforces its own deadlines
	}
	return &Forwarder{
		cfg:  cfg,
		pool: pool,
		client: &http.Client{
			Transport:     transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Client is the HTTP client that reaches the origins.
func (f *Forwarder) Client() *http.Client { return f.client }

// Origins is the pool of origins requests are relayed to.
func (f *Forwarder) Origins() *origins.Pool { return f.pool }

// Close releases idle connections.
func (f *Forwarder) Close() { f.client.CloseIdleConnections() }

// Forward relays rc's request to an origin and streams the response into
// rc. requestID is sent as X-Request-Id. ctx bounds the relay: when it
// ends, the origin request is abandoned (the edge's shutdown). done, if
// not nil, runs once the relay is over: after the response body has been
// streamed, which may be after Forward returns.
//
// The request goes to a healthy origin (origins.Pool.Order). It is sent to
// the next one when the first got none of it (the connection failed), and,
// for GET and HEAD, also when the connection broke before the answer
// began, provided no byte of the request's body was read yet: a body is
// streamed, never buffered, so one partly sent cannot be sent again. An
// answer, whatever its status, is never sent again.
//
// A request body the client does not deliver whole (malformed chunks, a
// connection closed early, slower than the minimum rate) is answered 400 or
// 408 and the connection is closed: what follows on it cannot be told
// apart from the body.
func (f *Forwarder) Forward(ctx context.Context, rc *fasthttp.RequestCtx, requestID string, done func()) {
	up := newUpload(rc.Conn(), f.cfg.BodyGrace, f.cfg.BodyMinRate, done)
	streaming := false
	defer func() {
		if !streaming {
			up.finish()
		}
	}()
	out, err := f.newOutbound(rc, requestID, up)
	if err != nil {
		linger.CloseAfter(rc) // the body, if any, was not read
		WriteError(rc, apierr.BadRequest("Malformed request"))
		return
	}
	idempotent := rc.IsGet() || rc.IsHead()
	resp, err := f.pool.Do(logging.WithRequestID(ctx, requestID), func(o *origins.Origin) (*http.Response, error) {
		req, err := out.request(ctx, o, up)
		if err != nil {
			return nil, err
		}
		return f.client.Do(req)
	}, func(fail origins.Failure) bool {
		if up.failure() != nil {
			return false // the client's failure, not the origin's
		}
		if !origins.Unsent(fail) && !(idempotent && origins.Idempotent(fail)) {
			return false
		}
		return up.rewind()
	})
	if err != nil {
		up.finish()
	}
	if bodyErr := up.failure(); bodyErr != nil {
		if err == nil { // the origin answered first; the client's error wins
			resp.Body.Close()
		}
		linger.CloseAfter(rc)
		slog.InfoContext(rc, "request body unreadable", "request_id", requestID, "error", bodyErr.Cause)
		WriteError(rc, bodyErr)
		return
	}
	if err != nil {
		if !up.complete() {
			linger.CloseAfter(rc) // the rest of the body is still on the connection
		}
		switch {
		case ctx.Err() != nil:
			WriteError(rc, apierr.New(http.StatusServiceUnavailable, "The edge is shutting down").WithHeader("Retry-After", "1"))
		case errors.Is(err, context.DeadlineExceeded) && origins.Classify(err) != origins.ConnectFailed:
			slog.WarnContext(rc, "origin request failed", "request_id", requestID, "error", err)
			WriteError(rc, apierr.New(http.StatusGatewayTimeout, "The origin did not answer in time"))
		default:
			slog.WarnContext(rc, "origin request failed", "request_id", requestID, "error", err)
			WriteError(rc, apierr.New(http.StatusBadGateway, "The origin is unavailable"))
		}
		return
	}
	if !up.complete() {
		// The origin answered before the upload ended: the rest of the body
		// is still on the connection, which therefore cannot carry another
		// request.
		linger.CloseAfter(rc)
	}
	streaming = f.writeResponse(rc, resp, up, out)
}

// outbound is a relayed request but for its origin: each attempt makes an
// http.Request of it for the origin it goes to.
type outbound struct {
	method        string
	path, rawPath string // as the client sent them, without the origin's base path
	query         string
	header        http.Header
	contentLength int64 // -1: chunked
	hasBody       bool
	// encoding is the coding the answer gets if it is text the edge
	// compresses (compress.Identity: the client wants none, or asked for a
	// range); inm is the client's If-None-Match as it sent it.
	encoding compress.Encoding
	inm      string
}

func (f *Forwarder) newOutbound(rc *fasthttp.RequestCtx, requestID string, up *upload) (*outbound, error) {
	out := &outbound{method: string(rc.Method()), path: string(rc.Path()), header: http.Header{}}
	uri := rc.URI()
	// Keep the path exactly as the client encoded it.
	if raw := string(uri.PathOriginal()); raw != "" {
		if i := strings.IndexByte(raw, '?'); i >= 0 {
			raw = raw[:i]
		}
		out.rawPath = raw
	}
	out.query = string(uri.QueryString())

	contentLength := int64(rc.Request.Header.ContentLength())
	switch {
	case contentLength > 0 || contentLength == -1: // -1: chunked
		up.src = rc.RequestBodyStream()
		if up.src == nil {
			up.src = bytes.NewReader(rc.Request.Body())
		}
		up.length = contentLength
		out.hasBody = true
	default:
		contentLength = 0
	}
	out.contentLength = contentLength
	if len(rc.Request.Header.Peek("Range")) == 0 {
		// A range is of the identity form: answered as the origin does.
		out.encoding = compress.Negotiate(rc.Request.Header.Peek("Accept-Encoding"))
	}
	for key, value := range rc.Request.Header.All() {
		k := string(key)
		if hopByHop[http.CanonicalHeaderKey(k)] || strings.EqualFold(k, "Host") || strings.EqualFold(k, "Content-Length") ||
			strings.EqualFold(k, "Expect") { // the edge already answered 100-continue
			continue
		}
		v := string(value)
		switch {
		case strings.EqualFold(k, "If-None-Match"):
			out.inm = v
			v = stripETags(v, out.encoding) // only the variant this answer would be
		case strings.EqualFold(k, "If-Match"):
			v = stripETags(v, compress.Brotli, compress.Gzip) // the state, whatever its coding
		}
		out.header.Add(k, v)
	}
	out.header.Set(contract.HeaderRequestID, requestID)
	out.header.Set("X-Forwarded-Host", string(rc.Host()))
	peer, _ := netip.AddrFromSlice(rc.RemoteIP())
	_, chain := Client(peer, out.header.Values("X-Forwarded-For"), f.cfg.TrustedProxies)
	out.header.Set("X-Forwarded-For", chain)
	proto := "http"
	if rc.IsTLS() {
		proto = "https"
	}
	out.header.Set("X-Forwarded-Proto", proto)
	// Any origin's URL of the request parses as the first's does: only
	// their scheme, host and base path differ.
	if _, err := url.Parse(out.target(f.pool.Origins()[0])); err != nil {
		return nil, err
	}
	return out, nil
}

// target is the request's URL on origin o.
func (out *outbound) target(o *origins.Origin) string {
	target := o.Parsed()
	basePath := strings.TrimRight(target.Path, "/")
	target.Path = basePath + out.path
	target.RawPath = ""
	if out.rawPath != "" {
		target.RawPath = basePath + out.rawPath
	}
	target.RawQuery = out.query
	return target.String()
}

// request makes the attempt of the request for origin o, with the body of
// the upload's current attempt.
func (out *outbound) request(ctx context.Context, o *origins.Origin, up *upload) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, out.method, out.target(o), nil)
	if err != nil {
		return nil, err
	}
	if out.hasBody {
		req.Body = up.attempt()
	}
	req.ContentLength = out.contentLength
	// Shared by every attempt: neither net/http nor the relay changes it.
	req.Header = out.header
	return req, nil
}

// writeResponse relays resp into rc; it reports whether its body streams
// (download.Close ends the upload then).
func (f *Forwarder) writeResponse(rc *fasthttp.RequestCtx, resp *http.Response, up *upload, out *outbound) bool {
	enc := encodingOf(resp, out)
	rc.SetStatusCode(resp.StatusCode)
	h := &rc.Response.Header
	h.Del("Content-Type") // fasthttp's default; the origin's value, if any, follows
	for k, vs := range resp.Header {
		// X-Pictor-* headers are the origin's notes to the edge.
		if hopByHop[k] || k == "Content-Length" || k == "Date" || k == contract.HeaderRequestID || strings.HasPrefix(k, contract.InternalPrefix) {
			continue
		}
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	length := int(resp.ContentLength)
	if enc.vary {
		h.Add("Vary", "Accept-Encoding")
	}
	if enc.etag != "" {
		h.Set("ETag", enc.etag)
	}
	if enc.coding != compress.Identity {
		h.Set("Content-Encoding", enc.coding.String())
		length = -1 // the coded length is known once it is sent: chunked
	}
	if rc.IsHead() || resp.StatusCode == http.StatusNotModified || resp.StatusCode == http.StatusNoContent {
		resp.Body.Close()
		rc.Response.SkipBody = true
		if length >= 0 {
			h.SetContentLength(length)
		}
		return false
	}
	body := resp.Body
	if enc.coding != compress.Identity {
		body = compress.NewReader(body, enc.coding)
	}
	// fasthttp closes the stream once the body has been sent, before it
	// recycles rc; download.Close ends the upload at that point.
	rc.SetBodyStream(&download{body: body, up: up}, length)
	return true
}

// answerCoding is how a relayed answer is coded: coding (Identity: as the
// origin sent it), whether it carries Vary: Accept-Encoding, and the ETag
// replacing the origin's, if any.
type answerCoding struct {
	coding compress.Encoding
	vary   bool
	etag   string
}

// encodingOf decides how resp is relayed. Text (compress.Compressible)
// that the origin did not code itself and does not mark no-transform
// varies by Accept-Encoding; it is compressed in the coding the client
// prefers unless it is a part (206, or the request had a Range), or
// declares fewer than compress.MinSize bytes. A body of unknown length
// (streamed by the origin) is compressed. The ETag of a compressed answer
// names its coding; a 304 gives back the tag the client sent (see
// stripETags), so that it revalidates the variant it holds.
func encodingOf(resp *http.Response, out *outbound) answerCoding {
	if resp.Header.Get("Content-Encoding") != "" || resp.StatusCode == http.StatusPartialContent ||
		resp.Header.Get("Content-Range") != "" || strings.Contains(strings.ToLower(strings.Join(resp.Header.Values("Cache-Control"), ",")), "no-transform") {
		return answerCoding{}
	}
	etag := resp.Header.Get("ETag")
	if resp.StatusCode == http.StatusNotModified {
		// The 304 of an answer that was compressed: the tag the client
		// sent tells which variant it holds.
		if e := out.encoding; e != compress.Identity && etag != "" && etagListed(out.inm, compress.ETag(etag, e)) {
			return answerCoding{vary: !varies(resp.Header), etag: compress.ETag(etag, e)}
		}
		return answerCoding{}
	}
	if !compress.Compressible([]byte(resp.Header.Get("Content-Type"))) {
		return answerCoding{}
	}
	a := answerCoding{vary: !varies(resp.Header)}
	if out.encoding == compress.Identity || (resp.ContentLength >= 0 && resp.ContentLength < compress.MinSize) ||
		resp.StatusCode < 200 || resp.StatusCode == http.StatusNoContent {
		return a
	}
	a.coding = out.encoding
	if etag != "" {
		a.etag = compress.ETag(etag, a.coding)
	}
	return a
}

// varies reports whether the origin's Vary already names Accept-Encoding
// (or is "*"): the edge adds it otherwise.
func varies(h http.Header) bool {
	for _, v := range h.Values("Vary") {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f == "*" || strings.EqualFold(f, "Accept-Encoding") {
				return true
			}
		}
	}
	return false
}

// stripETags turns the tags of variants coded with one of codings in an
// If-None-Match or If-Match list back into the origin's ("abc-br" into
// "abc"): the origin knows only its own. If-None-Match is stripped of the
// coding the answer would have only, so a client holding another variant
// gets a 200 rather than a 304 for a variant it did not ask for; the tag
// answered with a 304 is put back by encodingOf.
func stripETags(list string, codings ...compress.Encoding) string {
	if !strings.Contains(list, "-") {
		return list
	}
	tags := strings.Split(list, ",")
	for i, tag := range tags {
		tag = strings.TrimSpace(tag)
		for _, e := range codings {
			if t, ok := compress.StripETag(tag, e); ok {
				tag = t
				break
			}
		}
		tags[i] = tag
	}
	return strings.Join(tags, ", ")
}

// etagListed reports whether tag is in an If-None-Match list (weakly).
func etagListed(list, tag string) bool {
	tag = strings.TrimPrefix(tag, "W/")
	for t := range strings.SplitSeq(list, ",") {
		if strings.TrimPrefix(strings.TrimSpace(t), "W/") == tag {
			return true
		}
	}
	return false
}

// WriteError answers with the standard error body.
func WriteError(rc *fasthttp.RequestCtx, err error) {
	status, header, body := apierr.Encode(err)
	for k, vs := range header {
		for _, v := range vs {
			rc.Response.Header.Add(k, v)
		}
	}
	rc.SetStatusCode(status)
	rc.SetContentType("application/json")
	rc.SetBody(body)
}

// upload relays the request body from fasthttp to the origin. fasthttp
// recycles the request once the response is written, so every read of the
// body must end before that: finish stops new reads and waits for one in
// flight, interrupting it if the client is still sending.
//
// It also holds the client to the minimum rate, counting only the time
// spent waiting for the client (not the time the origin took to take what
// was read): before each read it sets the connection's read deadline to
// what is left of grace + read/rate, and it records a read that failed on
// the client's side (a malformed chunk, a connection closed early, that
// deadline) for Forward to answer.
//
// Each attempt at an origin reads it through its own attemptBody; only
// the current attempt may read. While no read began, rewind gives the body
// to a new attempt: one whose connection failed never read any of it.
type upload struct {
	src    io.Reader
	length int64 // the declared Content-Length, -1 for chunked
	conn   net.Conn
	grace  time.Duration
	rate   int64

	mu       sync.Mutex
	idle     sync.Cond
	reading  bool
	closed   bool
	eof      bool
	started  bool          // a read began: the body cannot be sent again
	current  uint64        // the attempt that may read
	ended    bool          // the current attempt closed its body
	read     int64         // bytes read
	waited   time.Duration // time spent in reads
	deadline time.Time
	err      *apierr.Error // the client's failure, if any
	done     func()        // run by the first finish
}

func newUpload(conn net.Conn, grace time.Duration, rate int64, done func()) *upload {
	u := &upload{conn: conn, grace: grace, rate: rate, done: done}
	u.idle.L = &u.mu
	return u
}

// attempt returns the body of the current attempt.
func (u *upload) attempt() *attemptBody {
	u.mu.Lock()
	defer u.mu.Unlock()
	return &attemptBody{u: u, id: u.current}
}

// rewind ends the current attempt's use of the body and reports whether a
// new attempt may send it: none of it was read, and the client did not fail.
func (u *upload) rewind() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.started || u.closed || u.err != nil {
		return false
	}
	u.current++
	u.ended = false
	return true
}

// attemptBody is the request body of one attempt.
type attemptBody struct {
	u  *upload
	id uint64
}

func (b *attemptBody) Read(p []byte) (int, error) { return b.u.readAttempt(b.id, p) }

// Close is the transport's: this attempt has no more use for the body.
// Once a read began the body is spent, and no read may follow.
func (b *attemptBody) Close() error {
	u := b.u
	u.mu.Lock()
	defer u.mu.Unlock()
	if b.id == u.current {
		u.ended = true
		if u.started {
			u.closed = true
		}
	}
	return nil
}

func (u *upload) readAttempt(id uint64, p []byte) (int, error) {
	u.mu.Lock()
	if u.closed || id != u.current || u.ended {
		u.mu.Unlock()
		return 0, errUploadEnded
	}
	if u.err != nil {
		u.mu.Unlock()
		return 0, u.err
	}
	u.started = true
	u.reading = true
	began := time.Now()
	allowed := u.grace + time.Duration(float64(u.read)/float64(u.rate)*float64(time.Second))
	u.deadline = began.Add(allowed - u.waited)
	if u.conn != nil {
		// Set under the lock: finish's expired deadline must win over this one.
		u.conn.SetReadDeadline(u.deadline)
	}
	u.mu.Unlock()

	n, err := u.src.Read(p)

	u.mu.Lock()
	defer u.mu.Unlock()
	u.reading = false
	u.idle.Broadcast()
	u.read += int64(n)
	u.waited += time.Since(began)
	if err == io.EOF && u.length >= 0 && u.read < u.length {
		err = io.ErrUnexpectedEOF // fasthttp reports a short body as its end
	}
	switch {
	case err == io.EOF:
		u.eof = true
	case err != nil && !u.closed: // not finish's interruption
		u.err = clientBodyError(err, !time.Now().Before(u.deadline), u.conn)
		return n, u.err
	}
	return n, err
}

// framingChecker is a connection that checks its requests' framing on the
// raw bytes (the edge's): FramingError says why it refused a byte, if it
// did. fasthttp's chunk reader hides the read error it got in its own.
type framingChecker interface{ FramingError() error }

// clientBodyError is the answer to a body that could not be read: 400
// naming the problem when conn refused its framing, 408 when it was too
// slow, 400 when it was malformed or cut off.
func clientBodyError(err error, pastDeadline bool, conn net.Conn) *apierr.Error {
	if fc, ok := conn.(framingChecker); ok {
		if reason := fc.FramingError(); reason != nil {
			e := apierr.BadRequest("Malformed HTTP request: %v", reason)
			e.Cause = err
			return e
		}
	}
	var ne net.Error
	if pastDeadline || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		e := apierr.New(http.StatusRequestTimeout, "The request body was not received in time")
		e.Cause = err
		return e
	}
	e := apierr.BadRequest("The request body is malformed or incomplete")
	e.Cause = err
	return e
}

// complete reports whether the whole body was read (or there was none).
func (u *upload) complete() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.src == nil || u.eof
}

// failure returns the client's failure to deliver the body, if any.
func (u *upload) failure() *apierr.Error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// finish ends every use of the request body, and the relay.
func (u *upload) finish() {
	u.mu.Lock()
	u.closed = true
	if u.reading && u.conn != nil {
		// A read is blocked on the client: wake it with an expired deadline.
		u.conn.SetReadDeadline(time.Now())
		for u.reading {
			u.idle.Wait()
		}
	}
	done := u.done
	u.done = nil
	u.mu.Unlock()
	if done != nil {
		done()
	}
}

var errUploadEnded = errors.New("the request body was cut off after the response")

// download streams the origin's response body and ends the upload when
// fasthttp is done with it.
type download struct {
	body io.ReadCloser
	up   *upload
}

func (d *download) Read(p []byte) (int, error) { return d.body.Read(p) }

func (d *download) Close() error {
	err := d.body.Close()
	d.up.finish()
	return err
}
