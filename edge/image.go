package edge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/edge/cache"
	"github.com/pictorhq/pictor/edge/forward"
	"github.com/pictorhq/pictor/edge/origins"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/imaging"
	"github.com/pictorhq/pictor/origin/contract/logging"
)

var (
	imagePrefix  = []byte("/v1/image/")
	signedPrefix = []byte("create-and-render/")
	hdrETag      = []byte("ETag")
	hdrCache     = []byte("Cache-Control")
	hdrLastMod   = []byte("Last-Modified")
	hdrNoSniff   = []byte("X-Content-Type-Options")
	hdrAccept    = []byte("Accept-Ranges")
	valImmutable = []byte("public, max-age=31536000, immutable")
	canonAccept  = canonicalKey(hdrAccept)
	valNoSniff   = []byte("nosniff")
	valBytes     = []byte("bytes")
	hdrIfNone    = []byte("If-None-Match")
	hdrRangeReq  = []byte("Range")
	hdrIfRange   = []byte("If-Range")
	keyImage     = []byte("i|")
	keySigned    = []byte("s|")
	errTooBig    = errors.New("too large to cache")
	errNotCached = errors.New("not cacheable")
)

// keyBuf holds a request's cache key; pooled so a hit allocates nothing.
type keyBuf struct{ b []byte }

var keyPool = sync.Pool{New: func() any { return &keyBuf{b: make([]byte, 0, 256)} }}

// serveImage answers GET/HEAD of an image, a rendition or a signed URL from
// the cache, filling it from the origin on a miss. It returns false when the
// request is not one it serves (the caller forwards it).
//
// An edge without a purge channel (see caching) caches nothing: it relays
// masters and signed URLs to the origin as they are, and still makes
// transformed renditions itself, from a master it fetches for each one,
// since the origin serves masters only. path and query are the request's
// (targetOf).
func (e *Edge) serveImage(ctx *fasthttp.RequestCtx, requestID, path, query []byte) bool {
	rest := path[len(imagePrefix):]
	kb := keyPool.Get().(*keyBuf)
	defer keyPool.Put(kb)
	caching := e.caching()
	if bytes.HasPrefix(rest, signedPrefix) {
		return caching && e.serveSigned(ctx, kb, requestID)
	}
	if bytes.IndexByte(rest, '/') >= 0 {
		if bytes.HasPrefix(rest, []byte("t-")) {
			return caching && e.serveSigned(ctx, kb, requestID) // a signed template URL
		}
		return false // anything else: the origin decides
	}
	id, ext, dotted := rest, []byte(nil), false
	if i := bytes.IndexByte(rest, '.'); i >= 0 {
		id, ext, dotted = rest[:i], rest[i+1:], true
	}
	if !validID(id) {
		return false // not an image: the origin decides
	}
	format, ok := imaging.ParseFormat(string(ext))
	if !ok || (dotted && len(ext) == 0) {
		// "<id>.", "<id>..png", "<id>.gif" name no format (ParseFormat
		// reads the empty extension as none, PNG); the origin answers 404
		// too. Any spelling of a format (".PNG", ".jpeg") is that format:
		// were it relayed, the origin would answer its master, whatever
		// the query asks.
		forward.WriteError(ctx, apierr.NotFound("Image not found"))
		return true
	}
	opts, err := imaging.Parse(format, query)
	if err != nil {
		forward.WriteError(ctx, err)
		return true
	}
	if !caching && opts.IsIdentity() {
		return false // the origin serves the master itself
	}
	// The key, hence the fill, names the image and the format in their
	// canonical spelling.
	kb.b = appendLower(append(kb.b[:0], keyImage...), id)
	id = kb.b[len(keyImage):]
	kb.b = append(append(append(kb.b, '|'), format...), '|')
	kb.b = opts.Key(kb.b)
	var (
		ent   *cache.Entry
		body  *cache.Body // an L2 body on disk, sent with sendfile
		level cache.Level
		hit   bool
	)
	if caching {
		ent, body, level, hit = e.lookupToSend(kb.b)
	}
	if !hit {
		e.metrics.misses.Inc()
		token := e.inflight.begin(string(requestID), string(ctx.Method()), string(path))
		ent, err = e.fill(ctx, string(kb.b), string(id), format, opts, requestID)
		e.inflight.end(token)
		if errors.Is(err, errTooBig) || errors.Is(err, errNotCached) {
			if !opts.IsIdentity() {
				// The origin serves masters only: relaying would answer
				// the untransformed image with 200.
				forward.WriteError(ctx, apierr.New(http.StatusBadGateway, "The image is too large for the edge to transform; request it without transformation parameters"))
				return true
			}
			return false // streamed through instead
		}
		if err != nil {
			e.answerFailure(ctx, err)
			return true
		}
	} else if level == cache.L1 {
		e.metrics.hitsL1.Inc()
	} else {
		e.metrics.hitsL2.Inc()
	}
	e.write(ctx, ent, body, format, opts.Download, id)
	return true
}

