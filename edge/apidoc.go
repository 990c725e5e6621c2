package edge

import (
	"bytes"
	"net/http"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/edge/compress"
	"github.com/pictorhq/pictor/edge/forward"
	"github.com/pictorhq/pictor/origin/contract/apidocs"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/openapi"
)

// The edge answers the OpenAPI document (/v1/openapi.json, .yaml) and the
// API reference page (/docs and its files) itself, from the binary, and
// never asks the origin: they are public, the same for every client, and
// change only with a new release.

var (
	pathDocs    = []byte(apidocs.PagePath)
	pathOpenAPI = []byte("/v1/openapi.")
)

// docFile is a file the edge serves from the binary, with its headers made
// once: answering one allocates nothing.
type docFile struct {
	// forms are the file's bytes and ETag by content coding: identity
	// always, Brotli and gzip when the file was compressed at build time
	// (text of compress.MinSize or more). It is never compressed per request.
	forms       [compress.Brotli + 1]docForm
	contentType []byte
	// header is sent with both 200 and 304.
	header [][2][]byte
	// allow lists the methods answered, for a 405.
	allow string
	// public marks the OpenAPI documents, which any site may read (tools in
	// browsers fetch them): CORS, preflight included.
	public bool
	// vary marks a file with compressed forms: its answers, whatever their
	// coding, carry Vary: Accept-Encoding.
	vary bool
}

// docForm is a file in one content coding.
type docForm struct {
	body, etag []byte
}

// newDocFile makes the file of body, with etag (strong, quoted), and its
// compressed forms if there are any; each form's ETag names its coding.
func newDocFile(body []byte, etag, contentType string, c openapi.Compressed) *docFile {
	f := &docFile{contentType: []byte(contentType)}
	f.forms[compress.Identity] = docForm{body: body, etag: []byte(etag)}
	if c.Brotli != nil && c.Gzip != nil && len(body) >= compress.MinSize && compress.Compressible(f.contentType) {
		f.vary = true
		f.forms[compress.Brotli] = docForm{body: c.Brotli, etag: []byte(compress.ETag(etag, compress.Brotli))}
		f.forms[compress.Gzip] = docForm{body: c.Gzip, etag: []byte(compress.ETag(etag, compress.Gzip))}
	}
	return f
}

// openAPICacheControl lets clients and proxies keep the document for five
// minutes.
const openAPICacheControl = "public, max-age=300"

var (
	hdrACAO      = []byte("Access-Control-Allow-Origin")
	hdrACEH      = []byte("Access-Control-Expose-Headers")
	hdrACAM      = []byte("Access-Control-Allow-Methods")
	hdrACAH      = []byte("Access-Control-Allow-Headers")
	hdrACMA      = []byte("Access-Control-Max-Age")
	hdrAllow     = []byte("Allow")
	hdrCSP       = []byte("Content-Security-Policy")
	hdrFrame     = []byte("X-Frame-Options")
	hdrReferrer  = []byte("Referrer-Policy")
	allowPublic  = []byte("GET, HEAD, OPTIONS")
	docPreflight = [][2][]byte{{hdrACAO, []byte("*")}, {hdrACAM, allowPublic}, {hdrACAH, []byte("*, Authorization")}, {hdrACMA, []byte("86400")}, {hdrAllow, allowPublic}}
	docFiles     = newDocTable(openapi.JSON(), openapi.JSONETag(), openapi.JSONCompressed(), openapi.YAML(), openapi.YAMLETag(), openapi.YAMLCompressed())

	hdrAcceptEncoding  = []byte("Accept-Encoding")
	hdrContentEncoding = []byte("Content-Encoding")
	valAcceptEncoding  = []byte("Accept-Encoding")
	valEncoding        = [...][]byte{compress.Gzip: []byte(compress.Gzip.String()), compress.Brotli: []byte(compress.Brotli.String())}
)

