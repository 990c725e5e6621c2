package seal

import (
	"bytes"
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

	"github.com/pictorhq/pictor/origin/durable"
)

// Key files inside the data directory: the current master key, and the
// previous ones (one a line) that still open what they sealed (Ring).
const (
	KeyFile         = "master.key"
	PreviousKeyFile = "master.key.previous"
)

// Sealed formats. A value Seal writes is formatV2, the key id of the
// master key it was sealed under (KeyIDLen bytes, keyIDInfo), the nonce,
// then the ciphertext and tag, under a key derived from that master key
// with HKDF (sealKeyInfo); the format byte and the key id are
// authenticated with the caller's additional data. formatV1 values, from
// before the key id, are the same without it: they name no key, so Open
// tries each. A legacy value, written before the key was derived, is the
// nonce, ciphertext and tag under the master key itself, with no prefix;
// its first byte is random, so it may equal a format byte by chance (one
// value in 256), which is why Open falls back to the legacy reading when
// the other fails.
const (
	formatV1 byte = 0x01
	formatV2 byte = 0x02
)

// KeyIDLen is the length of a key id in a sealed value.
const KeyIDLen = 4

// sealKeyInfo is the HKDF info of the encryption key. MAC keys use
// macInfo(purpose), which always starts with "pictor " (a space); this label
// has a '/' there, so no purpose can name the encryption key.
const sealKeyInfo = "pictor/seal/aes-256-gcm/v1"

// keyIDInfo is the HKDF info of a master key's id: a public name for the
// key, which says nothing of it. Like sealKeyInfo, no MAC purpose names it.
const keyIDInfo = "pictor/seal/key-id/v2"

// MaxKeys bounds the master keys a Box holds (the current one, the
// previous and the next ones): values in the older formats are tried under
// each.
const MaxKeys = 8

// macInfo is the HKDF info of a MAC key. It is what it has always been, so
// that tokens signed before the encryption key was derived still verify.
func macInfo(purpose string) string { return "pictor " + purpose }

// Box seals values under the current master key and opens values sealed
// under it or under any other key of its Ring, which is what lets a master
// key be replaced without downtime (see doc.go).
type Box struct {
	// keys are the master keys, the current one first: it seals and signs;
	// every one opens and verifies.
	keys []*masterKey
	// master is the current master key.
	master []byte
}

// Ring is the master keys of a Box, 32 bytes each.
type Ring struct {
	// Current seals every new value and signs every new token.
	Current []byte
	// Previous keys open what they sealed and verify what they signed;
	// Box.OpenUpgrade seals their values again under Current, so that they
	// can be dropped once none is left (PICTOR_MASTER_KEY_PREVIOUS).
	Previous [][]byte
	// Next keys open and verify too, but their values are left as they
	// are: while origins sharing a store move to a new master key, those
	// still on the old one accept the new one as Next, and do not seal
	// the others' values back under the old key (PICTOR_MASTER_KEY_NEXT).
	Next [][]byte
}

// The roles of a Box's keys.
const (
	roleCurrent = iota
	rolePrevious
	roleNext
)

// masterKey is one master key and what is derived from it.
type masterKey struct {
	id   [KeyIDLen]byte
	role int
	// aead seals and opens v1 and v2 values, under the derived key.
	aead cipher.AEAD
	// legacy opens values sealed directly under the master key; nothing is
	// sealed with it any more.
	legacy cipher.AEAD
	master []byte
}

// New returns a Box whose current master key is current and which also
// opens what the previous keys sealed (a Ring without next keys).
func New(current []byte, previous ...[]byte) (*Box, error) {
	return NewRing(Ring{Current: current, Previous: previous})
}

// NewRing returns the Box of r. A key given twice counts once, in the
// first role it has (current, then previous, then next).
func NewRing(r Ring) (*Box, error) {
	if len(r.Current) != 32 {
		return nil, fmt.Errorf("master key must be 32 bytes, got %d", len(r.Current))
	}
	b := &Box{master: bytes.Clone(r.Current)}
	add := func(role int, what string, keys ...[]byte) error {
		for i, m := range keys {
			if len(m) != 32 {
				return fmt.Errorf("%s master key %d must be 32 bytes, got %d", what, i+1, len(m))
			}
			if b.has(m) {
				continue
			}
			k, err := newMasterKey(m, role)
			if err != nil {
				return err
			}
			for _, o := range b.keys {
				if o.id == k.id {
					// Two keys in 2^32 pairs: make another key.
					return fmt.Errorf("%w (%s)", ErrKeyIDClash, k.name())
				}
			}
			b.keys = append(b.keys, k)
		}
		return nil
	}
	if err := errors.Join(add(roleCurrent, "current", r.Current), add(rolePrevious, "previous", r.Previous...),
		add(roleNext, "next", r.Next...)); err != nil {
		return nil, err
	}
	if len(b.keys) > MaxKeys {
		return nil, fmt.Errorf("%d master keys, at most %d", len(b.keys), MaxKeys)
	}
	return b, nil
}

