package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// host is a parsed request host: exactly one of addr and name is set.
type host struct {
	// addr is the address of an IP literal, zone kept, IPv4-mapped IPv6
	// unmapped.
	addr netip.Addr
	// name is the lower-case ASCII name without its trailing dot; lookup is
	// what goes to the resolver (name, with the trailing dot if it had one).
	name, lookup string
}

const (
	maxNameLen = 253
	// maxRawLen bounds the work spent on a host: no spelling of a valid
	// name or address, IDN included, comes near it.
	maxRawLen = 1024
)

// parseHost parses a host as Chromium or the OS would: an IPv6 literal with
// or without brackets, an IPv4 literal in any inet_aton spelling, or a name
// (case folded, IDN mapped to punycode by UTS #46). A name whose last label
// is numeric is an IPv4 literal or invalid.
func parseHost(raw string) (host, error) {
	if raw == "" {
		return host{}, fmt.Errorf("%w: empty host", ErrInvalidHost)
	}
	if len(raw) > maxRawLen {
		return host{}, fmt.Errorf("%w: host longer than %d bytes", ErrInvalidHost, maxRawLen)
	}
	if raw[0] == '[' {
		if len(raw) < 2 || raw[len(raw)-1] != ']' {
			return host{}, fmt.Errorf("%w: %q: unterminated IPv6 literal", ErrInvalidHost, raw)
		}
		// In a URL the zone of a bracketed literal is percent-encoded.
		inner := raw[1 : len(raw)-1]
		if i := strings.Index(inner, "%25"); i >= 0 {
			inner = inner[:i] + "%" + inner[i+3:]
		}
		a, err := parseIPv6(inner)
		if err != nil {
			return host{}, fmt.Errorf("%w: %q: %v", ErrInvalidHost, raw, err)
		}
		return host{addr: a}, nil
	}
	if strings.IndexByte(raw, ':') >= 0 {
		a, err := parseIPv6(raw)
		if err != nil {
			return host{}, fmt.Errorf("%w: %q: %v", ErrInvalidHost, raw, err)
		}
		return host{addr: a}, nil
	}
	s, err := toASCII(raw)
	if err != nil {
		return host{}, fmt.Errorf("%w: %q: %v", ErrInvalidHost, raw, err)
	}
	lookup := s
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return host{}, fmt.Errorf("%w: %q: empty name", ErrInvalidHost, raw)
	}
	if endsInNumber(s) {
		v4, err := parseIPv4(s)
		if err != nil {
			return host{}, fmt.Errorf("%w: %q: %v", ErrInvalidHost, raw, err)
		}
		return host{addr: v4}, nil
	}
	if err := validName(s); err != nil {
		return host{}, fmt.Errorf("%w: %q: %v", ErrInvalidHost, raw, err)
	}
	return host{name: s, lookup: lookup}, nil
}

// parseIPv6 parses an IPv6 literal, zone included.
func parseIPv6(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, err
	}
	if !a.Is6() {
		return netip.Addr{}, fmt.Errorf("%s is not an IPv6 address", s)
	}
	if a.Is4In6() {
		a = a.Unmap()
	}
	return a, nil
}

// endsInNumber reports whether the last label of s is numeric in the WHATWG
// URL sense (decimal digits, or 0x followed by hex digits): such a host is
// an IPv4 address or nothing.
func endsInNumber(s string) bool {
	last := s[strings.LastIndexByte(s, '.')+1:]
	if last == "" {
		return false
	}
	if isDigits(last, 10) {
		return true
	}
	return len(last) >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X') && isDigits(last[2:], 16)
}

func isDigits(s string, base int) bool {
	for i := 0; i < len(s); i++ {
		if digitVal(s[i]) >= base {
			return false
		}
	}
	return true
}

func digitVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return 99
}

// parseIPv4 parses s with inet_aton semantics: one to four parts, each
// decimal, octal (leading 0) or hex (leading 0x, possibly with no digits);
// the last part fills the remaining bytes. s has no trailing dot.
func parseIPv4(s string) (netip.Addr, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, fmt.Errorf("%d parts in an IPv4 address", len(parts))
	}
	var vals [4]uint64
	for i, p := range parts {
		v, err := parseIPv4Part(p)
		if err != nil {
			return netip.Addr{}, err
		}
		vals[i] = v
	}
	n := len(parts)
	var ip uint64
	for i := 0; i < n-1; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, fmt.Errorf("part %d of an IPv4 address exceeds 255", i+1)
		}
		ip |= vals[i] << (8 * (3 - i))
	}
	if last, bits := vals[n-1], 8*(5-n); last >= 1<<bits {
		return netip.Addr{}, fmt.Errorf("last part of an IPv4 address exceeds %d bits", bits)
	} else {
		ip |= last
	}
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), nil
}

