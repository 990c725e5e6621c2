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
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/origin/apierr"
)

// hopByHop headers belong to one connection and are never relayed.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// Forwarder relays requests to one origin.
type Forwarder struct {
	origin *url.URL
	client *http.Client
}

// New returns a Forwarder to the origin base URL.
func New(origin string) (*Forwarder, error) {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("origin URL %q: want an absolute http(s) URL", origin)
	}
	transport := &http.Transport{
		Proxy:                 nil, // never relay through an environment proxy
		DialContext:           (&net.Dialer{Timeout: time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true, // relay Accept-Encoding and encoded bodies untouched
		ResponseHeaderTimeout: 0,    // renders may take long; the origin enforces its own deadlines
	}
	return &Forwarder{
		origin: u,
		client: &http.Client{
			Transport:     transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Client is the HTTP client that reaches the origin.
func (f *Forwarder) Client() *http.Client { return f.client }

// Close releases idle connections.
func (f *Forwarder) Close() { f.client.CloseIdleConnections() }

// Forward relays ctx's request to the origin and streams the response into
// ctx. requestID is sent as X-Request-Id.
func (f *Forwarder) Forward(ctx *fasthttp.RequestCtx, requestID string) {
	up := newUpload()
	req, err := f.newRequest(ctx, requestID, up)
	if err != nil {
		WriteError(ctx, apierr.BadRequest("Malformed request"))
		return
	}
	resp, err := f.client.Do(req)
	if err != nil {
		up.finish(ctx.Conn())
		slog.Warn("origin request failed", "request_id", requestID, "error", err)
		if errors.Is(err, context.DeadlineExceeded) {
			WriteError(ctx, apierr.New(http.StatusGatewayTimeout, "The origin did not answer in time"))
			return
		}
		WriteError(ctx, apierr.New(http.StatusBadGateway, "The origin is unavailable"))
		return
	}
	if !up.complete() {
		// The origin answered before the upload ended: the rest of the body
		// is still on the connection, which therefore cannot carry another
		// request.
		ctx.SetConnectionClose()
	}
	f.writeResponse(ctx, resp, up)
}

func (f *Forwarder) newRequest(ctx *fasthttp.RequestCtx, requestID string, up *upload) (*http.Request, error) {
	target := *f.origin
	target.Path = strings.TrimRight(f.origin.Path, "/") + string(ctx.Path())
	target.RawPath = ""
	uri := ctx.URI()
	// Keep the path exactly as the client encoded it.
	if raw := string(uri.PathOriginal()); raw != "" {
		if i := strings.IndexByte(raw, '?'); i >= 0 {
			raw = raw[:i]
		}
		target.RawPath = strings.TrimRight(f.origin.Path, "/") + raw
	}
	target.RawQuery = string(uri.QueryString())

	var body io.Reader
	contentLength := int64(ctx.Request.Header.ContentLength())
	switch {
	case contentLength > 0 || contentLength == -1: // -1: chunked
		up.src = ctx.RequestBodyStream()
		if up.src == nil {
			up.src = bytes.NewReader(ctx.Request.Body())
		}
		body = up
	default:
		contentLength = 0
	}
	req, err := http.NewRequestWithContext(context.Background(), string(ctx.Method()), target.String(), body)
	if err != nil {
		return nil, err
	}
	req.ContentLength = contentLength
	for key, value := range ctx.Request.Header.All() {
		k := string(key)
		if hopByHop[http.CanonicalHeaderKey(k)] || strings.EqualFold(k, "Host") || strings.EqualFold(k, "Content-Length") ||
			strings.EqualFold(k, "Expect") { // the edge already answered 100-continue
			continue
		}
		req.Header.Add(k, string(value))
	}
	req.Header.Set("X-Request-Id", requestID)
	req.Header.Set("X-Forwarded-Host", string(ctx.Host()))
	clientIP := ctx.RemoteIP().String()
	if prior := req.Header.Get("X-Forwarded-For"); prior != "" {
		clientIP = prior + ", " + clientIP
	}
	req.Header.Set("X-Forwarded-For", clientIP)
	proto := "http"
	if ctx.IsTLS() {
		proto = "https"
	}
	req.Header.Set("X-Forwarded-Proto", proto)
	return req, nil
}

func (f *Forwarder) writeResponse(ctx *fasthttp.RequestCtx, resp *http.Response, up *upload) {
	ctx.SetStatusCode(resp.StatusCode)
	h := &ctx.Response.Header
	h.Del("Content-Type") // fasthttp's default; the origin's value, if any, follows
	for k, vs := range resp.Header {
		// X-Pictor-* headers are the origin's notes to the edge.
		if hopByHop[k] || k == "Content-Length" || k == "Date" || k == "X-Request-Id" || strings.HasPrefix(k, "X-Pictor-") {
			continue
		}
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if ctx.IsHead() || resp.StatusCode == http.StatusNotModified || resp.StatusCode == http.StatusNoContent {
		resp.Body.Close()
		up.finish(ctx.Conn())
		ctx.Response.SkipBody = true
		if resp.ContentLength >= 0 {
			h.SetContentLength(int(resp.ContentLength))
		}
		return
	}
	// fasthttp closes the stream once the body has been sent, before it
	// recycles ctx; download.Close ends the upload at that point.
	ctx.SetBodyStream(&download{body: resp.Body, up: up, conn: ctx.Conn()}, int(resp.ContentLength))
}

// WriteError answers with the standard error body.
func WriteError(ctx *fasthttp.RequestCtx, err error) {
	status, header, body := apierr.Encode(err)
	for k, vs := range header {
		for _, v := range vs {
			ctx.Response.Header.Add(k, v)
		}
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// upload relays the request body from fasthttp to the origin. fasthttp
// recycles the request once the response is written, so every read of the
// body must end before that: finish stops new reads and waits for one in
// flight, interrupting it if the client is still sending.
type upload struct {
	src io.Reader

	mu      sync.Mutex
	idle    sync.Cond
	reading bool
	closed  bool
	eof     bool
}

func newUpload() *upload {
	u := &upload{}
	u.idle.L = &u.mu
	return u
}

func (u *upload) Read(p []byte) (int, error) {
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return 0, errUploadEnded
	}
	u.reading = true
	u.mu.Unlock()

	n, err := u.src.Read(p)

	u.mu.Lock()
	u.reading = false
	if err == io.EOF {
		u.eof = true
	}
	u.idle.Broadcast()
	u.mu.Unlock()
	return n, err
}

// Close is the transport's: it has no more use for the body.
func (u *upload) Close() error {
	u.mu.Lock()
	u.closed = true
	u.mu.Unlock()
	return nil
}

// complete reports whether the whole body was read (or there was none).
func (u *upload) complete() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.src == nil || u.eof
}

// finish ends every use of the request body.
func (u *upload) finish(conn net.Conn) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closed = true
	if !u.reading {
		return
	}
	// A read is blocked on the client: wake it with an expired deadline.
	conn.SetReadDeadline(time.Now())
	for u.reading {
		u.idle.Wait()
	}
}

var errUploadEnded = errors.New("the request body was cut off after the response")

// download streams the origin's response body and ends the upload when
// fasthttp is done with it.
type download struct {
	body io.ReadCloser
	up   *upload
	conn net.Conn
}

func (d *download) Read(p []byte) (int, error) { return d.body.Read(p) }

func (d *download) Close() error {
	err := d.body.Close()
	d.up.finish(d.conn)
	return err
}