func (b *Box) has(master []byte) bool {
	for _, k := range b.keys {
		if hmac.Equal(k.master, master) {
			return true
		}
	}
	return false
}

func newMasterKey(master []byte, role int) (*masterKey, error) {
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
	id, err := hkdf.Key(sha256.New, master, nil, keyIDInfo, KeyIDLen)
	if err != nil {
		return nil, fmt.Errorf("derive key id: %w", err)
	}
	k := &masterKey{role: role, aead: aead, legacy: legacy, master: bytes.Clone(master)}
	copy(k.id[:], id)
	return k, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// KeyID names the current master key: 8 hex digits, the key id its
// values carry. It says nothing of the key; logs may show it.
func (b *Box) KeyID() string { return b.keys[0].name() }

// PreviousKeyIDs names the previous master keys, in the order given.
func (b *Box) PreviousKeyIDs() []string { return b.ids(rolePrevious) }

// NextKeyIDs names the next master keys, in the order given.
func (b *Box) NextKeyIDs() []string { return b.ids(roleNext) }

func (b *Box) ids(role int) []string {
	ids := []string{}
	for _, k := range b.keys {
		if k.role == role {
			ids = append(ids, k.name())
		}
	}
	return ids
}

func (k *masterKey) name() string { return hex.EncodeToString(k.id[:]) }

// Load returns the Box of LoadKeys with only the current key given in the
// environment: env (PICTOR_MASTER_KEY: 64 hex digits or base64 of 32
// bytes) or, when env is empty, the key stored in dataDir, generated there
// with mode 0600 on first use; the previous keys of dataDir's
// PreviousKeyFile when it exists.
func Load(env, dataDir string) (*Box, error) { return LoadKeys(Keys{Current: env}, dataDir) }

// Keys are the master keys a process is given in its environment, each
// written as ParseKey reads it.
type Keys struct {
	// Current is PICTOR_MASTER_KEY; empty reads dataDir's KeyFile.
	Current string
	// Previous is PICTOR_MASTER_KEY_PREVIOUS, keys separated by commas;
	// those of dataDir's PreviousKeyFile are added.
	Previous string
	// Next is PICTOR_MASTER_KEY_NEXT, keys separated by commas.
	Next string
}

// LoadKeys returns the Box of the keys given and those of dataDir. The
// current key is keys.Current or, when it is empty, dataDir's KeyFile,
// created with mode 0600 on first use: processes that load the same fresh
// dataDir at once all get the same key. The previous keys are those of
// keys.Previous and of dataDir's PreviousKeyFile (one a line) when it
// exists; the next keys are those of keys.Next. An error names the
// variable or file that is wrong, never a key.
func LoadKeys(keys Keys, dataDir string) (*Box, error) {
	var r Ring
	var err error
	if keys.Current != "" {
		if r.Current, err = ParseKey(keys.Current); err != nil {
			return nil, fmt.Errorf("PICTOR_MASTER_KEY: %w", err)
		}
	} else if r.Current, err = loadKeyFile(filepath.Join(dataDir, KeyFile)); err != nil {
		return nil, err
	}
	if r.Previous, err = ParseKeys(keys.Previous); err != nil {
		return nil, fmt.Errorf("PICTOR_MASTER_KEY_PREVIOUS: %w", err)
	}
	if r.Next, err = ParseKeys(keys.Next); err != nil {
		return nil, fmt.Errorf("PICTOR_MASTER_KEY_NEXT: %w", err)
	}
	path := filepath.Join(dataDir, PreviousKeyFile)
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		fromFile, err := ParseKeys(string(raw))
		if err != nil {
			return nil, fmt.Errorf("previous master keys %s: %w", path, err)
		}
		r.Previous = append(r.Previous, fromFile...)
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("previous master keys: %w", err)
	}
	return NewRing(r)
}