// validID accepts the 36-character UUID form the origin issues, its hex
// digits in either case, as the origin reads it.
func validID(id []byte) bool {
	if len(id) != 36 {
		return false
	}
	for i, c := range id {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// appendLower appends s to dst with its ASCII letters in lower case.
func appendLower(dst, s []byte) []byte {
	n := len(dst)
	dst = append(dst, s...)
	for i, c := range dst[n:] {
		if 'A' <= c && c <= 'Z' {
			dst[n+i] = c + 'a' - 'A'
		}
	}
	return dst
}

// write answers with a cached entry in format: 304 for a matching
// If-None-Match, 206 for a satisfiable Range on a PDF, the whole body
// otherwise. A download is named after the image id. body is the open
// file of an entry whose body is on disk (lookupToSend), nil otherwise;
// write sees that it is closed.
func (e *Edge) write(ctx *fasthttp.RequestCtx, ent *cache.Entry, body *cache.Body, format imaging.Format, download bool, id []byte) {
	if body == nil && ent.OnDisk() { // not from lookupToSend
		var ok bool
		if body, ok = e.toSend(ent); !ok {
			forward.WriteError(ctx, apierr.New(http.StatusServiceUnavailable, "The cached image could not be read; try again"))
			return
		}
	}
	if body != nil {
		defer func() {
			if body != nil { // not handed to the response
				body.Close()
			}
		}()
	}
	h := &ctx.Response.Header
	etag, ct, lm := ent.ETagBytes(), ent.ContentTypeBytes(), ent.LastModifiedBytes()
	if etag == nil { // an entry fresh from the origin, not (yet) from the cache
		etag, ct = []byte(ent.ETag), []byte(ent.ContentType)
		if !ent.LastModified.IsZero() {
			lm = []byte(ent.LastModified.UTC().Format(http.TimeFormat))
		}
	}
	h.SetCanonical(canonETag, etag)
	h.SetCanonical(canonCache, valImmutable)
	if lm != nil {
		h.SetCanonical(canonLastMod, lm)
	}
	if inm := ctx.Request.Header.PeekBytes(hdrIfNone); len(inm) > 0 && etagMatch(inm, etag) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return
	}
	h.SetContentTypeBytes(ct)
	h.SetCanonical(canonNoSniff, valNoSniff)
	if download {
		ctx.Response.Header.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.%s"`, id, format))
	}
	start, size := 0, ent.Len()
	if format == imaging.PDF {
		h.SetCanonical(canonAccept, valBytes)
		if rh := ctx.Request.Header.PeekBytes(hdrRangeReq); len(rh) > 0 && ifRange(ctx.Request.Header.PeekBytes(hdrIfRange), etag, lm) {
			switch first, last, res := parseRange(rh, size); res {
			case rangeUnsatisfiable:
				ctx.SetStatusCode(fasthttp.StatusRequestedRangeNotSatisfiable)
				h.Set("Content-Range", "bytes */"+strconv.Itoa(size))
				return
			case rangePart:
				ctx.SetStatusCode(fasthttp.StatusPartialContent)
				h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, last, size))
				start, size = first, last-first+1
			}
		}
	}
	e.metrics.bytes.Add(float64(size))
	if body == nil {
		setBody(ctx, nil, ent.Body[start:start+size])
		return
	}
	body.Part(int64(start), int64(size))
	setBody(ctx, body, nil)
	body = nil
}

