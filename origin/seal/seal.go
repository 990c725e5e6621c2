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
var ErrOpen = errors.New("seal: cannot open sealed value")

// Sealed formats. A value Seal writes starts with formatV1, then the nonce,
// then the ciphertext and tag, under a key derived from the master key with
// HKDF (sealKeyInfo). A legacy value, written before the key was derived, is
// the nonce, ciphertext and tag under the master key itself, with no prefix;
// its first byte is random, so it may equal formatV1 by chance (one value in
// 256), which is why Open falls back to the legacy reading when the v1 one
// fails.
const formatV1 byte = 0x01

// sealKeyInfo is the HKDF info of the encryption key. MAC keys use
// macInfo(purpose), which always starts with "pictor " (a space); this label
// has a '/' there, so no purpose can name the encryption key.
const sealKeyInfo = "pictor/seal/aes-256-gcm/v1"

// macInfo is the HKDF info of a MAC key. It is what it has always been, so
// that tokens signed before the encryption key was derived still verify.
func macInfo(purpose string) string { return "pictor " + purpose }

// Box seals and opens values under the master key.
type Box struct {
	// aead seals and opens v1 values, under the derived key.
	aead cipher.AEAD
	// legacy opens values sealed directly under the master key; nothing is
	// sealed with it any more.
	legacy cipher.AEAD
	master []byte
}

// New returns a Box for a 32-byte master key.
func New(master []byte) (*Box, error) {
	if len(master) != 32 {
		return nil, fmt.Errorf("master key must be 32 bytes, got %d", len(master))
	}
	// The master key is HKDF input for every key Pictor uses; using it as
	// the AES key as well would give one key two uses.
	sealKey, err := hkdf.Key(sha256.New, master, nil, sealKeyInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("derive seal key: %w", err)
	}
	aead, err := newGCM(sealKey)
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	legacy, err := newGCM(master)
	if err != nil {
		return nil, fmt.Errorf("legacy seal key: %w", err)
	}
	return &Box{aead: aead, legacy: legacy, master: append([]byte(nil), master...)}, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Load returns the Box for the master key given in env (PICTOR_MASTER_KEY:
// 64 hex digits or base64 of 32 bytes) or, when env is empty, the key stored
// in dataDir, generating it there with mode 0600 on first use. Processes
// that load the same fresh dataDir at once all get the same key.
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

// create writes a new key to path unless another process gets there first,
// and returns the contents of path either way (CreateFile).
func create(path string) ([]byte, error) {
	key := make([]byte, 32)
	rand.Read(key)
	return CreateFile(path, []byte(hex.EncodeToString(key)+"\n"))
}

// CreateFile writes text to path (mode 0600, its directory made 0700)
// unless another process gets there first, and returns the contents of
// path either way: for secrets made on first start (the master key, the
// OAuth signing key, the edge token). The text is written and synced under
// a temporary name, then linked to path: link(2) fails if path exists and
// otherwise makes the name appear with the whole file behind it, so
// whoever loses the race reads the winner's complete file, never an empty
// or partial one (as an O_EXCL create followed by a write would show).
func CreateFile(path string, text []byte) ([]byte, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create key directory: %w", err)
	}
	// CreateTemp opens with mode 0600, which the link keeps.
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("create temporary key file: %w", err)
	}
	tmp := f.Name()
	// The temporary name goes whether the link was made or lost.
	defer os.Remove(tmp)
	if _, err := f.Write(text); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			// Another process linked its file first: use theirs.
			raw, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("read the file another process created: %w", err)
			}
			return raw, nil
		}
		return nil, fmt.Errorf("link %s to %s: %w", tmp, path, err)
	}
	// The new name must survive a crash as well as the file's contents.
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	return text, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open key directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync key directory: %w", err)
	}
	return nil
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

// Seal encrypts plaintext in the current format; additional binds the
// result to its context (for example the key id) so a sealed value cannot
// be moved to another record.
func (b *Box) Seal(plaintext, additional []byte) []byte {
	n := b.aead.NonceSize()
	out := make([]byte, 1+n, 1+n+len(plaintext)+b.aead.Overhead())
	out[0] = formatV1
	nonce := out[1:]
	rand.Read(nonce)
	return b.aead.Seal(out, nonce, plaintext, v1Additional(additional))
}

// v1Additional authenticates the format byte along with the caller's
// additional data, so a value cannot be passed off as another format that
// might one day share the key.
func v1Additional(additional []byte) []byte {
	return append([]byte{formatV1}, additional...)
}

// Open decrypts a value produced by Seal with the same additional data, in
// the current format or the legacy one. Use OpenUpgrade where the value can
// be written back, so that legacy values go away.
func (b *Box) Open(sealed, additional []byte) ([]byte, error) {
	plain, _, err := b.open(sealed, additional)
	return plain, err
}

// OpenUpgrade opens sealed as Open does and, when it was in the legacy
// format (sealed directly under the master key), also returns the plaintext
// sealed again in the current format; upgraded is nil for a value that is
// already current. A caller that stores sealed values replaces the stored
// value with upgraded when it is not nil: records then migrate as they are
// read, and the master key stops being an encryption key once none is left.
func (b *Box) OpenUpgrade(sealed, additional []byte) (plain, upgraded []byte, err error) {
	plain, legacy, err := b.open(sealed, additional)
	if err != nil {
		return nil, nil, err
	}
	if legacy {
		upgraded = b.Seal(plain, additional)
	}
	return plain, upgraded, nil
}

// open reports whether sealed was in the legacy format.
func (b *Box) open(sealed, additional []byte) (plain []byte, legacy bool, err error) {
	n := b.aead.NonceSize()
	if len(sealed) >= 1+n+b.aead.Overhead() && sealed[0] == formatV1 {
		body := sealed[1:]
		if out, err := b.aead.Open(nil, body[:n], body[n:], v1Additional(additional)); err == nil {
			return out, false, nil
		}
		// A legacy value whose random nonce starts with formatV1.
	}
	n = b.legacy.NonceSize()
	if len(sealed) < n+b.legacy.Overhead() {
		return nil, false, ErrOpen
	}
	out, err := b.legacy.Open(nil, sealed[:n], sealed[n:], additional)
	if err != nil {
		return nil, false, ErrOpen
	}
	return out, true, nil
}

// MACKey derives an independent 32-byte key for the named purpose.
func (b *Box) MACKey(purpose string) []byte {
	key, err := hkdf.Key(sha256.New, b.master, nil, macInfo(purpose), 32)
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
