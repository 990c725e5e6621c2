package seal

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sealV1 seals as the code before the key id did: formatV1, nonce,
// ciphertext and tag under the key derived from master.
func sealV1(t *testing.T, master, plaintext, additional []byte) []byte {
	t.Helper()
	k, err := newMasterKey(master, roleCurrent)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, k.aead.NonceSize())
	rand.Read(nonce)
	out := append([]byte{formatV1}, nonce...)
	return k.aead.Seal(out, nonce, plaintext, v1Additional(additional))
}

func mustNew(t *testing.T, current []byte, previous ...[]byte) *Box {
	t.Helper()
	b, err := New(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPreviousKeysOpenAndUpgrade: a box whose current key is NEW and whose
// previous key is OLD opens what OLD sealed, in every format, and
// OpenUpgrade hands it back sealed under NEW (its key id says so), which a
// box holding NEW alone opens; that box cannot open OLD's values, and says
// which key they need.
func TestPreviousKeysOpenAndUpgrade(t *testing.T) {
	oldKey, newKey := newMaster(t), newMaster(t)
	oldBox, rotated, newOnly := mustNew(t, oldKey), mustNew(t, newKey, oldKey), mustNew(t, newKey)
	ad := []byte("key-1")
	legacyV2 := sealLegacy(t, oldKey, []byte("secret"), ad, int(formatV2))
	tests := []struct {
		name  string
		value []byte
		// needs is the key id the value names (v2), which a box without
		// that key says it needs; "" for a value naming none.
		needs string
		// current: the value is the current key's (no failure to check).
		current bool
	}{
		{name: "v2 under the previous key", value: oldBox.Seal([]byte("secret"), ad), needs: oldBox.KeyID()},
		{name: "v1 under the previous key", value: sealV1(t, oldKey, []byte("secret"), ad)},
		{name: "legacy under the previous key", value: sealLegacy(t, oldKey, []byte("secret"), ad, -1)},
		// Read as v2, it names a key no box holds: the error cannot tell.
		{name: "legacy under the previous key, nonce starting with the v2 byte", value: legacyV2, needs: hex.EncodeToString(legacyV2[1 : 1+KeyIDLen])},
		{name: "v1 under the current key", value: sealV1(t, newKey, []byte("secret"), ad), current: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plain, upgraded, err := rotated.OpenUpgrade(tc.value, ad)
			if err != nil || string(plain) != "secret" {
				t.Fatalf("OpenUpgrade = %q, %v; want secret", plain, err)
			}
			if upgraded == nil || upgraded[0] != formatV2 || hex.EncodeToString(upgraded[1:1+KeyIDLen]) != rotated.KeyID() {
				t.Fatalf("upgraded to %x, want a v2 value of key %s", upgraded, rotated.KeyID())
			}
			if got, err := newOnly.Open(upgraded, ad); err != nil || string(got) != "secret" {
				t.Fatalf("the upgraded value under the new key alone: %q, %v", got, err)
			}
			if _, again, err := rotated.OpenUpgrade(upgraded, ad); err != nil || again != nil {
				t.Fatalf("OpenUpgrade(upgraded) = %x, %v; want no upgrade", again, err)
			}
			if tc.current {
				return
			}
			_, err = newOnly.Open(tc.value, ad)
			if !errors.Is(err, ErrOpen) {
				t.Fatalf("the new key alone opened the old key's value: %v", err)
			}
			var unknown *UnknownKeyError
			if named := tc.needs != ""; named != errors.As(err, &unknown) || named != errors.Is(err, ErrUnknownKey) {
				t.Fatalf("error %v: an unknown key error %v, want %v", err, !named, named)
			}
			if tc.needs != "" && (unknown.ID != tc.needs || !unknown.Unavailable() || !strings.Contains(err.Error(), tc.needs)) {
				t.Fatalf("error %v names key %q, want %s, marked unavailable", err, unknown.ID, tc.needs)
			}
		})
	}
}

// TestNextKeys: in the first phase of a rotation (current OLD, next NEW)
// values are sealed under OLD, which the origins not yet restarted open;
// what NEW sealed (origins already in the second phase) opens and is left
// under NEW, where a box that had NEW as a previous key would seal it
// back under OLD, and the two phases would rewrite each other's values.
func TestNextKeys(t *testing.T) {
	oldKey, newKey := newMaster(t), newMaster(t)
	phase1, err := NewRing(Ring{Current: oldKey, Next: [][]byte{newKey}})
	if err != nil {
		t.Fatal(err)
	}
	phase2, oldOnly := mustNew(t, newKey, oldKey), mustNew(t, oldKey)
	if phase1.KeyID() != oldOnly.KeyID() || phase2.KeyID() == phase1.KeyID() {
		t.Fatalf("key ids: phase 1 %s, phase 2 %s, old %s", phase1.KeyID(), phase2.KeyID(), oldOnly.KeyID())
	}
	if next, prev := phase1.NextKeyIDs(), phase1.PreviousKeyIDs(); len(next) != 1 || next[0] != phase2.KeyID() || len(prev) != 0 {
		t.Fatalf("phase 1 next keys %v, previous %v; want [%s], []", next, prev, phase2.KeyID())
	}
	v := phase1.Seal([]byte("x"), nil)
	if got, err := oldOnly.Open(v, nil); err != nil || string(got) != "x" {
		t.Fatalf("phase 1 sealed what the old key alone cannot open: %v", err)
	}
	fromPhase2 := phase2.Seal([]byte("y"), nil)
	if got, up, err := phase1.OpenUpgrade(fromPhase2, nil); err != nil || string(got) != "y" || up != nil {
		t.Fatalf("phase 1 OpenUpgrade of phase 2's value = %q, %x, %v; want y, left as it is", got, up, err)
	}
	if _, up, err := phase2.OpenUpgrade(v, nil); err != nil || up == nil {
		t.Fatalf("phase 2 OpenUpgrade of phase 1's value = %x, %v; want it sealed again", up, err)
	}
	// A next key's MACs verify.
	if keys := phase1.MACKeys("cursor"); len(keys) != 2 || !bytes.Equal(keys[1], phase2.MACKey("cursor")) {
		t.Fatal("phase 1 does not verify what phase 2 signs")
	}
	// A key given in two roles counts once, in the first.
	both, err := NewRing(Ring{Current: oldKey, Previous: [][]byte{newKey}, Next: [][]byte{newKey, oldKey}})
	if err != nil || len(both.PreviousKeyIDs()) != 1 || len(both.NextKeyIDs()) != 0 {
		t.Fatalf("NewRing with repeated keys: %v, previous %v, next %v", err, both.PreviousKeyIDs(), both.NextKeyIDs())
	}
}

// TestMACKeys: the current key signs (MACKey), every key verifies
// (MACKeys, current first), and each key's MAC key is the one a box of
// that key alone derives, so tokens signed before the rotation verify.
func TestMACKeys(t *testing.T) {
	oldKey, newKey := newMaster(t), newMaster(t)
	rotated := mustNew(t, newKey, oldKey)
	keys := rotated.MACKeys("cursor")
	if len(keys) != 2 || !bytes.Equal(keys[0], rotated.MACKey("cursor")) ||
		!bytes.Equal(keys[0], mustNew(t, newKey).MACKey("cursor")) || !bytes.Equal(keys[1], mustNew(t, oldKey).MACKey("cursor")) {
		t.Fatal("MACKeys is not the current key's MAC key then the previous one's")
	}
	if bytes.Equal(keys[0], keys[1]) || bytes.Equal(keys[0], rotated.MACKey("other")) {
		t.Fatal("MAC keys of two master keys or two purposes are equal")
	}
}

func TestNewKeyLists(t *testing.T) {
	a, b, c := newMaster(t), newMaster(t), newMaster(t)
	tests := []struct {
		name     string
		current  []byte
		previous [][]byte
		keys     int
		ok       bool
	}{
		{name: "current alone", current: a, keys: 1, ok: true},
		{name: "two previous", current: a, previous: [][]byte{b, c}, keys: 3, ok: true},
		{name: "current repeated as previous", current: a, previous: [][]byte{b, a, b}, keys: 2, ok: true},
		{name: "short current", current: a[:31], ok: false},
		{name: "short previous", current: a, previous: [][]byte{b[:16]}, ok: false},
		{name: "too many", current: a, previous: func() [][]byte {
			var ks [][]byte
			for range MaxKeys {
				ks = append(ks, newMaster(t))
			}
			return ks
		}(), ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			box, err := New(tc.current, tc.previous...)
			if tc.ok != (err == nil) {
				t.Fatalf("New = %v, want ok %v", err, tc.ok)
			}
			if err == nil && 1+len(box.PreviousKeyIDs()) != tc.keys {
				t.Fatalf("box holds %d keys, want %d", 1+len(box.PreviousKeyIDs()), tc.keys)
			}
		})
	}
}