// memoryStreamAbove: an L1 body longer than this leaves with its headers
// in one writev from the cache's memory instead of being copied into
// fasthttp's buffer behind them first (cache.MemoryBody); a shorter one is
// cheaper to copy.
const memoryStreamAbove = 8 << 10

// setBody hands the answer its body: body (an L2 body, its Part set), or
// else mem, an L1 body. fasthttp closes a body stream once sent.
func setBody(ctx *fasthttp.RequestCtx, body *cache.Body, mem []byte) {
	co, ok := ctx.Conn().(cache.Coalescer)
	if body == nil {
		if !ok || len(mem) <= memoryStreamAbove {
			ctx.Response.SetBodyRaw(mem)
			return
		}
		body = cache.MemoryBody(mem)
	}
	body.Conn = co
	ctx.Response.SetBodyStream(body, body.Len())
}

// etagMatch implements If-None-Match: "*" or a list holding the tag
// (weak comparison, as RFC 9110 asks for If-None-Match).
func etagMatch(header, etag []byte) bool {
	if bytes.Equal(bytes.TrimSpace(header), []byte("*")) {
		return true
	}
	for len(header) > 0 {
		var tag []byte
		tag, header, _ = bytes.Cut(header, []byte{','})
		tag = bytes.TrimSpace(tag)
		tag = bytes.TrimPrefix(tag, []byte("W/"))
		if bytes.Equal(tag, etag) {
			return true
		}
	}
	return false
}

// rangeResult is what a Range header asks of a body.
type rangeResult int

const (
	rangeWhole         rangeResult = iota // ignore the header: 200 with the whole body
	rangePart                             // 206 with bytes start to end
	rangeUnsatisfiable                    // 416
)

// parseRange reads a Range header for a body of size bytes. One range of
// bytes ("a-b", "a-" or "-n") is served; a header in another unit or
// asking for several ranges is ignored, as RFC 9110 allows, and the whole
// body is sent; a malformed bytes range, or one that starts past the end,
// is unsatisfiable.
func parseRange(h []byte, size int) (start, end int, res rangeResult) {
	spec, found := bytes.CutPrefix(bytes.TrimSpace(h), []byte("bytes="))
	if !found || bytes.IndexByte(spec, ',') >= 0 {
		return 0, 0, rangeWhole
	}
	a, b, found := bytes.Cut(bytes.TrimSpace(spec), []byte{'-'})
	if !found || size == 0 {
		return 0, 0, rangeUnsatisfiable
	}
	if len(a) == 0 {
		n, err := fasthttp.ParseUint(b)
		if err != nil || n == 0 {
			return 0, 0, rangeUnsatisfiable
		}
		return max(0, size-n), size - 1, rangePart
	}
	s, err := fasthttp.ParseUint(a)
	if err != nil || s >= size {
		return 0, 0, rangeUnsatisfiable
	}
	end = size - 1
	if len(b) > 0 {
		e, err := fasthttp.ParseUint(b)
		if err != nil || e < s {
			return 0, 0, rangeUnsatisfiable
		}
		end = min(e, end)
	}
	return s, end, rangePart
}

// ifRange reports whether an If-Range header lets a Range apply: absent,
// or naming the entry's entity tag (strong comparison) or its
// Last-Modified date exactly. Otherwise the client's copy is another
// version, and the whole body is sent.
func ifRange(h, etag, lastMod []byte) bool {
	h = bytes.TrimSpace(h)
	switch {
	case len(h) == 0:
		return true
	case h[0] == '"':
		return bytes.Equal(h, etag)
	default:
		return lastMod != nil && bytes.Equal(h, lastMod)
	}
}

// upstreamError is a non-200 answer of the origin, relayed as it is.
type upstreamError struct {
	status      int
	contentType string
	body        []byte
	header      http.Header
}

func (u *upstreamError) Error() string { return fmt.Sprintf("origin answered %d", u.status) }

