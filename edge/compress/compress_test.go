package compress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   Encoding
	}{
		{"", Identity},
		{"   ", Identity},
		{"gzip", Gzip},
		{"br", Brotli},
		{"gzip, deflate, br", Brotli}, // equal q: br
		{"gzip, deflate, br, zstd", Brotli},
		{"br;q=0.5, gzip", Gzip},
		{"br;q=0.9, gzip;q=0.9", Brotli},
		{"br;q=0, gzip", Gzip},
		{"br;q=0, gzip;q=0", Identity},
		{"br;q=0.000, gzip;q=0.0", Identity},
		{"BR", Brotli},
		{"GZip ; Q=0.4 , Br ; q=0.3", Gzip},
		{"\tgzip\t;\tq=1.000\t", Gzip},
		{"x-gzip", Gzip},
		{"deflate", Identity},
		{"identity", Identity},
		{"identity;q=0", Identity}, // nothing acceptable: identity all the same
		{"*", Brotli},
		{"*;q=0", Identity},
		{"*;q=0, gzip", Gzip},
		{"*, br;q=0", Gzip},
		{"*;q=0.5, identity", Identity}, // identity preferred
		{"br;q=0.5, identity;q=0.5", Brotli},
		{"br;q=0.4, identity;q=0.5", Identity},
		{"identity;q=0, gzip;q=0.1", Gzip},
		{"br;q=2", Identity},        // malformed q: element ignored
		{"br;q=0.5000, gzip", Gzip}, // too many digits
		{"br;q=1.5, gzip", Gzip},
		{"br;q=, gzip", Gzip},
		{"br;q=abc", Identity},
		{"br;level=3", Brotli}, // other parameters ignored
		{"br;q=0.1;x=y, gzip;q=0.05", Brotli},
		{",,, ,br", Brotli},
		{"b r", Identity},
		{"gzip;q=0, gzip;q=0.5", Gzip}, // the highest q of a name counts
		{"brotli", Identity},
	} {
		t.Run(tc.header, func(t *testing.T) {
			if got := Negotiate([]byte(tc.header)); got != tc.want {
				t.Fatalf("Negotiate(%q) = %v, want %v", tc.header, got, tc.want)
			}
		})
	}
}

func TestNegotiateAllocatesNothing(t *testing.T) {
	h := []byte("gzip;q=0.8, deflate, br;q=0.9, *;q=0.1, identity;q=0")
	if n := testing.AllocsPerRun(100, func() { Negotiate(h) }); n != 0 {
		t.Fatalf("%v allocations, want 0", n)
	}
}

// FuzzNegotiate: any header gives a coding the header does not refuse, and
// adding whitespace or changing case around its elements does not change it.
func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{"", "gzip", "br;q=0.5, gzip", "*;q=0", "identity;q=0, br;q=0.001", "GZIP ; Q=1.000", "br;q=0.5000", ";;,=,;q=", "x-gzip;q=0.3, *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		got := Negotiate([]byte(header))
		if got > Brotli {
			t.Fatalf("Negotiate(%q) = %d, no coding", header, got)
		}
		if got != Identity && Negotiate([]byte(header+", "+got.String()+";q=0")) == got &&
			!strings.Contains(strings.ToLower(header), got.String()) {
			t.Fatalf("Negotiate(%q) = %v, which the header does not name", header, got)
		}
		if got != Identity && Negotiate([]byte(strings.ToUpper(header))) != got {
			t.Fatalf("Negotiate(%q) = %v, but not in upper case", header, got)
		}
		if spaced := strings.ReplaceAll(header, ",", " ,\t"); Negotiate([]byte(spaced)) != got {
			t.Fatalf("Negotiate(%q) = %v, but %q gives %v", header, got, spaced, Negotiate([]byte(spaced)))
		}
	})
}

func TestCompressible(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                true,
		"application/json; charset=utf-8": true,
		"Application/JSON;charset=UTF-8":  true,
		"application/problem+json":        true,
		"application/yaml":                true,
		"application/x-yaml":              true,
		"text/html; charset=utf-8":        true,
		"text/javascript":                 true,
		"application/javascript":          true,
		"text/css":                        true,
		"image/svg+xml":                   true,
		"text/plain":                      true,
		" text/csv ; header=present":      true,
		"application/xml":                 true,
		"application/atom+xml":            true,
		"image/png":                       false,
		"image/jpeg":                      false,
		"image/webp":                      false,
		"image/avif":                      false,
		"application/pdf":                 false,
		"application/octet-stream":        false,
		"application/zip":                 false,
		"text/event-stream":               false,
		"font/woff2":                      false,
		"":                                false,
		"application/":                    false,
		"application/+json":               false,
		"json":                            false,
	} {
		t.Run(ct, func(t *testing.T) {
			if got := Compressible([]byte(ct)); got != want {
				t.Fatalf("Compressible(%q) = %v, want %v", ct, got, want)
			}
		})
	}
}

