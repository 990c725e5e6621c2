package edge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/edge/cache"
	"github.com/pictorhq/pictor/edge/forward"
	"github.com/pictorhq/pictor/edge/origins"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/contract/logging"
	"github.com/pictorhq/pictor/origin/contract/ogplatform"
)

// Automatic Open Graph images: GET /v1/og/{domain_id}/{path...}.
//
// The edge keys an OG image on its domain id, the crawler's platform (from
// the User-Agent, never the raw header) and the page path in its one
// spelling (ogplatform.NormalizePath), "o|{domain}|{platform}|{path}"; the
// client's query string plays no part. Every OG answer (hits, fills, 304s,
// HEADs and errors) carries Vary: User-Agent, since what it holds depends
// on the platform: a shared cache in front that keys on the URL alone
// would give one crawler's size to all (it may key on the platform
// instead, see docs/decisions.md). Unlike an image, an OG image
// changes with its page: each entry keeps the freshness the origin gave it
// (Cache-Control max-age) and, past it, is served stale at once while one
// background request per key revalidates it with If-None-Match. A miss is
// filled once however many requests wait for it. In fit mode the origin
// makes one image for every platform and the edge fits it into each
// platform's size itself.

var (
	ogPrefix  = []byte(contract.OGPrefix)
	keyOG     = []byte("o|")
	valPublic = []byte("public, max-age=")
	valSWR    = []byte(", stale-while-revalidate=")
	valNoOG   = []byte("no-store")
	hdrVary   = []byte("Vary")
	valVaryUA = []byte("User-Agent")
)

// The names of the headers of an OG hit in fasthttp's normal spelling
// (textproto's: "Etag"), which SetCanonical writes as they are: SetBytesKV
// would copy and normalise the name again on every hit.
var (
	canonVary    = canonicalKey(hdrVary)
	canonETag    = canonicalKey(hdrETag)
	canonCache   = canonicalKey(hdrCache)
	canonLastMod = canonicalKey(hdrLastMod)
	canonNoSniff = canonicalKey(hdrNoSniff)
	canonIfNone  = canonicalKey(hdrIfNone)
)

// canonicalKey returns a header name as fasthttp normalises it.
func canonicalKey(name []byte) []byte { return []byte(textproto.CanonicalMIMEHeaderKey(string(name))) }

// Bounds of OG work.
const (
	// maxDomainID bounds a domain id in a path; longer ones are not looked up.
	maxDomainID = 64
	// ogFetchTimeout bounds one request to the origin for an OG image (a
	// fill or a revalidation, a render of the page included) and its fit.
	ogFetchTimeout = time.Minute
	// ogMaxBody bounds the image the origin answers; larger ones fail.
	ogMaxBody = 32 << 20
	// ogMaxAge caps the freshness and stale-while-revalidate the edge
	// takes from the origin: a configuration's refresh interval is at most
	// a year.
	ogMaxAge = 366 * 24 * time.Hour
	// ogRevalidations bounds the revalidations running at once; a stale
	// hit past it is served and revalidated by a later one.
	ogRevalidations = 16
	// A key whose revalidation failed waits ogBackoffMin before the next
	// one, twice as long after each further failure, at most ogBackoffMax.
	ogBackoffMin = 10 * time.Second
	ogBackoffMax = 5 * time.Minute
	// ogBackoffKeys bounds the keys whose failures are remembered.
	ogBackoffKeys = 10_000
)

// Outcomes of a revalidation, as counted.
const (
	ogNotModified = "not_modified" // 304: the entry is fresh again
	ogModified    = "modified"     // 200: a new image replaced it
	ogGone        = "gone"         // 404 or 410: the entry was dropped
	ogFailed      = "failed"       // the origin failed; the entry is served stale and retried after a back-off
)