// docTable holds the files the edge serves from the binary, by path.
type docTable map[string]*docFile

// newDocTable makes the table for an OpenAPI document, as JSON and YAML,
// and the reference page.
func newDocTable(jsonDoc []byte, jsonETag string, jsonC openapi.Compressed, yamlDoc []byte, yamlETag string, yamlC openapi.Compressed) docTable {
	files := docTable{}
	for _, d := range []struct {
		path, contentType, etag string
		body                    []byte
		compressed              openapi.Compressed
	}{
		{"/v1/openapi.json", "application/json; charset=utf-8", jsonETag, jsonDoc, jsonC},
		{"/v1/openapi.yaml", "application/yaml; charset=utf-8", yamlETag, yamlDoc, yamlC},
	} {
		df := newDocFile(d.body, d.etag, d.contentType, d.compressed)
		df.allow, df.public = string(allowPublic), true
		df.header = [][2][]byte{
			{hdrCache, []byte(openAPICacheControl)},
			{hdrACAO, []byte("*")},
			{hdrACEH, []byte("ETag, X-Request-Id")},
			{hdrNoSniff, valNoSniff},
		}
		files[d.path] = df
	}
	for _, f := range apidocs.Files() {
		df := newDocFile(f.Body, f.ETag, f.ContentType, openapi.Compressed{Brotli: f.Brotli, Gzip: f.Gzip})
		df.allow = "GET, HEAD"
		df.header = [][2][]byte{{hdrCache, []byte(f.CacheControl)}, {hdrNoSniff, valNoSniff}}
		if f.Page {
			df.header = append(df.header,
				[2][]byte{hdrCSP, []byte(apidocs.ContentSecurityPolicy)},
				[2][]byte{hdrFrame, []byte("DENY")},
				[2][]byte{hdrReferrer, []byte("no-referrer")})
		}
		files[f.Path] = df
	}
	return files
}

// serve answers a request for the OpenAPI document or the reference page.
// It returns false for a path that is none of them and lies outside
// /docs/ (the caller forwards it); an unknown path under /docs/ is a 404.
func (d docTable) serve(ctx *fasthttp.RequestCtx, path []byte) bool {
	f := d[string(path)]
	if f == nil {
		if len(path) > len(pathDocs) && path[len(pathDocs)] == '/' && bytes.HasPrefix(path, pathDocs) {
			forward.WriteError(ctx, apierr.NotFound("No route for %s %s", ctx.Method(), path))
			return true
		}
		return false
	}
	h := &ctx.Response.Header
	switch {
	case ctx.IsGet() || ctx.IsHead():
	case f.public && ctx.IsOptions():
		for _, kv := range docPreflight {
			h.SetBytesKV(kv[0], kv[1])
		}
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return true
	default:
		forward.WriteError(ctx, apierr.New(http.StatusMethodNotAllowed, "Method %s is not allowed on %s", ctx.Method(), path).WithHeader("Allow", f.allow))
		return true
	}
	// The coding the client prefers among the file's forms. A Range header
	// is ignored here, as it always was (200 with the whole form), so a
	// compressed form never meets a range.
	form := &f.forms[compress.Identity]
	if f.vary {
		h.SetBytesKV(hdrVary, valAcceptEncoding)
		if e := compress.Negotiate(ctx.Request.Header.PeekBytes(hdrAcceptEncoding)); e != compress.Identity {
			form = &f.forms[e]
			h.SetBytesKV(hdrContentEncoding, valEncoding[e])
		}
	}
	h.SetBytesKV(hdrETag, form.etag)
	for _, kv := range f.header {
		h.SetBytesKV(kv[0], kv[1])
	}
	if inm := ctx.Request.Header.PeekBytes(hdrIfNone); len(inm) > 0 && etagMatch(inm, form.etag) {
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return true
	}
	h.SetContentTypeBytes(f.contentType)
	ctx.Response.SetBodyRaw(form.body)
	return true
}