func TestParseKeys(t *testing.T) {
	hexA, hexB := strings.Repeat("0a", 32), strings.Repeat("0b", 32)
	b64B := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x0b}, 32))
	tests := []struct {
		name  string
		in    string
		first []byte // the first key's first byte
		n     int
		ok    bool
	}{
		{name: "empty", in: "", n: 0, ok: true},
		{name: "blanks", in: " \n , \r\n", n: 0, ok: true},
		{name: "one", in: hexA, first: []byte{0x0a}, n: 1, ok: true},
		{name: "comma list with blanks", in: " " + hexA + " , " + b64B + ",", first: []byte{0x0a}, n: 2, ok: true},
		{name: "file lines", in: hexB + "\r\n" + hexA + "\n\n", first: []byte{0x0b}, n: 2, ok: true},
		{name: "a bad entry", in: hexA + ",nope", ok: false},
		{name: "short", in: strings.Repeat("0a", 31), ok: false},
		{name: "two keys on one line", in: hexA + " " + hexB, ok: false},
		{name: "too many", in: strings.Repeat(hexA+",", MaxKeys+1), ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := ParseKeys(tc.in)
			if tc.ok != (err == nil) {
				t.Fatalf("ParseKeys = %v, want ok %v", err, tc.ok)
			}
			if err != nil {
				if strings.Contains(err.Error(), "0a0a") || strings.Contains(err.Error(), "nope") {
					t.Fatalf("the error %q repeats a key", err)
				}
				return
			}
			if len(keys) != tc.n || (tc.n > 0 && keys[0][0] != tc.first[0]) {
				t.Fatalf("ParseKeys = %x, want %d keys starting %x", keys, tc.n, tc.first)
			}
		})
	}
}