func parseIPv4Part(p string) (uint64, error) {
	if p == "" {
		return 0, fmt.Errorf("empty part in an IPv4 address")
	}
	base := 10
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
	case len(p) >= 2 && p[0] == '0':
		base, p = 8, p[1:]
	}
	var v uint64
	for i := 0; i < len(p); i++ {
		d := digitVal(p[i])
		if d >= base {
			return 0, fmt.Errorf("bad digit %q in an IPv4 address", p[i])
		}
		v = v*uint64(base) + uint64(d)
		if v > 0xffffffff {
			return 0, fmt.Errorf("IPv4 part overflows 32 bits")
		}
	}
	return v, nil
}

// validName checks a lower-case ASCII name without trailing dot.
func validName(s string) error {
	if len(s) > maxNameLen {
		return fmt.Errorf("name longer than %d bytes", maxNameLen)
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" {
			return fmt.Errorf("empty label")
		}
		if len(label) > 63 {
			return fmt.Errorf("label longer than 63 bytes")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("byte %q not allowed in a host name", c)
			}
		}
	}
	return nil
}

// lookupProfile maps a host to ASCII the way Chromium does (the WHATWG URL
// standard's "domain to ASCII"): idna.Lookup's UTS #46 nontransitional
// mapping with its punycode, Bidi and joiner checks, but without
// UseSTD3ASCIIRules and CheckHyphens, which browsers leave off because
// hosts such as "_dmarc.example.com" and "r3---sn-abc.googlevideo.com" are
// in use. The ASCII that comes out is held to validName, which is where
// '_' is let through and spaces, '%', ':' and '[' are refused.
var lookupProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
)

// toASCII maps s with lookupProfile: case and width folded, ignorable
// characters dropped, ideographic full stops made dots, and each label that
// is not ASCII encoded as punycode; an "xn--" label given in ASCII is
// decoded and must hold a valid label. Whatever comes out is what the
// address guard checks and what is dialed.
func toASCII(s string) (string, error) {
	// idna turns bytes that are not UTF-8 into U+FFFD and encodes that
	// without an error.
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("host is not valid UTF-8")
	}
	a, err := lookupProfile.ToASCII(s)
	if err != nil {
		return "", fmt.Errorf("map to ASCII: %w", err)
	}
	// idna decodes an "xn--" label with nothing encoded to an empty label
	// without an error (UTS #46 calls it one since Unicode 15.1). An empty
	// label in the middle is refused by validName, but a last one would
	// pass as a trailing dot: "example.com.xn--" would be read as
	// "example.com.". A host that really ends in a separator takes a letter
	// after it as a label of its own; after "xn--" the letter makes "xn--a",
	// which is not punycode.
	if strings.HasSuffix(a, ".") {
		if b, err := lookupProfile.ToASCII(s + "a"); err != nil || b != a+"a" {
			return "", fmt.Errorf("last label is \"xn--\" with nothing encoded")
		}
	}
	// UTS #46 keeps symbols and punctuation (U+2603 SNOWMAN, emoji) valid
	// for IDNA2003's sake; IDNA2008 (RFC 5892) does not, and a render has
	// no need of them, so a host is letters, marks and digits beyond ASCII.
	if !isASCII(s) || strings.Contains(a, "xn--") {
		u, err := lookupProfile.ToUnicode(a)
		if err != nil {
			return "", fmt.Errorf("map %s back to Unicode: %w", a, err)
		}
		for _, r := range u {
			if r >= utf8.RuneSelf && !unicode.In(r, unicode.L, unicode.M, unicode.N) {
				return "", fmt.Errorf("character %U not allowed in a host name", r)
			}
		}
	}
	return a, nil
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port". An
// absent or empty port is defPort; defPort 0 makes the port mandatory.
func splitHostPort(hostport string, defPort uint16) (string, uint16, error) {
	h, p := hostport, ""
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%w: %q: unterminated IPv6 literal", ErrInvalidHost, hostport)
		}
		h, p = hostport[:end+1], hostport[end+1:]
		if p != "" {
			if p[0] != ':' {
				return "", 0, fmt.Errorf("%w: %q: junk after IPv6 literal", ErrInvalidHost, hostport)
			}
			p = p[1:]
		}
	} else if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		h, p = hostport[:i], hostport[i+1:]
		if strings.IndexByte(h, ':') >= 0 {
			return "", 0, fmt.Errorf("%w: %q: IPv6 literal without brackets", ErrInvalidHost, hostport)
		}
	}
	if h == "" {
		return "", 0, fmt.Errorf("%w: %q: empty host", ErrInvalidHost, hostport)
	}
	if p == "" {
		if defPort == 0 {
			return "", 0, fmt.Errorf("%w: %q: missing port", ErrInvalidHost, hostport)
		}
		return h, defPort, nil
	}
	if !isDigits(p, 10) {
		return "", 0, fmt.Errorf("%w: %q: bad port", ErrInvalidHost, hostport)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 {
		return "", 0, fmt.Errorf("%w: %q: bad port", ErrInvalidHost, hostport)
	}
	return h, uint16(port), nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