// answerFailure relays the origin's error answer, or a standard error body.
func (e *Edge) answerFailure(ctx *fasthttp.RequestCtx, err error) {
	var ue *upstreamError
	if errors.As(err, &ue) {
		ctx.SetStatusCode(ue.status)
		for _, k := range []string{"Retry-After", "Cache-Control", "WWW-Authenticate"} {
			if v := ue.header.Get(k); v != "" {
				ctx.Response.Header.Set(k, v)
			}
		}
		ctx.SetContentType(ue.contentType)
		ctx.SetBody(ue.body)
		return
	}
	var ae *apierr.Error
	switch {
	case errors.As(err, &ae): // a transform the image cannot take
		forward.WriteError(ctx, ae)
		return
	case errors.Is(err, imaging.ErrCropOutOfBounds), errors.Is(err, imaging.ErrTooLarge), errors.Is(err, imaging.ErrUnsupported):
		forward.WriteError(ctx, apierr.BadRequest("%v", err))
		return
	}
	slog.WarnContext(ctx, "edge fill failed", "error", err)
	forward.WriteError(ctx, apierr.New(http.StatusBadGateway, "The origin is unavailable"))
}

// fill produces a missing entry once, however many requests wait for it.
func (e *Edge) fill(ctx *fasthttp.RequestCtx, key, id string, format imaging.Format, opts imaging.Options, requestID []byte) (*cache.Entry, error) {
	rid := string(requestID)
	return e.flight(key, func() (*cache.Entry, error) {
		if opts.IsIdentity() {
			return e.fetch("/v1/image/"+id+"."+string(format), rid, id, "")
		}
		return e.derive(id, format, opts, rid)
	})
}

