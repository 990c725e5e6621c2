package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeyFile is the master key's file name inside the data directory.
const KeyFile = "master.key"

// ErrOpen is returned when a sealed value does not decrypt: wrong master key
// or tampered data.
var ErrOpen = errors.New("secretbox: cannot open sealed value")

// Box seals and opens values under the master key.
type Box struct {
	aead   cipher.AEAD
	master []byte
}

// New returns a Box for a 32-byte master key.
func New(master []byte) (*Box, error) {
	if len(master) != 32 {
		return nil, fmt.Errorf("master key must be 32 bytes, got %d", len(master))
	}
	block, err := aes.NewCipher(master)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead, master: append([]byte(nil), master...)}, nil
}

// Load returns the Box for the master key given in env (PICTOR_MASTER_KEY:
// 64 hex digits or base64 of 32 bytes) or, when env is empty, the key stored
// in dataDir, generating it there with mode 0600 on first use.
func Load(env, dataDir string) (*Box, error) {
	if env != "" {
		key, err := ParseKey(env)
		if err != nil {
			return nil, fmt.Errorf("PICTOR_MASTER_KEY: %w", err)
		}
		return New(key)
	}
	path := filepath.Join(dataDir, KeyFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		raw, err = create(path)
	}
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	key, err := ParseKey(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("master key %s: %w", path, err)
	}
	return New(key)
}

func create(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	rand.Read(key)
	text := []byte(hex.EncodeToString(key) + "\n")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		// Another process created it first: use theirs.
		return os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(text); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return text, f.Close()
}

// ParseKey decodes a 32-byte key written as hex or standard/URL base64.
func ParseKey(s string) ([]byte, error) {
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, errors.New("want 32 bytes as 64 hex digits or base64")
}

// Seal encrypts plaintext; additional binds the result to its context (for
// example the key id) so a sealed value cannot be moved to another record.
func (b *Box) Seal(plaintext, additional []byte) []byte {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	rand.Read(nonce)
	return b.aead.Seal(nonce, nonce, plaintext, additional)
}

// Open decrypts a value produced by Seal with the same additional data.
func (b *Box) Open(sealed, additional []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n+b.aead.Overhead() {
		return nil, ErrOpen
	}
	out, err := b.aead.Open(nil, sealed[:n], sealed[n:], additional)
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}

// MACKey derives an independent 32-byte key for the named purpose.
func (b *Box) MACKey(purpose string) []byte {
	key, err := hkdf.Key(sha256.New, b.master, nil, "pictor "+purpose, 32)
	if err != nil {
		panic(err) // only for impossible lengths
	}
	return key
}

// Sign returns a truncated HMAC-SHA256 of msg under key.
func Sign(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)[:16]
}

// Verify reports whether mac is Sign(key, msg), in constant time.
func Verify(key, msg, mac []byte) bool {
	return hmac.Equal(Sign(key, msg), mac)
}
