package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSealOpen(t *testing.T) {
	b, err := Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sealed := b.Seal([]byte("secret"), []byte("key-1"))
	if bytes.Contains(sealed, []byte("secret")) {
		t.Fatal("sealed value holds the plaintext")
	}
	if got, err := b.Open(sealed, []byte("key-1")); err != nil || string(got) != "secret" {
		t.Fatalf("open = %q, %v", got, err)
	}
	if _, err := b.Open(sealed, []byte("key-2")); !errors.Is(err, ErrOpen) {
		t.Fatal("a sealed value moved to another record opened")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := b.Open(sealed, []byte("key-1")); !errors.Is(err, ErrOpen) {
		t.Fatal("a tampered value opened")
	}
	if _, err := b.Open([]byte("short"), nil); !errors.Is(err, ErrOpen) {
		t.Fatal("a short value opened")
	}
}

// newMaster returns a random master key.
func newMaster(t *testing.T) []byte {
	t.Helper()
	m := make([]byte, 32)
	rand.Read(m)
	return m
}

// rawGCM is AES-256-GCM keyed directly with key, as the code before the
// derived key sealed under the master key.
func rawGCM(t *testing.T, key []byte) cipher.AEAD {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return aead
}

// sealLegacy seals as the code before the derived key did: nonce, then
// ciphertext and tag, under the raw master key, no prefix. firstByte, when
// not negative, is forced into the nonce's first byte.
func sealLegacy(t *testing.T, master, plaintext, additional []byte, firstByte int) []byte {
	t.Helper()
	aead := rawGCM(t, master)
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	if firstByte >= 0 {
		nonce[0] = byte(firstByte)
	}
	return aead.Seal(nonce, nonce, plaintext, additional)
}

// TestLegacyValuesOpenAndUpgrade: a value sealed under the raw master key
// opens, whatever its first byte, and OpenUpgrade hands it back sealed in
// the current format, which then needs no upgrade.
func TestLegacyValuesOpenAndUpgrade(t *testing.T) {
	master := newMaster(t)
	b, err := New(master)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		plaintext  string
		additional string
		firstByte  int
	}{
		{name: "legacy value", plaintext: "secret", additional: "key-1", firstByte: -1},
		{name: "legacy nonce starting with the v1 byte", plaintext: "secret", additional: "key-1", firstByte: int(formatV1)},
		{name: "legacy nonce starting with zero", plaintext: "secret", additional: "key-1", firstByte: 0},
		{name: "legacy empty plaintext", plaintext: "", additional: "key-1", firstByte: int(formatV1)},
		{name: "legacy without additional data", plaintext: "secret", additional: "", firstByte: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ad := []byte(tc.additional)
			old := sealLegacy(t, master, []byte(tc.plaintext), ad, tc.firstByte)
			if got, err := b.Open(old, ad); err != nil || string(got) != tc.plaintext {
				t.Fatalf("Open(legacy) = %q, %v; want %q", got, err, tc.plaintext)
			}
			plain, upgraded, err := b.OpenUpgrade(old, ad)
			if err != nil || string(plain) != tc.plaintext {
				t.Fatalf("OpenUpgrade(legacy) = %q, %v; want %q", plain, err, tc.plaintext)
			}
			if upgraded == nil || upgraded[0] != formatV2 {
				t.Fatalf("OpenUpgrade(legacy) upgraded to %x, want a v2 value", upgraded)
			}
			if got, err := b.Open(upgraded, ad); err != nil || string(got) != tc.plaintext {
				t.Fatalf("Open(upgraded) = %q, %v; want %q", got, err, tc.plaintext)
			}
			if _, again, err := b.OpenUpgrade(upgraded, ad); err != nil || again != nil {
				t.Fatalf("OpenUpgrade(upgraded) = %x, %v; want no upgrade", again, err)
			}
			if _, err := b.Open(old, []byte("other")); !errors.Is(err, ErrOpen) {
				t.Fatalf("legacy value opened with other additional data: %v", err)
			}
		})
	}
}

