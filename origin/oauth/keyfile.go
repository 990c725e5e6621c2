package oauth

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/pictorhq/pictor/origin/seal"
)

// loadKey returns the Ed25519 key in path, generating it there on first use.
func loadKey(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		raw, err = createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	key, err := parseKey(raw)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return key, nil
}

func parseKey(raw []byte) (ed25519.PrivateKey, error) {
	block, _ := pem.Decode(raw)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("want a PEM block of type PRIVATE KEY (PKCS#8)")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse PKCS#8: %w", err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("want an Ed25519 key, got %T", k)
	}
	return key, nil
}

// createKey writes a new key to path unless another process gets there
// first, and returns the contents of path either way (seal.CreateFile, as
// for the master key).
func createKey(path string) ([]byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return seal.CreateFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// jwk is the public half of the signing key as a JSON Web Key (RFC 8037).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

func publicJWK(pub ed25519.PublicKey) jwk {
	x := base64.RawURLEncoding.EncodeToString(pub)
	return jwk{Kty: "OKP", Crv: "Ed25519", X: x, Kid: thumbprint(x), Alg: "EdDSA", Use: "sig"}
}

// thumbprint is the key's RFC 7638 thumbprint: SHA-256 of the required
// members in lexicographic order, base64url.
func thumbprint(x string) string {
	canon, _ := json.Marshal(struct {
		Crv string `json:"crv"`
		Kty string `json:"kty"`
		X   string `json:"x"`
	}{"Ed25519", "OKP", x})
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