// ogState is the edge's OG machinery: its clock, its background
// revalidations and their back-offs, and its metrics.
type ogState struct {
	now func() time.Time
	// clocked is set when now is the configuration's clock (tests'),
	// which a hit reads instead of its request's time.
	clocked   bool
	platforms platformMemo

	hits                         *prometheus.CounterVec
	hitsFresh, hitsStale, misses prometheus.Counter
	revalidations                *prometheus.CounterVec
	skipped                      *prometheus.CounterVec
	skippedBusy, skippedBackoff  prometheus.Counter

	mu      sync.Mutex
	stopped bool                 // Stop began: no revalidation starts
	running map[string]struct{}  // keys being revalidated
	backoff map[string]ogBackoff // keys whose last revalidation failed
	wg      sync.WaitGroup       // running revalidations
}

// ogBackoff is when a key may be revalidated again, and the wait that
// gave that time (doubled by the next failure).
type ogBackoff struct {
	until time.Time
	delay time.Duration
}

func newOGState(now func() time.Time) *ogState {
	clocked := now != nil
	if !clocked {
		now = time.Now
	}
	hits := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pictor_edge_og_hits_total",
		Help: "OG image requests answered from the cache: fresh, or stale (and revalidated in the background)."}, []string{"state"})
	skipped := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pictor_edge_og_revalidations_skipped_total",
		Help: "Stale OG hits that started no revalidation: all slots busy (busy), or the key backing off after a failure (backoff)."},
		[]string{"reason"})
	revalidations := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pictor_edge_og_revalidations_total",
		Help: "Background revalidations of stale OG images, by outcome: not_modified, modified, gone, failed."}, []string{"outcome"})
	for _, outcome := range []string{ogNotModified, ogModified, ogGone, ogFailed} {
		revalidations.WithLabelValues(outcome) // exported at 0 before the first
	}
	return &ogState{
		now:       now,
		clocked:   clocked,
		platforms: platformMemo{seed: maphash.MakeSeed()},
		hits:      hits,
		hitsFresh: hits.WithLabelValues("fresh"),
		hitsStale: hits.WithLabelValues("stale"),
		misses: prometheus.NewCounter(prometheus.CounterOpts{Name: "pictor_edge_og_misses_total",
			Help: "OG image requests that waited for the origin."}),
		revalidations:  revalidations,
		skipped:        skipped,
		skippedBusy:    skipped.WithLabelValues("busy"),
		skippedBackoff: skipped.WithLabelValues("backoff"),
		running:        map[string]struct{}{},
		backoff:        map[string]ogBackoff{},
	}
}

// platformMemoSlots is how many User-Agents a platformMemo remembers at
// most (a power of two); longer User-Agents than platformMemoMaxUA are
// read each time, so that a flood of long distinct ones makes no garbage.
const (
	platformMemoSlots = 256
	platformMemoMaxUA = 512
)

// platformMemo remembers the platform of the User-Agents seen last, one
// per slot their hash picks: a crawler sends the same User-Agent on every
// request, and ogplatform.FromUserAgent reads it whole against every rule
// (300 ns for a browser's). A lookup takes no lock: a slot holds an
// immutable pair that a User-Agent seen for the first time replaces, the
// one allocation of an OG hit, made only for a User-Agent not remembered.
type platformMemo struct {
	seed  maphash.Seed
	slots [platformMemoSlots]atomic.Pointer[uaPlatform]
}

// uaPlatform is a User-Agent and its platform.
type uaPlatform struct {
	ua       string
	platform ogplatform.Platform
}

// of returns ogplatform.FromUserAgent(ua), remembered.
func (m *platformMemo) of(ua []byte) ogplatform.Platform {
	if len(ua) > platformMemoMaxUA {
		return ogplatform.FromUserAgent(ua)
	}
	slot := &m.slots[maphash.Bytes(m.seed, ua)&(platformMemoSlots-1)]
	if p := slot.Load(); p != nil && p.ua == string(ua) {
		return p.platform
	}
	p := ogplatform.FromUserAgent(ua)
	slot.Store(&uaPlatform{ua: string(ua), platform: p})
	return p
}

