package apidocs

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

// RedocVersion is the release of Redoc (npm package "redoc") whose
// standalone bundle is embedded; RedocIntegrity is the npm integrity of
// that release's package, which fetch-redoc.sh checks. To move to another
// release, change both and run `make apidocs`.
const RedocVersion = "2.5.4"

const RedocIntegrity = "sha512-M6jWhG1qoBnH6TFmzJnstyCZ87HmOY/UzDm78mHiYihEdlV/YcS9ogOo1NlElnJMeLsyxHFe2yFc4sNjHTrABQ=="

// Where the edge serves the page and its files. The bundle's path names
// its version, so it may be cached for good.
const (
	PagePath    = "/docs"
	ScriptPath  = "/docs/redoc-" + RedocVersion + ".js"
	StylePath   = "/docs/docs.css"
	LicensePath = "/docs/redoc.LICENSE.txt"
	// NoticesPath is where the bundle's first line says the licenses of
	// the code bundled in it are: beside it, under the name npm gives it.
	NoticesPath = "/docs/redoc.standalone.js.LICENSE.txt"
)

// ContentSecurityPolicy is the page's policy: scripts only from the edge
// itself and nothing from any other host. Redoc needs three allowances:
// img-src data: (its icons are inline SVG), worker-src blob: (its search
// index runs in a worker made from a blob) and two inline stylesheets,
// allowed by hash rather than with 'unsafe-inline': styled-components'
// empty <style> element, which it fills through the CSSOM (insertRule,
// which CSP does not restrict), and the stylesheet of perfect-scrollbar
// that the bundle injects as text. Both hashes belong to RedocVersion;
// after a change of version the Chromium test in edge/ names any hash a
// new bundle needs in the violation it reports.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; " +
	"style-src 'self' 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=' 'sha256-QMIg+bpjm3JdElJ388KYke01izlUW0UoNOeKjpMxdgc='; " +
	"img-src 'self' data:; connect-src 'self'; worker-src blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Cache-Control values.
const (
	// cacheForever is for the versioned bundle.
	cacheForever = "public, max-age=31536000, immutable"
	// cacheRevalidate is for the rest: after a new release the page
	// names another bundle, so it is checked (a 304 by ETag) each time.
	cacheRevalidate = "no-cache"
)

var (
	//go:embed index.html
	page []byte
	//go:embed docs.css
	style []byte
	//go:embed redoc/redoc.standalone.js
	script []byte
	//go:embed redoc/LICENSE
	license []byte
	//go:embed redoc/redoc.standalone.js.LICENSE.txt
	notices []byte

	// The compressed forms, made when the files are fetched
	// (fetch-redoc.sh runs package precompress) and committed.
	//go:embed redoc/redoc.standalone.js.br
	scriptBrotli []byte
	//go:embed redoc/redoc.standalone.js.gz
	scriptGzip []byte
	//go:embed redoc/LICENSE.br
	licenseBrotli []byte
	//go:embed redoc/LICENSE.gz
	licenseGzip []byte
	//go:embed redoc/redoc.standalone.js.LICENSE.txt.br
	noticesBrotli []byte
	//go:embed redoc/redoc.standalone.js.LICENSE.txt.gz
	noticesGzip []byte
)

// File is one file of the reference page, as it is answered.
type File struct {
	Path         string
	ContentType  string
	CacheControl string
	ETag         string // strong and quoted: a hash of Body
	Body         []byte // shared: do not modify it
	// Page marks the HTML page, answered with ContentSecurityPolicy and
	// never framed.
	Page bool
	// Brotli and Gzip are Body compressed at build time (shared too), or
	// nil for the files too small to gain from it (under 1 KiB).
	Brotli, Gzip []byte
}

// Files returns the page and its files. The page is there twice: at
// PagePath and at PagePath + "/".
func Files() []File {
	pageFile := File{Path: PagePath, ContentType: "text/html; charset=utf-8", CacheControl: cacheRevalidate, Body: page, Page: true}
	withSlash := pageFile
	withSlash.Path += "/"
	files := []File{
		pageFile,
		withSlash,
		{Path: ScriptPath, ContentType: "text/javascript; charset=utf-8", CacheControl: cacheForever, Body: script, Brotli: scriptBrotli, Gzip: scriptGzip},
		{Path: StylePath, ContentType: "text/css; charset=utf-8", CacheControl: cacheRevalidate, Body: style},
		{Path: LicensePath, ContentType: "text/plain; charset=utf-8", CacheControl: cacheRevalidate, Body: license, Brotli: licenseBrotli, Gzip: licenseGzip},
		{Path: NoticesPath, ContentType: "text/plain; charset=utf-8", CacheControl: cacheRevalidate, Body: notices, Brotli: noticesBrotli, Gzip: noticesGzip},
	}
	for i := range files {
		files[i].ETag = etag(files[i].Body)
	}
	return files
}

// etag is the quoted hex SHA-256 of b, truncated to 128 bits.
func etag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}