// TestSealUsesDerivedKey: a new value says its format and does not open
// under the raw master key, however it is cut; it opens through the box and
// needs no upgrade.
func TestSealUsesDerivedKey(t *testing.T) {
	master := newMaster(t)
	b, err := New(master)
	if err != nil {
		t.Fatal(err)
	}
	ad := []byte("key-1")
	sealed := b.Seal([]byte("secret"), ad)
	if sealed[0] != formatV2 {
		t.Fatalf("sealed value starts with %#x, want the format byte %#x", sealed[0], formatV2)
	}
	raw := rawGCM(t, master)
	n := raw.NonceSize()
	h := 1 + KeyIDLen
	for _, try := range []struct {
		name              string
		nonce, body, data []byte
	}{
		{name: "whole value, legacy layout", nonce: sealed[:n], body: sealed[n:], data: ad},
		{name: "after the format byte", nonce: sealed[1 : 1+n], body: sealed[1+n:], data: ad},
		{name: "after the format byte, format authenticated", nonce: sealed[1 : 1+n], body: sealed[1+n:], data: append([]byte{formatV1}, ad...)},
		{name: "after the key id", nonce: sealed[h : h+n], body: sealed[h+n:], data: ad},
		{name: "after the key id, header authenticated", nonce: sealed[h : h+n], body: sealed[h+n:], data: append(bytes.Clone(sealed[:h]), ad...)},
	} {
		if _, err := raw.Open(nil, try.nonce, try.body, try.data); err == nil {
			t.Errorf("a new value opened under the raw master key (%s)", try.name)
		}
	}
	plain, upgraded, err := b.OpenUpgrade(sealed, ad)
	if err != nil || string(plain) != "secret" || upgraded != nil {
		t.Fatalf("OpenUpgrade(new) = %q, %x, %v; want secret, no upgrade", plain, upgraded, err)
	}
	other, err := New(newMaster(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Open(sealed, ad); !errors.Is(err, ErrOpen) {
		t.Fatalf("a value opened under another master key: %v", err)
	}
}

// TestTamperedValuesFail: changing any part of a value, in either format,
// or the additional data, fails with ErrOpen.
func TestTamperedValuesFail(t *testing.T) {
	master := newMaster(t)
	b, err := New(master)
	if err != nil {
		t.Fatal(err)
	}
	ad := []byte("key-1")
	current := b.Seal([]byte("secret"), ad)
	legacy := sealLegacy(t, master, []byte("secret"), ad, int(formatV1))
	flip := func(i int) func([]byte) []byte {
		return func(v []byte) []byte {
			v = bytes.Clone(v)
			v[(i+len(v))%len(v)] ^= 0x01
			return v
		}
	}
	tests := []struct {
		name   string
		value  []byte
		change func([]byte) []byte
		ad     string
	}{
		{name: "current format byte", value: current, change: flip(0), ad: "key-1"},
		{name: "current key id", value: current, change: flip(1), ad: "key-1"},
		{name: "current nonce", value: current, change: flip(1 + KeyIDLen), ad: "key-1"},
		{name: "current ciphertext", value: current, change: flip(1 + KeyIDLen + 12), ad: "key-1"},
		{name: "current tag", value: current, change: flip(-1), ad: "key-1"},
		{name: "current truncated", value: current, change: func(v []byte) []byte { return v[:len(v)-1] }, ad: "key-1"},
		{name: "current extended", value: current, change: func(v []byte) []byte { return append(bytes.Clone(v), 0) }, ad: "key-1"},
		{name: "current without its format byte", value: current, change: func(v []byte) []byte { return v[1:] }, ad: "key-1"},
		{name: "current without its key id", value: current, change: func(v []byte) []byte { return append([]byte{formatV2}, v[1+KeyIDLen:]...) }, ad: "key-1"},
		{name: "current as v1", value: current, change: func(v []byte) []byte { return append([]byte{formatV1}, v[1+KeyIDLen:]...) }, ad: "key-1"},
		{name: "current other additional data", value: current, change: bytes.Clone, ad: "key-2"},
		{name: "legacy nonce", value: legacy, change: flip(0), ad: "key-1"},
		{name: "legacy ciphertext", value: legacy, change: flip(12), ad: "key-1"},
		{name: "legacy tag", value: legacy, change: flip(-1), ad: "key-1"},
		{name: "legacy given a format byte", value: legacy, change: func(v []byte) []byte { return append([]byte{formatV1}, v...) }, ad: "key-1"},
		{name: "legacy other additional data", value: legacy, change: bytes.Clone, ad: "key-2"},
		{name: "empty", value: nil, change: bytes.Clone, ad: ""},
		{name: "format byte only", value: []byte{formatV1}, change: bytes.Clone, ad: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.change(tc.value)
			if got, err := b.Open(v, []byte(tc.ad)); !errors.Is(err, ErrOpen) {
				t.Fatalf("Open = %q, %v; want ErrOpen", got, err)
			}
			if got, up, err := b.OpenUpgrade(v, []byte(tc.ad)); !errors.Is(err, ErrOpen) || up != nil {
				t.Fatalf("OpenUpgrade = %q, %x, %v; want ErrOpen", got, up, err)
			}
		})
	}
}

// TestKeysAreSeparate: no MAC purpose names the sealing key, and MAC keys
// are derived as before, so tokens signed by an older version verify.
func TestKeysAreSeparate(t *testing.T) {
	master := newMaster(t)
	b, err := New(master)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(sealKeyInfo, macInfo("")) {
		t.Fatalf("seal key label %q is a MAC label (%q + purpose)", sealKeyInfo, macInfo(""))
	}
	sealed := b.Seal([]byte("secret"), nil)
	for _, purpose := range []string{"cursor", "seal", "seal/aes-256-gcm/v1", "/seal/aes-256-gcm/v1", ""} {
		t.Run("purpose "+purpose, func(t *testing.T) {
			mac := b.MACKey(purpose)
			if bytes.Equal(mac, master) {
				t.Fatalf("MACKey(%q) is the master key", purpose)
			}
			aead := rawGCM(t, mac)
			n := aead.NonceSize()
			if _, err := aead.Open(nil, sealed[1:1+n], sealed[1+n:], []byte{formatV1}); err == nil {
				t.Fatalf("a sealed value opened under MACKey(%q)", purpose)
			}
			want, err := hkdf.Key(sha256.New, master, nil, "pictor "+purpose, 32)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(mac, want) {
				t.Fatalf("MACKey(%q) changed derivation", purpose)
			}
		})
	}
}

func TestLoadCreatesOnceWithMode0600(t *testing.T) {
	dir := t.TempDir()
	a, err := Load("", dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info.Mode(), err)
	}
	b, err := Load("", dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(a.Seal([]byte("x"), nil), nil); err != nil {
		t.Fatal("a second load produced a different key")
	}
}

// TestLoadFreshDirConcurrently is a hammer: many goroutines load the same
// fresh data directory at once, round after round. Every one must get the
// key that ends up in the file (none may read it empty or half written),
// and no temporary file may be left behind.
func TestLoadFreshDirConcurrently(t *testing.T) {
	const rounds, loaders = 20, 16
	for round := range rounds {
		dir := filepath.Join(t.TempDir(), "data")
		start := make(chan struct{})
		boxes := make([]*Box, loaders)
		errs := make([]error, loaders)
		var wg sync.WaitGroup
		for i := range loaders {
			wg.Go(func() {
				<-start
				boxes[i], errs[i] = Load("", dir)
			})
		}
		close(start)
		wg.Wait()
		raw, err := os.ReadFile(filepath.Join(dir, KeyFile))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		want, err := ParseKey(strings.TrimSpace(string(raw)))
		if err != nil {
			t.Fatalf("round %d: key file %q: %v", round, raw, err)
		}
		for i := range loaders {
			if errs[i] != nil {
				t.Fatalf("round %d: loader %d: %v", round, i, errs[i])
			}
			if !bytes.Equal(boxes[i].master, want) {
				t.Fatalf("round %d: loader %d got another key than the file's", round, i)
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != KeyFile {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("round %d: data directory holds %v, want only %s", round, names, KeyFile)
		}
		if info, err := entries[0].Info(); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("round %d: key file mode %v, %v; want 0600", round, info.Mode(), err)
		}
	}
}

func TestParseKey(t *testing.T) {
	hexKey := strings.Repeat("0f", 32)
	for _, s := range []string{hexKey, "Dw8PDw8PDw8PDw8PDw8PDw8PDw8PDw8PDw8PDw8PDw8=", "Dw8PDw8PDw8PDw8PDw8PDw8PDw8PDw8PDw8PDw8PDw8"} {
		k, err := ParseKey(s)
		if err != nil || len(k) != 32 || k[0] != 0x0f {
			t.Fatalf("ParseKey(%q) = %x, %v", s, k, err)
		}
	}
	for _, s := range []string{"", "abc", strings.Repeat("0f", 31), strings.Repeat("zz", 32)} {
		if _, err := ParseKey(s); err == nil {
			t.Fatalf("ParseKey(%q) accepted", s)
		}
	}
}