// collectors returns the OG metrics.
func (o *ogState) collectors() []prometheus.Collector {
	running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "pictor_edge_og_revalidations_running",
		Help: "Background revalidations of OG images in progress."}, func() float64 { return float64(o.busy()) })
	return []prometheus.Collector{o.hits, o.misses, o.revalidations, o.skipped, running}
}

// hitTime is the time a hit is served at: its request's, which fasthttp
// read when the request arrived (ctx.Time), unless the configuration
// gives a clock or ctx has no time (a handler called outside a server).
func (o *ogState) hitTime(ctx *fasthttp.RequestCtx) time.Time {
	if !o.clocked {
		if t := ctx.Time(); !t.IsZero() {
			return t
		}
	}
	return o.now()
}

// busy returns the number of revalidations running.
func (o *ogState) busy() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.running)
}

// serveOG answers GET/HEAD of an OG image; rawPath is the request's path
// as sent (URI.PathOriginal).
func (e *Edge) serveOG(ctx *fasthttp.RequestCtx, requestID, rawPath []byte) {
	ctx.Response.Header.SetCanonical(canonVary, valVaryUA)
	domain, page, err := ogTarget(rawPath)
	if err != nil {
		forward.WriteError(ctx, err)
		return
	}
	platform := e.og.platforms.of(ctx.Request.Header.UserAgent())
	kb := keyPool.Get().(*keyBuf)
	defer keyPool.Put(kb)
	kb.b = appendOGKey(kb.b[:0], domain, platform)
	if ogplatform.IsNormalPath(page) {
		kb.b = append(kb.b, page...)
	} else {
		norm, err := ogplatform.NormalizePath(string(page))
		if err != nil {
			forward.WriteError(ctx, badPagePath())
			return
		}
		kb.b = append(kb.b, norm...)
	}
	// A key too long for the cache (a path near 2 KiB, escaped) is served
	// as an edge without a purge channel serves every OG image.
	caching := e.caching() && len(kb.b) <= cache.MaxKeyLen
	if caching {
		if ent, body, _, hit := e.lookupToSend(kb.b); hit {
			now := e.og.hitTime(ctx)
			if now.Before(ent.FreshUntil) {
				e.og.hitsFresh.Inc()
			} else {
				e.og.hitsStale.Inc()
				e.revalidateOG(kb.b, len(domain), platform, requestID, now)
			}
			e.writeOG(ctx, ent, body, now)
			return
		}
	}
	e.og.misses.Inc()
	token := e.inflight.begin(string(requestID), string(ctx.Method()), string(ctx.Path()))
	ent, err := e.fillOG(newOGKey(kb.b, len(domain), platform), caching, string(requestID), e.client(ctx))
	e.inflight.end(token)
	if err != nil {
		e.answerOGFailure(ctx, err)
		return
	}
	e.writeOG(ctx, ent, nil, e.og.now())
}

// ogTarget splits the path of an OG request, as sent, into its domain id
// and page path. A path whose prefix is spelled another way ("/v1//og/",
// "/v1/%6Fg/") is read in its normal spelling.
func ogTarget(raw []byte) (domain, page []byte, err error) {
	rest, ok := bytes.CutPrefix(raw, ogPrefix)
	if !ok {
		norm, err := ogplatform.NormalizePath(string(raw))
		if err != nil {
			return nil, nil, badPagePath()
		}
		if rest, ok = bytes.CutPrefix([]byte(norm), ogPrefix); !ok {
			return nil, nil, ogNotFound()
		}
	}
	domain = rest
	if i := bytes.IndexByte(rest, '/'); i >= 0 {
		domain, page = rest[:i], rest[i:]
	}
	if !validDomainID(domain) {
		return nil, nil, ogNotFound()
	}
	return domain, page, nil
}