// flight makes key's entry once however many misses ask at a time, and
// caches it as of before it began (a purge meanwhile wins, see
// PutSince), after the waiters have it (store). A miss that raced with a
// flight finishing just before its own began finds that flight's entry,
// cached or pending, instead of making it again. An edge that does not
// cache shares the flight and keeps nothing.
func (e *Edge) flight(key string, produce func() (*cache.Entry, error)) (*cache.Entry, error) {
	v, err, _ := e.flights.Do(key, func() (any, error) {
		if !e.caching() {
			return produce()
		}
		if ent, ok := e.cache.Recheck([]byte(key)); ok {
			return ent, nil
		}
		if ent, ok := e.pendingEntry([]byte(key)); ok {
			return ent, nil
		}
		epoch := e.cache.Epoch()
		ent, err := produce()
		if err != nil {
			return nil, err
		}
		e.store(epoch, key, ent)
		return ent, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*cache.Entry), nil
}

// derive makes a transformed rendition from the PNG master.
func (e *Edge) derive(id string, format imaging.Format, opts imaging.Options, rid string) (*cache.Entry, error) {
	if format == imaging.PDF {
		return nil, apierr.BadRequest("PDF renditions take no transformation parameters")
	}
	masterKey := "i|" + id + "|png|"
	fetchMaster := func() (*cache.Entry, error) {
		return e.flight(masterKey, func() (*cache.Entry, error) {
			return e.fetch("/v1/image/"+id+".png", rid, id, "")
		})
	}
	var (
		master *cache.Entry
		ok     bool
	)
	if e.caching() {
		master, _, ok = e.lookup([]byte(masterKey))
	}
	var masterBody []byte
	if ok {
		var err error
		// A master L2 left on disk is read; gone since the lookup, it
		// is fetched again.
		masterBody, err = e.cache.ReadBody(master)
		ok = err == nil
	}
	if !ok {
		var err error
		if master, err = fetchMaster(); err != nil {
			return nil, err
		}
		masterBody = master.Body
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(e.base, 30*time.Second)
	defer cancel()
	out, err := e.transform(ctx, func() ([]byte, error) { return imaging.Apply(ctx, masterBody, opts, format) })
	e.metrics.transform.Observe(time.Since(start).Seconds())
	if err != nil {
		return nil, err
	}
	return &cache.Entry{Body: out, ContentType: format.ContentType(), ETag: etagOf(out), LastModified: master.LastModified,
		OrgID: master.OrgID, ImageID: master.ImageID}, nil
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// fetch GETs path from an origin and turns a 200 into an entry. A GET
// that got no answer goes to the next origin (origins.Idempotent).
func (e *Edge) fetch(path, rid, imageID, tag string) (*cache.Entry, error) {
	e.metrics.fetches.Inc()
	resp, err := e.origins.Do(logging.WithRequestID(e.base, rid), func(o *origins.Origin) (*http.Response, error) {
		req, err := http.NewRequestWithContext(e.base, http.MethodGet, o.URL()+path, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set(contract.HeaderRequestID, rid)
		return e.fwd.Client().Do(req)
	}, origins.Idempotent)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, &upstreamError{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body, header: resp.Header}
	}
	body, err := readBody(resp, e.maxEntry)
	if err != nil {
		return nil, err
	}
	if imageID == "" {
		imageID = resp.Header.Get(contract.HeaderImage)
	}
	if tag == "" {
		tag = resp.Header.Get(contract.HeaderTag)
	}
	ent := &cache.Entry{Body: body, ContentType: resp.Header.Get("Content-Type"), ETag: resp.Header.Get("ETag"),
		OrgID: resp.Header.Get(contract.HeaderOrg), ImageID: imageID, Tag: tag}
	if lm, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		ent.LastModified = lm
	}
	if ent.OrgID == "" || ent.ETag == "" {
		return nil, errNotCached
	}
	return ent, nil
}

// serveSigned answers a signed URL (create-and-render or template): cached
// by its path and query, the format in its canonical spelling (see
// signedKey), tagged as the origin says (the signing key's api_id, or the
// template) so that disabling the key or changing the template purges it.
func (e *Edge) serveSigned(ctx *fasthttp.RequestCtx, kb *keyBuf, requestID []byte) bool {
	uri := ctx.URI()
	var format imaging.Format
	kb.b, format = signedKey(kb.b[:0], uri.Path(), uri.QueryString())
	if ent, body, level, hit := e.lookupToSend(kb.b); hit {
		if level == cache.L1 {
			e.metrics.hitsL1.Inc()
		} else {
			e.metrics.hitsL2.Inc()
		}
		e.write(ctx, ent, body, format, false, nil)
		return true
	}
	e.metrics.misses.Inc()
	key := string(kb.b)
	rid := string(requestID)
	path := string(uri.RequestURI())
	token := e.inflight.begin(rid, string(ctx.Method()), string(uri.Path()))
	ent, err := e.flight(key, func() (*cache.Entry, error) {
		return e.fetch(path, rid, "", "") // the origin names the purge tag
	})
	e.inflight.end(token)
	if errors.Is(err, errTooBig) || errors.Is(err, errNotCached) {
		return false
	}
	if err != nil {
		e.answerFailure(ctx, err)
		return true
	}
	e.write(ctx, ent, nil, format, false, nil)
	return true
}

// signedKey appends the cache key of a signed URL to dst: "s|", its path
// and "?" and its query, and returns the format it asks for. The format
// segment is spelled as ParseFormat reads it, and its absence as "png",
// as the origin reads them: every spelling of one URL is one entry. A path
// of another shape, or whose format is unknown, is keyed as it is (its
// format is none): the origin answers it.
func signedKey(dst, path, query []byte) ([]byte, imaging.Format) {
	dst = append(dst, keySigned...)
	rest := path[len(imagePrefix):]
	segments := 2 // template_id/token
	if bytes.HasPrefix(rest, signedPrefix) {
		segments = 3 // create-and-render/api_id/token
	}
	var format imaging.Format
	switch bytes.Count(rest, []byte{'/'}) {
	case segments - 1:
		dst, format = append(append(dst, path...), '/'), imaging.PNG
	case segments:
		i := bytes.LastIndexByte(path, '/') + 1
		if f, ok := imaging.ParseFormat(string(path[i:])); ok && i < len(path) {
			dst, format = append(dst, path[:i]...), f
		}
	}
	if format == "" {
		dst = append(dst, path...)
	} else {
		dst = append(dst, format...)
	}
	return append(append(dst, '?'), query...), format
}

// readBody reads an answer of at most limit bytes into a slice of exactly
// its length: the cache charges an entry its length, so spare capacity
// (io.ReadAll's doubling leaves up to half) would be memory it does not
// count.
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 {
		if n > limit {
			return nil, errTooBig
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, errTooBig
	}
	if cap(body) > len(body) {
		exact := make([]byte, len(body))
		copy(exact, body)
		body = exact
	}
	return body, nil
}
