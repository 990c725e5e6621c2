package seal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