// validDomainID accepts 1 to 64 characters of URL-safe base64 (which
// covers hex and the origin's lower-case base32); the origin knows which
// exist.
func validDomainID(id []byte) bool {
	if len(id) == 0 || len(id) > maxDomainID {
		return false
	}
	for _, c := range id {
		if !domainIDByte[c] {
			return false
		}
	}
	return true
}

// domainIDByte holds the bytes of URL-safe base64.
var domainIDByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	return t
}()

func ogNotFound() *apierr.Error {
	return apierr.NotFound("OG image not found: no enabled OG configuration has this domain id")
}

func badPagePath() *apierr.Error {
	return apierr.Field("path", "is not a valid page path: escapes must be %%XX, no control characters, at most 2 KiB")
}

// writeOG answers with an OG entry: its freshness left as max-age (0 once
// stale) and the origin's stale-while-revalidate, 304 for a matching
// If-None-Match. Like write, it allocates nothing for an entry from the
// cache.
func (e *Edge) writeOG(ctx *fasthttp.RequestCtx, ent *cache.Entry, body *cache.Body, now time.Time) {
	h := &ctx.Response.Header
	etag, ct, lm := ent.ETagBytes(), ent.ContentTypeBytes(), ent.LastModifiedBytes()
	if etag == nil { // an entry fresh from the origin, not (yet) from the cache
		etag, ct = []byte(ent.ETag), []byte(ent.ContentType)
		if !ent.LastModified.IsZero() {
			lm = []byte(ent.LastModified.UTC().Format(http.TimeFormat))
		}
	}
	h.SetCanonical(canonETag, etag)
	var cc [80]byte
	h.SetCanonical(canonCache, ogCacheControl(cc[:0], ent, now))
	if lm != nil {
		h.SetCanonical(canonLastMod, lm)
	}
	if inm := ctx.Request.Header.PeekCanonical(canonIfNone); len(inm) > 0 && etagMatch(inm, etag) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		if body != nil {
			body.Close()
		}
		return
	}
	h.SetContentTypeBytes(ct)
	h.SetCanonical(canonNoSniff, valNoSniff)
	e.metrics.bytes.Add(float64(ent.Len()))
	setBody(ctx, body, ent.Body)
}

// ogCacheControl appends the Cache-Control of ent at now to dst: "public,
// max-age=<seconds of freshness left>[, stale-while-revalidate=<S>]", or
// no-store for an answer the origin asked nobody to keep.
func ogCacheControl(dst []byte, ent *cache.Entry, now time.Time) []byte {
	if ent.FreshUntil.IsZero() {
		return append(dst, valNoOG...)
	}
	left := max(ent.FreshUntil.Sub(now)/time.Second, 0)
	dst = strconv.AppendInt(append(dst, valPublic...), int64(left), 10)
	if s := ent.StaleWhileRevalidate / time.Second; s > 0 {
		dst = strconv.AppendInt(append(dst, valSWR...), int64(s), 10)
	}
	return dst
}

// answerOGFailure answers a fill that failed: the origin's error as it is,
// or a standard body.
func (e *Edge) answerOGFailure(ctx *fasthttp.RequestCtx, err error) {
	switch {
	case errors.Is(err, context.Canceled) && e.base.Err() != nil:
		forward.WriteError(ctx, apierr.New(http.StatusServiceUnavailable, "The edge is shutting down").WithHeader("Retry-After", "1"))
	case errors.Is(err, context.DeadlineExceeded) && origins.Classify(err) != origins.ConnectFailed:
		slog.WarnContext(ctx, "edge OG fill timed out", "error", err)
		forward.WriteError(ctx, apierr.New(http.StatusGatewayTimeout, "The origin did not answer in time"))
	case errors.Is(err, errTooBig):
		forward.WriteError(ctx, apierr.New(http.StatusBadGateway, "The origin's OG image is larger than %d MiB", ogMaxBody>>20))
	default:
		e.answerFailure(ctx, err)
	}
}