// TestLoadKeys: the current key comes from the variable or the key file,
// the previous ones from the variable and the previous key file together;
// a bad previous key fails the load naming where it was, not the key.
func TestLoadKeys(t *testing.T) {
	oldKey, newKey, olderKey := newMaster(t), newMaster(t), newMaster(t)
	oldBox, olderBox := mustNew(t, oldKey), mustNew(t, olderKey)
	sealedOld, sealedOlder := oldBox.Seal([]byte("old"), nil), olderBox.Seal([]byte("older"), nil)
	write := func(t *testing.T, dir, name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("variables", func(t *testing.T) {
		b, err := LoadKeys(Keys{Current: hex.EncodeToString(newKey), Previous: hex.EncodeToString(oldKey) + "," + base64.StdEncoding.EncodeToString(olderKey)}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if b.KeyID() != mustNew(t, newKey).KeyID() {
			t.Fatal("the current key is not PICTOR_MASTER_KEY's")
		}
		for _, v := range [][]byte{sealedOld, sealedOlder} {
			if _, err := b.Open(v, nil); err != nil {
				t.Fatalf("a previous key's value: %v", err)
			}
		}
	})
	t.Run("files", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, KeyFile, hex.EncodeToString(newKey)+"\n")
		write(t, dir, PreviousKeyFile, hex.EncodeToString(oldKey)+"\n")
		b, err := LoadKeys(Keys{Previous: hex.EncodeToString(olderKey)}, dir)
		if err != nil {
			t.Fatal(err)
		}
		if b.KeyID() != mustNew(t, newKey).KeyID() {
			t.Fatal("the current key is not the key file's")
		}
		for _, v := range [][]byte{sealedOld, sealedOlder} {
			if _, err := b.Open(v, nil); err != nil {
				t.Fatalf("a previous key's value: %v", err)
			}
		}
		if b, err := Load("", dir); err != nil || len(b.PreviousKeyIDs()) != 1 {
			t.Fatalf("Load reads the previous key file: %v", err)
		}
	})
	t.Run("bad previous key file", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, PreviousKeyFile, "zz"+hex.EncodeToString(oldKey)[2:]+"\n")
		_, err := LoadKeys(Keys{Current: hex.EncodeToString(newKey)}, dir)
		if err == nil || !strings.Contains(err.Error(), PreviousKeyFile) || strings.Contains(err.Error(), hex.EncodeToString(oldKey)[2:]) {
			t.Fatalf("LoadKeys = %v, want an error naming %s and not the key", err, PreviousKeyFile)
		}
	})
	t.Run("next", func(t *testing.T) {
		b, err := LoadKeys(Keys{Current: hex.EncodeToString(oldKey), Next: hex.EncodeToString(newKey)}, t.TempDir())
		if err != nil || len(b.NextKeyIDs()) != 1 || b.NextKeyIDs()[0] != mustNew(t, newKey).KeyID() {
			t.Fatalf("LoadKeys with a next key: %v", err)
		}
	})
	t.Run("bad next variable", func(t *testing.T) {
		_, err := LoadKeys(Keys{Current: hex.EncodeToString(newKey), Next: hex.EncodeToString(oldKey) + ",x"}, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "PICTOR_MASTER_KEY_NEXT") || !strings.Contains(err.Error(), "key 2") {
			t.Fatalf("LoadKeys = %v, want an error naming PICTOR_MASTER_KEY_NEXT's key 2", err)
		}
	})
	t.Run("bad previous variable", func(t *testing.T) {
		_, err := LoadKeys(Keys{Current: hex.EncodeToString(newKey), Previous: "short"}, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "PICTOR_MASTER_KEY_PREVIOUS") {
			t.Fatalf("LoadKeys = %v, want an error naming PICTOR_MASTER_KEY_PREVIOUS", err)
		}
	})
}

