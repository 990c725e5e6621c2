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

	jsonETag = etag(jsonDoc)
	yamlETag = etag(yamlDoc)
)

// JSON returns the document as JSON. The slice is shared: do not modify it.
func JSON() []byte { return jsonDoc }

// YAML returns the same document as YAML. The slice is shared: do not modify it.
func YAML() []byte { return yamlDoc }

// JSONETag returns a strong ETag, quoted, of JSON(): a hash of its bytes.
func JSONETag() string { return jsonETag }

// YAMLETag returns a strong ETag, quoted, of YAML(): a hash of its bytes.
func YAMLETag() string { return yamlETag }

// etag is the quoted hex SHA-256 of b, truncated to 128 bits.
func etag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}