// ogKey is an OG cache key, "o|{domain}|{platform}|{path}", with its
// parts as the request gave them: a fill or a revalidation asks the origin
// for them without reading the key back. Neither a domain id nor a
// platform name holds '|', and a normalised path escapes it.
type ogKey struct {
	key      string
	domain   string // within key
	platform ogplatform.Platform
	path     string // within key
}

// appendOGKey appends the start of an OG cache key to dst,
// "o|{domain}|{platform}|": the page path follows.
func appendOGKey(dst, domain []byte, platform ogplatform.Platform) []byte {
	return append(append(append(append(append(dst, keyOG...), domain...), '|'), platform.Name...), '|')
}

// newOGKey returns the key b holds (appendOGKey's, then the path), its
// domain id domainLen bytes long: one string, the parts within it.
func newOGKey(b []byte, domainLen int, platform ogplatform.Platform) ogKey {
	key := string(b)
	start := len(keyOG)
	return ogKey{key: key, domain: key[start : start+domainLen], platform: platform,
		path: key[start+domainLen+1+len(platform.Name)+1:]}
}

// fillOG makes a missing entry once, however many requests wait for it,
// and caches it as of before it began (a purge meanwhile wins). A miss
// that raced with a fill finishing just before its own began finds that
// fill's entry. Uncached (no purge channel, a key too long), it still
// shares the one request to the origin among those waiting at once.
// client is the address of the client whose miss started it: the origin
// limits new pages per client address (X-Forwarded-For).
func (e *Edge) fillOG(k ogKey, caching bool, rid, client string) (*cache.Entry, error) {
	key := k.key
	v, err, _ := e.flights.Do(key, func() (any, error) {
		if caching {
			if ent, ok := e.cache.Recheck([]byte(key)); ok {
				return ent, nil
			}
		}
		epoch := e.cache.Epoch()
		ans, err := e.fetchOG(k, rid, "", client)
		if err != nil {
			return nil, err
		}
		if ans.ent == nil {
			return nil, errors.New("the origin answered 304 to an unconditional request")
		}
		if caching && ans.cacheable {
			e.putOG(epoch, key, ans.ent)
		}
		return ans.ent, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*cache.Entry), nil
}

func (e *Edge) putOG(epoch cache.Epoch, key string, ent *cache.Entry) {
	if err := e.cache.PutSince(epoch, []byte(key), ent); err != nil && !errors.Is(err, cache.ErrPurged) &&
		!errors.Is(err, cache.ErrTooLarge) && !errors.Is(err, cache.ErrClosed) {
		slog.Warn("edge cache put failed", "key", key, "error", err)
	}
}

// ogAnswer is the origin's answer to an OG request: a new entry (200), or
// the freshness of the one the edge holds (304, ent nil).
type ogAnswer struct {
	ent       *cache.Entry
	fresh     freshness
	cacheable bool // the entry can be cached and purged
}

// fetchOG asks an origin for k's image; with validator, conditionally;
// a GET that got no answer goes to the next origin (origins.Idempotent).
// client, the address of the client the request is for, goes as
// X-Forwarded-For; a background revalidation has none and sends none.
// Any answer but 200 and 304 is an *upstreamError.
func (e *Edge) fetchOG(k ogKey, rid, validator, client string) (ogAnswer, error) {
	e.metrics.fetches.Inc()
	ctx, cancel := context.WithTimeout(e.base, ogFetchTimeout)
	defer cancel()
	resp, err := e.origins.Do(logging.WithRequestID(ctx, rid), func(o *origins.Origin) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.URL()+contract.OGPrefix+k.domain+k.path, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set(contract.HeaderRequestID, rid)
		req.Header.Set(contract.HeaderOGPlatform, k.platform.Name)
		if validator != "" {
			req.Header.Set("If-None-Match", validator)
		}
		if client != "" {
			req.Header.Set(contract.HeaderForwardedFor, client)
		}
		return e.fwd.Client().Do(req)
	}, origins.Idempotent)
	if err != nil {
		return ogAnswer{}, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return ogAnswer{fresh: parseFreshness(resp.Header.Get("Cache-Control"))}, nil
	case http.StatusOK:
	default:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return ogAnswer{}, &upstreamError{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body, header: resp.Header}
	}
	body, err := readBody(resp, ogMaxBody)
	if err != nil {
		return ogAnswer{}, err
	}
	fresh := parseFreshness(resp.Header.Get("Cache-Control"))
	etag := resp.Header.Get("ETag")
	ent := &cache.Entry{Body: body, ContentType: resp.Header.Get("Content-Type"), ETag: etag,
		OrgID: resp.Header.Get(contract.HeaderOrg), Tag: resp.Header.Get(contract.HeaderTag)}
	if ent.ContentType == "" {
		ent.ContentType = "image/png"
	}
	if lm, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		ent.LastModified = lm
	}
	// Without a strong entity tag the image can be neither revalidated nor
	// told apart from the next: it gets one of its bytes, and is not kept.
	strong := len(etag) >= 2 && etag[0] == '"' && etag[len(etag)-1] == '"'
	if !strong {
		etag = etagOf(body)
	}
	switch mode := resp.Header.Get(contract.HeaderOGMode); mode {
	case contract.OGAsIs, "":
		ent.ETag = etag
	case contract.OGFit:
		w, h := fitSize(k.platform, resp.Header.Get(contract.HeaderOGScale))
		if ent.Body, ent.ContentType, err = e.fitOG(ctx, body, ent.ContentType, w, h); err != nil {
			return ogAnswer{}, err
		}
		ent.ETag = fittedETag(etag, k.platform.Name)
		if strong {
			ent.Validator = etag
		}
	default:
		return ogAnswer{}, fmt.Errorf("the origin answered %s %q, want %q or %q", contract.HeaderOGMode, mode, contract.OGAsIs, contract.OGFit)
	}
	if !fresh.noStore {
		ent.FreshUntil = e.og.now().Add(fresh.maxAge)
		ent.StaleWhileRevalidate = fresh.swr
	}
	return ogAnswer{ent: ent, fresh: fresh, cacheable: strong && !fresh.noStore && ent.OrgID != "" && ent.Tag != ""}, nil
}

