package openapi

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

var (
	//go:embed openapi.json
	jsonDoc []byte
	//go:embed openapi.yaml
	yamlDoc []byte
	//go:embed openapi.json.br
	jsonBrotli []byte
	//go:embed openapi.json.gz
	jsonGzip []byte
	//go:embed openapi.yaml.br
	yamlBrotli []byte
	//go:embed openapi.yaml.gz
	yamlGzip []byte

	jsonETag = etag(jsonDoc)
	yamlETag = etag(yamlDoc)
)

// JSON returns the document as JSON. The slice is shared: do not modify it.
func JSON() []byte { return jsonDoc }

// YAML returns the same document as YAML. The slice is shared: do not modify it.
func YAML() []byte { return yamlDoc }

// Compressed holds a document's forms compressed at build time (made by
// package precompress, committed next to the source): the edge serves them
// and never compresses the document per request. The slices are shared: do
// not modify them.
type Compressed struct {
	Brotli, Gzip []byte
}

// JSONCompressed returns JSON() compressed.
func JSONCompressed() Compressed { return Compressed{Brotli: jsonBrotli, Gzip: jsonGzip} }

// YAMLCompressed returns YAML() compressed.
func YAMLCompressed() Compressed { return Compressed{Brotli: yamlBrotli, Gzip: yamlGzip} }

// JSONETag returns a strong ETag, quoted, of JSON(): a hash of its bytes.
func JSONETag() string { return jsonETag }

// YAMLETag returns a strong ETag, quoted, of YAML(): a hash of its bytes.
func YAMLETag() string { return yamlETag }

// etag is the quoted hex SHA-256 of b, truncated to 128 bits.
func etag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}
