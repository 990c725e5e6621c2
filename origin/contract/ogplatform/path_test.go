package ogplatform

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalizePath(t *testing.T) {
	for _, tc := range []struct {
		name, raw, want string
		err             bool
	}{
		{"root", "/", "/", false},
		{"empty", "", "/", false},
		{"plain", "/blog/post-1", "/blog/post-1", false},
		{"no leading slash", "blog/post-1", "/blog/post-1", false},
		{"trailing slash", "/blog/", "/blog", false},
		{"double slashes", "//blog//post", "/blog/post", false},
		{"dot", "/blog/./post", "/blog/post", false},
		{"dot dot", "/a/b/../c", "/a/c", false},
		{"dot dot above root", "/../../etc/passwd", "/etc/passwd", false},
		{"escaped dot dot", "/a/%2e%2E/b", "/b", false},
		{"escaped letter", "/a/%63", "/a/c", false},
		{"lower-case hex", "/caf%c3%a9", "/caf%C3%A9", false},
		{"raw UTF-8", "/café", "/caf%C3%A9", false},
		{"space", "/a b", "/a%20b", false},
		{"escaped slash stays one segment", "/a%2Fb", "/a%2Fb", false},
		{"sub-delimiters kept", "/a:b@c!$&'()*+,;=", "/a:b@c!$&'()*+,;=", false},
		{"question mark escaped", "/a%3Fb", "/a%3Fb", false},
		{"bad escape", "/a%zz", "", true},
		{"cut escape", "/a%4", "", true},
		{"cut escape at end", "/a%", "", true},
		{"NUL", "/a%00", "", true},
		{"control", "/a\x01", "", true},
		{"too long", "/" + strings.Repeat("a", maxPath), "", true},
		{"too long once escaped", "/" + strings.Repeat(" ", 700), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizePath(tc.raw)
			if tc.err {
				if !errors.Is(err, ErrBadPath) {
					t.Fatalf("NormalizePath(%q) = %q, %v; want ErrBadPath", tc.raw, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("NormalizePath(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
			}
			if !IsNormalPath(got) || !IsNormalPath([]byte(got)) {
				t.Fatalf("IsNormalPath(%q) = false for NormalizePath's own answer", got)
			}
			if again, _ := NormalizePath(got); again != got {
				t.Fatalf("not idempotent: %q → %q", got, again)
			}
			if IsNormalPath(tc.raw) != (tc.raw == tc.want) {
				t.Fatalf("IsNormalPath(%q) = %v", tc.raw, IsNormalPath(tc.raw))
			}
		})
	}
}

func TestIsNormalPathAllocatesNothing(t *testing.T) {
	p := []byte("/blog/2026/11/a-long-post-title%C3%A9")
	if n := testing.AllocsPerRun(100, func() { IsNormalPath(p) }); n != 0 {
		t.Fatalf("IsNormalPath allocates %v times", n)
	}
}

func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"/", "/a//b/../c/", "/%2e%2e/x", "/caf%c3%a9", "/a%2Fb", "/a%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := NormalizePath(raw)
		if err != nil {
			if IsNormalPath(raw) {
				t.Fatalf("IsNormalPath(%q) but NormalizePath refuses it: %v", raw, err)
			}
			return
		}
		if !IsNormalPath(got) {
			t.Fatalf("NormalizePath(%q) = %q, which IsNormalPath refuses", raw, got)
		}
		if again, err := NormalizePath(got); err != nil || again != got {
			t.Fatalf("not idempotent: %q → %q → %q, %v", raw, got, again, err)
		}
		if IsNormalPath(raw) && got != raw {
			t.Fatalf("IsNormalPath(%q) but NormalizePath gives %q", raw, got)
		}
	})
}
