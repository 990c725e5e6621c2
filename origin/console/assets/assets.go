package assets

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// Prefix is the URL path under which Handler serves the files.
const Prefix = "/console/assets/"

// cacheForever is every file's Cache-Control: a file's name changes
// whenever its contents do.
const cacheForever = "public, max-age=31536000, immutable"

const manifestName = "manifest.json"

// Logical names every console page links to; the package refuses to
// start without them.
var required = []string{"console.js", "console.css"}

var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

//go:embed dist
var dist embed.FS

// file is one asset as answered, identity and gzip-encoded.
type file struct {
	contentType string
	body        []byte
	etag        string // strong, quoted
	gzBody      []byte
	gzETag      string
}

var (
	// paths maps a logical name to its URL path.
	paths map[string]string
	// files maps a hashed name (the URL path after Prefix) to its file.
	files map[string]*file
)

func init() {
	var err error
	paths, files, err = load(dist, "dist")
	if err != nil {
		panic(fmt.Sprintf("console assets: %v", err))
	}
}

// load reads the manifest in dir of fsys and the files it names. Every
// required logical name must be there, and each file's name must carry
// the hash of its contents (else `immutable` would be a lie).
func load(fsys fs.FS, dir string) (map[string]string, map[string]*file, error) {
	raw, err := fs.ReadFile(fsys, path.Join(dir, manifestName))
	if err != nil {
		return nil, nil, fmt.Errorf("read manifest: %w", err)
	}
	var manifest map[string]string
	if err := json.Unmarshal(raw, &manifest); err != nil {
		return nil, nil, fmt.Errorf("decode manifest: %w", err)
	}
	for _, name := range required {
		if _, ok := manifest[name]; !ok {
			return nil, nil, fmt.Errorf("manifest lacks %s: run `make console-assets`", name)
		}
	}
	paths := make(map[string]string, len(manifest))
	files := make(map[string]*file, len(manifest))
	for logical, hashed := range manifest {
		ctype, ok := contentTypes[path.Ext(hashed)]
		if !ok || path.Ext(hashed) != path.Ext(logical) || strings.ContainsAny(hashed, "/\\") || hashed == manifestName {
			return nil, nil, fmt.Errorf("manifest maps %s to %q, not a servable file name", logical, hashed)
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, hashed))
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", hashed, err)
		}
		if want := hashedName(logical, body); hashed != want {
			return nil, nil, fmt.Errorf("%s is named %s but its contents hash to %s: run `make console-assets`", logical, hashed, want)
		}
		gz, err := gzipped(body)
		if err != nil {
			return nil, nil, fmt.Errorf("compress %s: %w", hashed, err)
		}
		sum := sha256.Sum256(body)
		tag := hex.EncodeToString(sum[:16])
		files[hashed] = &file{
			contentType: ctype,
			body:        body,
			etag:        `"` + tag + `"`,
			gzBody:      gz,
			gzETag:      `"` + tag + `-gzip"`,
		}
		paths[logical] = Prefix + hashed
	}
	return paths, files, nil
}

// hashedName is name with the first 10 hex digits of the SHA-256 of body
// before its extension, as internal/bundle names its outputs.
func hashedName(name string, body []byte) string {
	sum := sha256.Sum256(body)
	ext := path.Ext(name)
	return strings.TrimSuffix(name, ext) + "-" + hex.EncodeToString(sum[:])[:10] + ext
}

func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Path returns the URL path of the asset with the logical name name
// ("console.js", "console.css"), e.g. /console/assets/console-0123456789.js.
// It panics for a name the manifest lacks: names are constants of the
// pages' templates, and the required ones are checked at init.
func Path(name string) string {
	p, ok := paths[name]
	if !ok {
		panic(fmt.Sprintf("console assets: no asset named %q", name))
	}
	return p
}

// Handler answers GET and HEAD of Prefix + a hashed name with the file,
// gzip-encoded when the client accepts it, cacheable for good; 304 when
// If-None-Match names it; 404 for any other path and 405 for any other
// method. Mount it at Prefix.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, Prefix)
	f := files[name]
	if !ok || f == nil {
		plain(w, http.StatusNotFound, "404 not found")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "405 method not allowed")
		return
	}
	body, etag := f.body, f.etag
	h := w.Header()
	h.Set("Vary", "Accept-Encoding")
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		body, etag = f.gzBody, f.gzETag
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Cache-Control", cacheForever)
	h.Set("ETag", etag)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if noneMatch(r.Header.Values("If-None-Match"), etag) {
		h.Del("Content-Encoding")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", f.contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body) // a client gone mid-body is not ours to report
}

func plain(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = fmt.Fprintln(w, msg)
}

// acceptsGzip reports whether Accept-Encoding (all its field lines)
// accepts gzip: named, or covered by "*", with a q-value other than 0.
func acceptsGzip(fields []string) bool {
	gzip, star := -1.0, -1.0
	for _, field := range fields {
		for _, item := range strings.Split(field, ",") {
			coding, params, _ := strings.Cut(item, ";")
			q := qValue(params)
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				gzip = max(gzip, q)
			case "*":
				star = max(star, q)
			}
		}
	}
	if gzip >= 0 {
		return gzip > 0
	}
	return star > 0
}

// qValue is the q parameter among params (";"-separated), 1 when absent
// and 0 when malformed (a coding the client did not clearly accept is
// not used).
func qValue(params string) float64 {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || q < 0 || q > 1 {
			return 0
		}
		return q
	}
	return 1
}

// noneMatch reports whether If-None-Match (all its field lines) matches
// etag: "*" or the tag, weak or strong (RFC 9110 §13.1.2 compares
// weakly).
func noneMatch(fields []string, etag string) bool {
	for _, field := range fields {
		for _, tag := range strings.Split(field, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
				return true
			}
		}
	}
	return false
}
