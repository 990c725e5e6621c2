package precompress

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteThenCheck(t *testing.T) {
	src := bytes.Repeat([]byte(`{"name":"card","width":1200},`), 200)
	path := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path); err != nil {
		t.Fatal(err)
	}
	br, err := os.ReadFile(path + BrotliSuffix)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := os.ReadFile(path + GzipSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(src, br, gz); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gz, Gzip(src)) || !bytes.Equal(br, Brotli(src)) {
		t.Error("two compressions of one source differ")
	}
	changed := append(bytes.Clone(src), 'x')
	for name, tc := range map[string]struct{ src, br, gz []byte }{
		"source changed":  {changed, br, gz},
		"brotli is gzip":  {src, gz, gz},
		"gzip is brotli":  {src, br, br},
		"gzip truncated":  {src, br, gz[:len(gz)/2]},
		"no smaller form": {[]byte("a"), Brotli([]byte("a")), Gzip([]byte("a"))},
	} {
		t.Run(name, func(t *testing.T) {
			if err := Check(tc.src, tc.br, tc.gz); !errors.Is(err, ErrStale) {
				t.Fatalf("Check = %v, want ErrStale", err)
			}
		})
	}
}