func FuzzParseKeys(f *testing.F) {
	f.Add("")
	f.Add(strings.Repeat("0a", 32))
	f.Add(strings.Repeat("0a", 32) + "," + base64.RawURLEncoding.EncodeToString(make([]byte, 32)))
	f.Add(" \n" + strings.Repeat("ff", 32) + "\r\n,")
	f.Fuzz(func(t *testing.T, s string) {
		keys, err := ParseKeys(s)
		if err != nil {
			return
		}
		if len(keys) > MaxKeys {
			t.Fatalf("%d keys accepted", len(keys))
		}
		parts := make([]string, len(keys))
		for i, k := range keys {
			if len(k) != 32 {
				t.Fatalf("key %d has %d bytes", i, len(k))
			}
			parts[i] = hex.EncodeToString(k)
		}
		again, err := ParseKeys(strings.Join(parts, ","))
		if err != nil || len(again) != len(keys) {
			t.Fatalf("the keys written again do not parse: %v", err)
		}
		for i := range keys {
			if !bytes.Equal(keys[i], again[i]) {
				t.Fatalf("key %d changed", i)
			}
		}
	})
}

// FuzzOpen feeds arbitrary values to a box of two keys: none panics, and
// whatever opens opens the same through OpenUpgrade, whose upgrade (if
// any) is a current value of the same plaintext.
func FuzzOpen(f *testing.F) {
	oldKey := bytes.Repeat([]byte{1}, 32)
	newKey := bytes.Repeat([]byte{2}, 32)
	b, err := New(newKey, oldKey)
	if err != nil {
		f.Fatal(err)
	}
	old, err := New(oldKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b.Seal([]byte("secret"), []byte("ad")), []byte("ad"))
	f.Add(old.Seal([]byte("secret"), []byte("ad")), []byte("ad"))
	f.Add([]byte{formatV2, 0, 0, 0, 0}, []byte(nil))
	f.Add([]byte{formatV1}, []byte("ad"))
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, sealed, ad []byte) {
		plain, err := b.Open(sealed, ad)
		plain2, upgraded, err2 := b.OpenUpgrade(sealed, ad)
		if (err == nil) != (err2 == nil) || !bytes.Equal(plain, plain2) {
			t.Fatalf("Open and OpenUpgrade disagree: %v, %v", err, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrOpen) {
				t.Fatalf("error %v is not ErrOpen", err)
			}
			return
		}
		if upgraded != nil {
			got, again, err := b.OpenUpgrade(upgraded, ad)
			if err != nil || again != nil || !bytes.Equal(got, plain) {
				t.Fatalf("the upgraded value: %q, %x, %v", got, again, err)
			}
		}
	})
}
