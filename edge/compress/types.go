package compress

import "bytes"

// MinSize is the smallest body the edge compresses: under 1 KiB the
// coding's framing and the client's work outweigh the bytes saved (most
// error bodies and short JSON answers are smaller, and go out as they are).
const MinSize = 1 << 10

// textTypes are the media types compressed, in lower case: JSON, YAML,
// HTML, JavaScript, CSS, SVG, XML, plain text, CSV and Markdown. Images
// other than SVG, PDF, archives, fonts and video are compressed already and
// are never compressed again; text/event-stream is left alone, as a
// compressor would hold its events back.
var textTypes = []string{
	"application/json", "application/yaml", "application/x-yaml", "text/yaml",
	"text/html", "application/xhtml+xml",
	"text/javascript", "application/javascript",
	"text/css", "image/svg+xml",
	"application/xml", "text/xml",
	"text/plain", "text/csv", "text/markdown",
}

// structuredSuffixes are the structured-syntax suffixes (RFC 6839) of
// compressed application/ types: application/problem+json, +yaml, +xml.
var structuredSuffixes = []string{"+json", "+yaml", "+xml"}

// Compressible reports whether an answer of this Content-Type is text the
// edge compresses (textTypes). Parameters (charset) are ignored, case too.
// It allocates nothing.
func Compressible(contentType []byte) bool {
	mt, _, _ := bytes.Cut(contentType, []byte{';'})
	mt = trimOWS(mt)
	for _, t := range textTypes {
		if equalFold(mt, t) {
			return true
		}
	}
	const app = "application/"
	if len(mt) <= len(app) || !equalFold(mt[:len(app)], app) {
		return false
	}
	for _, s := range structuredSuffixes {
		if len(mt) > len(app)+len(s) && equalFold(mt[len(mt)-len(s):], s) {
			return true
		}
	}
	return false
}

// ETag returns the ETag of etag's representation coded with e: the coding's
// name appended inside the quotes (`"abc"` → `"abc-br"`, `W/"abc"` →
// `W/"abc-br"`), so that each coding has its own strong validator. An
// Identity answer keeps its ETag, as does a malformed one (not quoted).
func ETag(etag string, e Encoding) string {
	if e == Identity || len(etag) < 2 || etag[len(etag)-1] != '"' {
		return etag
	}
	return etag[:len(etag)-1] + "-" + e.String() + `"`
}

// StripETag returns the ETag tag names before ETag added e's suffix, and
// whether it had one.
func StripETag(tag string, e Encoding) (string, bool) {
	suffix := "-" + e.String() + `"`
	if e == Identity || len(tag) <= len(suffix)+1 || tag[len(tag)-len(suffix):] != suffix {
		return tag, false
	}
	return tag[:len(tag)-len(suffix)] + `"`, true
}
