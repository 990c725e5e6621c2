package ogplatform

import (
	"strings"
)

// maxPath bounds a page path, as sent.
const maxPath = 2048

// NormalizePath returns the one spelling of a page path that both tiers
// use for the OG image of that page: the edge in its cache key, the origin
// for the page it reads. raw is the path after the domain id, as sent
// (escaped), with or without its leading slash; the query is not part of
// it. Empty segments ("//") and "." go, ".." removes the segment before it
// (never above the root), percent-encoding is decoded and made again the
// one way (upper-case hex, only where needed), and a trailing slash goes:
// "/a//b/../c/" and "/a/%63" both give "/a/c". It refuses invalid escapes,
// NUL and control characters and paths over 2 KiB, as sent or once
// escaped again (700 spaces are 2,100 bytes as "%20").
func NormalizePath(raw string) (string, error) {
	if len(raw) > maxPath {
		return "", ErrBadPath
	}
	segs := make([]string, 0, 8)
	for seg := range strings.SplitSeq(raw, "/") {
		dec, ok := unescape(seg)
		if !ok {
			return "", ErrBadPath
		}
		switch dec {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, dec)
		}
	}
	var b strings.Builder
	b.Grow(len(raw) + 1)
	for _, s := range segs {
		b.WriteByte('/')
		escape(&b, s)
	}
	switch {
	case b.Len() == 0:
		return "/", nil
	case b.Len() > maxPath:
		return "", ErrPathTooLong
	}
	return b.String(), nil
}

// unescape decodes %XX escapes; it refuses a bad escape and control
// characters, decoded or not.
func unescape(s string) (string, bool) {
	if !strings.ContainsRune(s, '%') {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] == 0x7f {
				return "", false
			}
		}
		return s, true
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if i+2 >= len(s) {
				return "", false
			}
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return "", false
			}
			c = hi<<4 | lo
			i += 2
		}
		if c < 0x20 || c == 0x7f {
			return "", false
		}
		out = append(out, c)
	}
	return string(out), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// escape writes a decoded segment with RFC 3986's path rules: unreserved
// characters and the sub-delimiters, ':' and '@' as they are, every other
// byte (UTF-8 included) as %XX.
func escape(b *strings.Builder, s string) {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
}

func plain(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0
}

// IsNormalPath reports whether p is NormalizePath's spelling already, so
// that the edge's hit path can take it as it is without allocating.
func IsNormalPath[T string | []byte](p T) bool {
	if len(p) == 0 || len(p) > maxPath || p[0] != '/' {
		return false
	}
	if len(p) == 1 {
		return true
	}
	if p[len(p)-1] == '/' {
		return false
	}
	segStart := 1
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		seg := p[segStart:i]
		if len(seg) == 0 || (len(seg) == 1 && seg[0] == '.') || (len(seg) == 2 && seg[0] == '.' && seg[1] == '.') {
			return false
		}
		for j := 0; j < len(seg); j++ {
			c := seg[j]
			if plain(c) {
				continue
			}
			if c != '%' || j+2 >= len(seg) {
				return false
			}
			hi, ok1 := unhexUpper(seg[j+1])
			lo, ok2 := unhexUpper(seg[j+2])
			d := hi<<4 | lo
			if !ok1 || !ok2 || plain(d) || d < 0x20 || d == 0x7f {
				return false
			}
			j += 2
		}
		// "%2E" and "%2E%2E" decode to dot segments.
		if string(seg) == "%2E" || string(seg) == "%2E%2E" || string(seg) == ".%2E" || string(seg) == "%2E." {
			return false
		}
		segStart = i + 1
	}
	return true
}

func unhexUpper(c byte) (byte, bool) {
	if 'a' <= c && c <= 'f' {
		return 0, false
	}
	return unhex(c)
}