// loadKeyFile reads the master key at path, creating it on first use.
func loadKeyFile(path string) ([]byte, error) {
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
	return key, nil
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
	if err := durable.SyncDir(dir); err != nil {
		return nil, fmt.Errorf("sync key directory: %w", err)
	}
	return text, nil
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

// ParseKeys decodes a list of keys as ParseKey does, separated by commas
// or line breaks (PICTOR_MASTER_KEY_PREVIOUS and _NEXT, PreviousKeyFile);
// blanks around a key and empty entries are ignored, so "" is no key. An
// error says which entry is wrong, never what it holds.
func ParseKeys(s string) ([][]byte, error) {
	var keys [][]byte
	n := 0
	for entry := range strings.FieldsFuncSeq(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		n++
		if n > MaxKeys {
			return nil, fmt.Errorf("more than %d keys", MaxKeys)
		}
		k, err := ParseKey(entry)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", n, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// Seal encrypts plaintext under the current master key, in the current
// format; additional binds the result to its context (for example the key
// id) so a sealed value cannot be moved to another record.
func (b *Box) Seal(plaintext, additional []byte) []byte {
	k := b.keys[0]
	n := k.aead.NonceSize()
	head := 1 + KeyIDLen
	out := make([]byte, head+n, head+n+len(plaintext)+k.aead.Overhead())
	out[0] = formatV2
	copy(out[1:head], k.id[:])
	nonce := out[head:]
	rand.Read(nonce)
	return k.aead.Seal(out, nonce, plaintext, v2Additional(k.id, additional))
}

// v2Additional authenticates the format byte and the key id along with the
// caller's additional data, so a value cannot be passed off as another
// format, or as another key's.
func v2Additional(id [KeyIDLen]byte, additional []byte) []byte {
	out := make([]byte, 0, 1+KeyIDLen+len(additional))
	out = append(out, formatV2)
	out = append(out, id[:]...)
	return append(out, additional...)
}

// v1Additional is what v1 values authenticated: the format byte and the
// caller's additional data.
func v1Additional(additional []byte) []byte {
	return append([]byte{formatV1}, additional...)
}

// Open decrypts a value produced by Seal with the same additional data,
// under any master key of the box, in the current format or an older one.
// Use OpenUpgrade where the value can be written back, so that values
// under previous keys and in older formats go away. A value that opens
// under no key is ErrOpen; when it names a master key the box does not
// hold, the error is also ErrUnknownKey (a *UnknownKeyError).
func (b *Box) Open(sealed, additional []byte) ([]byte, error) {
	plain, _, err := b.open(sealed, additional)
	return plain, err
}

// OpenUpgrade opens sealed as Open does and, unless it was sealed under
// the current master key (or a next one) in the current format, also
// returns the plaintext sealed again under the current key; upgraded is
// nil for a value that is to stay as it is. A caller that stores sealed
// values replaces the stored value with upgraded when it is not nil:
// records then migrate as they are read (and Reseal passes migrate the
// rest), so that a previous master key can be dropped once none is left.
func (b *Box) OpenUpgrade(sealed, additional []byte) (plain, upgraded []byte, err error) {
	plain, keep, err := b.open(sealed, additional)
	if err != nil {
		return nil, nil, err
	}
	if !keep {
		upgraded = b.Seal(plain, additional)
	}
	return plain, upgraded, nil
}

// open reports whether sealed is to be kept as it is: a v2 value of the
// current key, or of a next key. A v2 value names its key, so it costs one
// decryption; v1 and legacy values are tried under each key, the current
// one first.
func (b *Box) open(sealed, additional []byte) (plain []byte, keep bool, err error) {
	var unknown []byte // the key id of a v2 value under no key of the box
	head := 1 + KeyIDLen
	if len(sealed) >= head+b.keys[0].aead.NonceSize()+b.keys[0].aead.Overhead() && sealed[0] == formatV2 {
		var id [KeyIDLen]byte
		copy(id[:], sealed[1:head])
		k := b.key(id)
		if k != nil {
			n := k.aead.NonceSize()
			body := sealed[head:]
			if out, err := k.aead.Open(nil, body[:n], body[n:], v2Additional(id, additional)); err == nil {
				return out, k.role != rolePrevious, nil
			}
		} else {
			unknown = id[:]
		}
		// Tampered, or a legacy value whose random nonce starts with
		// formatV2.
	}
	if len(sealed) > 0 && sealed[0] == formatV1 {
		for _, k := range b.keys {
			n := k.aead.NonceSize()
			if len(sealed) < 1+n+k.aead.Overhead() {
				break
			}
			body := sealed[1:]
			if out, err := k.aead.Open(nil, body[:n], body[n:], v1Additional(additional)); err == nil {
				return out, false, nil
			}
		}
		// A legacy value whose random nonce starts with formatV1.
	}
	for _, k := range b.keys {
		n := k.legacy.NonceSize()
		if len(sealed) < n+k.legacy.Overhead() {
			break
		}
		if out, err := k.legacy.Open(nil, sealed[:n], sealed[n:], additional); err == nil {
			return out, false, nil
		}
	}
	if unknown != nil {
		return nil, false, &UnknownKeyError{ID: hex.EncodeToString(unknown)}
	}
	return nil, false, ErrOpen
}

// key returns the box's master key with the id, nil when it has none.
func (b *Box) key(id [KeyIDLen]byte) *masterKey {
	for _, k := range b.keys {
		if k.id == id {
			return k
		}
	}
	return nil
}

// MACKey derives an independent 32-byte key for the named purpose from the
// current master key: what new tokens are signed with.
func (b *Box) MACKey(purpose string) []byte {
	return macKey(b.master, purpose)
}

// MACKeys derives the purpose's key from every master key, the current
// one first: a token signed under any of them verifies.
func (b *Box) MACKeys(purpose string) [][]byte {
	keys := make([][]byte, len(b.keys))
	for i, k := range b.keys {
		keys[i] = macKey(k.master, purpose)
	}
	return keys
}

func macKey(master []byte, purpose string) []byte {
	key, err := hkdf.Key(sha256.New, master, nil, macInfo(purpose), 32)
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