func TestETag(t *testing.T) {
	for _, tc := range []struct {
		etag string
		e    Encoding
		want string
	}{
		{`"abc"`, Brotli, `"abc-br"`},
		{`"abc"`, Gzip, `"abc-gzip"`},
		{`"abc"`, Identity, `"abc"`},
		{`W/"abc"`, Gzip, `W/"abc-gzip"`},
		{`abc`, Brotli, `abc`},
		{``, Brotli, ``},
	} {
		t.Run(tc.etag+" "+tc.e.String(), func(t *testing.T) {
			got := ETag(tc.etag, tc.e)
			if got != tc.want {
				t.Fatalf("ETag = %s, want %s", got, tc.want)
			}
			if back, ok := StripETag(got, tc.e); back != tc.etag || ok != (got != tc.etag) {
				t.Fatalf("StripETag(%s) = %s, %v, want %s", got, back, ok, tc.etag)
			}
		})
	}
	if _, ok := StripETag(`"abc-br"`, Gzip); ok {
		t.Error("a Brotli ETag stripped as gzip's")
	}
	if _, ok := StripETag(`"-br"`, Brotli); ok {
		t.Error(`"-br" stripped to an empty tag`)
	}
}

func decode(t *testing.T, e Encoding, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch e {
	case Brotli:
		r = brotli.NewReader(bytes.NewReader(b))
	case Gzip:
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	default:
		return b
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decode %v: %v", e, err)
	}
	return out
}

// source is a body read in small pieces, which records its Close.
type source struct {
	r      io.Reader
	err    error
	closed bool
}

func (s *source) Read(p []byte) (int, error) {
	n, err := s.r.Read(p[:min(len(p), 1000)])
	if err == io.EOF && s.err != nil {
		err = s.err
	}
	return n, err
}

func (s *source) Close() error { s.closed = true; return nil }

func TestReader(t *testing.T) {
	var big bytes.Buffer
	for i := range 20000 {
		big.WriteString(`{"id":"img_`)
		big.WriteString(strings.Repeat(string(rune('a'+i%26)), i%7))
		big.WriteString(`","width":1200},`)
	}
	for _, e := range []Encoding{Brotli, Gzip} {
		for name, body := range map[string][]byte{"empty": nil, "small": []byte("{}"), "large": big.Bytes()} {
			t.Run(e.String()+" "+name, func(t *testing.T) {
				src := &source{r: bytes.NewReader(body)}
				r := NewReader(src, e)
				var coded bytes.Buffer
				buf := make([]byte, 777) // reads smaller than a chunk
				for {
					n, err := r.Read(buf)
					coded.Write(buf[:n])
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if err := r.Close(); err != nil || !src.closed {
					t.Fatalf("Close = %v, source closed %v", err, src.closed)
				}
				if got := decode(t, e, coded.Bytes()); !bytes.Equal(got, body) {
					t.Fatalf("decoded %d bytes, not the %d of the body", len(got), len(body))
				}
				if len(body) > MinSize && coded.Len() >= len(body)/4 {
					t.Errorf("%d bytes coded into %d", len(body), coded.Len())
				}
			})
		}
		t.Run(e.String()+" source fails", func(t *testing.T) {
			boom := errors.New("origin connection reset")
			r := NewReader(&source{r: bytes.NewReader(big.Bytes()[:100000]), err: boom}, e)
			_, err := io.Copy(io.Discard, r)
			if !errors.Is(err, boom) {
				t.Fatalf("copy = %v, want the source's error", err)
			}
			r.Close()
			if _, err := r.Read(make([]byte, 10)); err == nil {
				t.Fatal("read after Close succeeded")
			}
		})
	}
}

// BenchmarkReader is the cost of compressing a relayed answer on the fly
// (a 560 KiB JSON list), per coding; no time is asserted.
func BenchmarkReader(b *testing.B) {
	var body bytes.Buffer
	for i := 0; body.Len() < 560<<10; i++ {
		fmt.Fprintf(&body, `{"id":"img_%08x","width":%d,"format":"png","created":"2026-11-%02dT%02d:%02d:00Z"},`,
			uint32(i)*2654435761, 100+i%900, 1+i%28, i%24, i%60)
	}
	for _, e := range []Encoding{Brotli, Gzip} {
		b.Run(e.String(), func(b *testing.B) {
			b.SetBytes(int64(body.Len()))
			b.ReportAllocs()
			var n int64
			for b.Loop() {
				r := NewReader(io.NopCloser(bytes.NewReader(body.Bytes())), e)
				n, _ = io.Copy(io.Discard, r)
				r.Close()
			}
			b.ReportMetric(float64(n), "bytes/answer")
		})
	}
}