// fittedETag is the entity tag of the origin's image fitted to a
// platform's size: the same image fitted to another platform differs.
func fittedETag(originETag, platform string) string {
	h := sha256.New()
	h.Write([]byte(originETag))
	h.Write([]byte{0})
	h.Write([]byte(platform))
	return `"` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`
}

// fitSize is the size a platform's image is fitted to: the platform's,
// times the device scale the origin rendered at (HeaderOGScale, so that the
// image keeps its density). A scale that is not a positive number, or that
// would pass imaging.MaxSize, is taken as 1.
func fitSize(p ogplatform.Platform, scale string) (w, h int) {
	if scale == "" {
		return p.Width, p.Height
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(scale), 64)
	w, h = int(math.Round(float64(p.Width)*f)), int(math.Round(float64(p.Height)*f))
	if err != nil || !(f > 0) || math.IsInf(f, 0) || w < 1 || h < 1 || w > imaging.MaxSize || h > imaging.MaxSize {
		slog.Warn("edge OG fit: ignoring the origin's scale", "scale", scale)
		return p.Width, p.Height
	}
	return w, h
}

// fitOG fits the origin's one image into w×h: scaled to cover it and
// cropped evenly around the centre (transform's width and height both
// set), never stretched nor letterboxed. A PNG of that size already is
// kept as it is.
func (e *Edge) fitOG(ctx context.Context, body []byte, contentType string, w, h int) ([]byte, string, error) {
	format := imaging.PNG
	mt, _, _ := strings.Cut(contentType, ";")
	switch strings.ToLower(strings.TrimSpace(mt)) {
	case "image/jpeg":
		format = imaging.JPEG
	case "image/webp":
		format = imaging.WebP
	}
	if sw, sh, ok := pngSize(body); ok && format == imaging.PNG && sw == w && sh == h {
		return body, format.ContentType(), nil
	}
	start := time.Now()
	out, err := e.transform(ctx, func() ([]byte, error) {
		return imaging.Apply(ctx, body, imaging.Options{Width: w, Height: h}, format)
	})
	e.metrics.transform.Observe(time.Since(start).Seconds())
	if errors.Is(err, errTransformsBusy) {
		return nil, "", err
	}
	if err != nil {
		return nil, "", &apierr.Error{Status: http.StatusBadGateway,
			Message: "The origin's OG image could not be fitted to the platform's size", Cause: err}
	}
	return out, format.ContentType(), nil
}

// pngSize reads a PNG's size from its IHDR chunk.
func pngSize(b []byte) (w, h int, ok bool) {
	if len(b) < 24 || string(b[:8]) != "\x89PNG\r\n\x1a\n" || string(b[12:16]) != "IHDR" {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint32(b[16:])), int(binary.BigEndian.Uint32(b[20:])), true
}

// freshness is what an origin's Cache-Control says of an OG image.
type freshness struct {
	maxAge, swr time.Duration
	noStore     bool // no-store or private: not for the edge to keep
}

// parseFreshness reads max-age (s-maxage wins: the edge is a shared
// cache), stale-while-revalidate, no-store and private. Values are capped
// at ogMaxAge; a missing max-age, or no-cache, is 0: stale at once.
func parseFreshness(cc string) freshness {
	var f freshness
	sMaxAge := time.Duration(-1)
	for d := range strings.SplitSeq(cc, ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
		secs := func() time.Duration {
			n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
			if err != nil || n < 0 {
				return 0
			}
			return min(time.Duration(min(n, int64(ogMaxAge/time.Second)))*time.Second, ogMaxAge)
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "max-age":
			f.maxAge = secs()
		case "s-maxage":
			sMaxAge = secs()
		case "stale-while-revalidate":
			f.swr = secs()
		case "no-store", "private":
			f.noStore = true
		case "no-cache":
			sMaxAge = 0
		}
	}
	if sMaxAge >= 0 {
		f.maxAge = sMaxAge
	}
	return f
}

// revalidateOG starts the revalidation of a stale entry in the background,
// unless one of key runs already, key is backing off after a failure, or
// every slot is busy (a later stale hit starts it then). key is
// appendOGKey's with the path, its domain id domainLen bytes long; now
// is the stale hit's time. It allocates nothing when it starts nothing.
func (e *Edge) revalidateOG(key []byte, domainLen int, platform ogplatform.Platform, requestID []byte, now time.Time) {
	o := e.og
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, busy := o.running[string(key)]; busy || o.stopped {
		return
	}
	if b, ok := o.backoff[string(key)]; ok && now.Before(b.until) {
		o.skippedBackoff.Inc()
		return
	}
	if len(o.running) >= ogRevalidations {
		o.skippedBusy.Inc()
		return
	}
	k := newOGKey(key, domainLen, platform)
	o.running[k.key] = struct{}{}
	o.wg.Add(1)
	go e.revalidateNow(k, string(requestID))
}

// revalidateNow asks the origin whether key's entry changed: 304 makes it
// fresh again, 200 replaces it, 404 or 410 drop it; anything else leaves it
// served stale, and the key backs off.
func (e *Edge) revalidateNow(k ogKey, rid string) {
	o := e.og
	key := k.key
	defer func() {
		o.mu.Lock()
		delete(o.running, key)
		o.mu.Unlock()
		o.wg.Done()
	}()
	epoch := e.cache.Epoch()
	old, ok := e.cache.Recheck([]byte(key))
	if !ok {
		return // purged or evicted meanwhile
	}
	validator := old.Validator
	if validator == "" {
		validator = old.ETag
	}
	ans, err := e.fetchOG(k, rid, validator, "")
	var ue *upstreamError
	switch {
	case errors.As(err, &ue) && (ue.status == http.StatusNotFound || ue.status == http.StatusGone):
		if _, err := e.cache.Delete([]byte(key)); err != nil && !errors.Is(err, cache.ErrClosed) {
			slog.Warn("edge cache delete failed", "key", key, "error", err)
		}
		e.revalidated(key, ogGone, nil)
	case err != nil:
		e.revalidated(key, ogFailed, err)
	case ans.ent == nil: // 304
		ent := &cache.Entry{Body: old.Body, ContentType: old.ContentType, ETag: old.ETag, LastModified: old.LastModified,
			OrgID: old.OrgID, ImageID: old.ImageID, Tag: old.Tag, Validator: old.Validator,
			FreshUntil: o.now().Add(ans.fresh.maxAge), StaleWhileRevalidate: ans.fresh.swr}
		if ans.fresh.noStore {
			e.cache.Delete([]byte(key))
		} else {
			e.putOG(epoch, key, ent)
		}
		e.revalidated(key, ogNotModified, nil)
	case !ans.cacheable:
		// The origin no longer lets the edge keep it: the next request
		// gets the origin's answer.
		e.cache.Delete([]byte(key))
		e.revalidated(key, ogModified, nil)
	default:
		e.putOG(epoch, key, ans.ent)
		e.revalidated(key, ogModified, nil)
	}
}

// revalidated counts a revalidation's outcome and keeps key's back-off:
// cleared by an answer, set or doubled by a failure, which is logged
// (once per key per back-off, since the key waits that long).
func (e *Edge) revalidated(key, outcome string, err error) {
	o := e.og
	o.revalidations.WithLabelValues(outcome).Inc()
	now := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if outcome != ogFailed {
		delete(o.backoff, key)
		return
	}
	b, known := o.backoff[key]
	b.delay = min(max(2*b.delay, ogBackoffMin), ogBackoffMax)
	b.until = now.Add(b.delay)
	if !known && len(o.backoff) >= ogBackoffKeys {
		for k, old := range o.backoff { // forget those long past their back-off
			if now.After(old.until.Add(ogBackoffMax)) {
				delete(o.backoff, k)
			}
		}
	}
	if known || len(o.backoff) < ogBackoffKeys {
		o.backoff[key] = b
	}
	var ue *upstreamError
	if errors.As(err, &ue) {
		err = fmt.Errorf("%w: %s", ue, bytes.TrimSpace(ue.body[:min(len(ue.body), 512)]))
	}
	slog.Warn("edge OG revalidation failed: serving the stale image", "key", key, "error", err, "retry_in", b.delay.String())
}

// stop makes revalidations start no more and waits at most wait for those
// running (Stop has canceled their requests).
func (o *ogState) stop(wait time.Duration) error {
	o.mu.Lock()
	o.stopped = true
	o.mu.Unlock()
	done := make(chan struct{})
	go func() { o.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("stop edge: OG revalidations still running %v after they were canceled", wait)
	}
}

// client is the address of the client of a request, as the origin's
// per-client limits count it: the peer, or behind a trusted proxy the
// address it saw (forward.Client).
func (e *Edge) client(ctx *fasthttp.RequestCtx) string {
	peer, _ := netip.AddrFromSlice(ctx.RemoteIP())
	var xff []string
	if len(e.cfg.TrustedProxies) > 0 {
		for _, v := range ctx.Request.Header.PeekAll("X-Forwarded-For") {
			xff = append(xff, string(v))
		}
	}
	c, _ := forward.Client(peer, xff, e.cfg.TrustedProxies)
	return c.String()
}
