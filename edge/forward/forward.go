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

// Close releases idle connections.
func (f *Forwarder) Close() { f.client.CloseIdleConnections() }

// Forward relays ctx's request to the origin and streams the response into
// ctx. requestID is sent as X-Request-Id.
func (f *Forwarder) Forward(ctx *fasthttp.RequestCtx, requestID string) {
	req, err := f.newRequest(ctx, requestID)
	if err != nil {
		writeError(ctx, apierr.BadRequest("Malformed request"))
		return
	}
	resp, err := f.client.Do(req)
	// The request body belongs to ctx, which fasthttp recycles; the transport
	// may still hold it after Do returns, so cut it off now.
	if g, ok := req.Body.(*guardedReader); ok {
		g.Close()
	}
	if err != nil {
		slog.Warn("origin request failed", "request_id", requestID, "error", err)
		if errors.Is(err, context.DeadlineExceeded) {
			writeError(ctx, apierr.New(http.StatusGatewayTimeout, "The origin did not answer in time"))
			return
		}
		writeError(ctx, apierr.New(http.StatusBadGateway, "The origin is unavailable"))
		return
	}
	f.writeResponse(ctx, resp)
}

func (f *Forwarder) newRequest(ctx *fasthttp.RequestCtx, requestID string) (*http.Request, error) {
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
		if stream := ctx.RequestBodyStream(); stream != nil {
			body = &guardedReader{r: stream}
		} else {
			body = &guardedReader{r: bytes.NewReader(ctx.Request.Body())}
		}
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
		if hopByHop[http.CanonicalHeaderKey(k)] || strings.EqualFold(k, "Host") || strings.EqualFold(k, "Content-Length") {
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

func (f *Forwarder) writeResponse(ctx *fasthttp.RequestCtx, resp *http.Response) {
	ctx.SetStatusCode(resp.StatusCode)
	h := &ctx.Response.Header
	h.Del("Content-Type") // fasthttp's default; the origin's value, if any, follows
	for k, vs := range resp.Header {
		if hopByHop[k] || k == "Content-Length" || k == "Date" || k == "X-Request-Id" {
			continue
		}
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	if ctx.IsHead() || resp.StatusCode == http.StatusNotModified || resp.StatusCode == http.StatusNoContent {
		resp.Body.Close()
		ctx.Response.SkipBody = true
		if resp.ContentLength >= 0 {
			h.SetContentLength(int(resp.ContentLength))
		}
		return
	}
	// fasthttp closes the body once it has been sent.
	ctx.SetBodyStream(resp.Body, int(resp.ContentLength))
}

// writeError answers with the standard error body.
func writeError(ctx *fasthttp.RequestCtx, err error) {
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

// guardedReader stops reading its source once closed, so nothing reads a
// recycled request after the handler is done with it.
type guardedReader struct {
	mu     sync.Mutex
	r      io.Reader
	closed bool
}

func (g *guardedReader) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, io.ErrClosedPipe
	}
	return g.r.Read(p)
}

// Close implements io.Closer for the transport and cuts the source off.
func (g *guardedReader) Close() error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	return nil
}
