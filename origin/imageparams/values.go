package imageparams

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // timezone must validate the same on every host
	"unicode"
	"unicode/utf8"
)

// normalizeURL checks an absolute http(s) URL and lowercases its scheme and
// host, drops a default port and makes an empty path "/". Everything after
// the host is kept byte for byte. problem is empty when s is valid.
func normalizeURL(s string) (norm, problem string) {
	s = strings.TrimSpace(s)
	tooLong := func(n int) string { return fmt.Sprintf("must be at most %d characters, got %d", MaxURLLength, n) }
	if len(s) > 4*MaxURLLength { // not worth parsing
		return "", tooLong(utf8.RuneCountInString(s))
	}
	scheme, host, port, rest, problem := splitHTTPURL(s, false)
	if problem != "" {
		return "", problem
	}
	if rest == "" || rest[0] != '/' {
		rest = "/" + rest
	}
	// The limit applies to the normalized URL, so that it holds again when
	// the normalized URL is parsed.
	norm = joinOrigin(scheme, host, port) + rest
	if n := utf8.RuneCountInString(norm); n > MaxURLLength {
		return "", tooLong(n)
	}
	return norm, ""
}

// normalizeOrigin checks an exact http(s) origin, scheme://host[:port] with
// an empty or "/" path, and returns it without path, lowercased, without a
// default port.
func normalizeOrigin(s string) (norm, problem string) {
	s = strings.TrimSpace(s)
	if len(s) > MaxURLLength {
		return "", fmt.Sprintf("must be at most %d characters", MaxURLLength)
	}
	scheme, host, port, rest, problem := splitHTTPURL(s, true)
	if problem != "" {
		return "", problem
	}
	if rest != "" && rest != "/" {
		return "", "must be an origin (scheme://host[:port]) without path, query or fragment"
	}
	return joinOrigin(scheme, host, port), ""
}

// splitHTTPURL parses s as an absolute http or https URL without
// credentials. rest is everything after the authority.
func splitHTTPURL(s string, asciiHost bool) (scheme, host string, port int, rest, problem string) {
	const bad = "must be an absolute http or https URL"
	if s == "" {
		return "", "", 0, "", "must not be empty"
	}
	if strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return "", "", 0, "", "must not contain spaces or control characters"
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		return "", "", 0, "", bad
	}
	scheme = strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", "", 0, "", bad
	}
	if u.User != nil {
		return "", "", 0, "", "must not contain credentials"
	}
	// The authority runs from "//" to the first '/', '?' or '#', as in url.Parse.
	afterScheme := s[len(u.Scheme)+1:]
	if !strings.HasPrefix(afterScheme, "//") {
		return "", "", 0, "", bad
	}
	authority := afterScheme[2:]
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority, rest = authority[:i], authority[i:]
	}
	h, p := authority, ""
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.Contains(authority[i:], "]") {
		h, p = authority[:i], authority[i+1:]
	}
	if h == "" {
		return "", "", 0, "", "must have a host"
	}
	if host, problem = checkHost(h, asciiHost); problem != "" {
		return "", "", 0, "", problem
	}
	if p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || strings.TrimLeft(p, "0123456789") != "" {
			return "", "", 0, "", "must have a port between 1 and 65535"
		}
		port = n
	}
	if (scheme == "http" && port == 80) || (scheme == "https" && port == 443) {
		port = 0
	}
	return scheme, host, port, rest, ""
}

// checkHost validates a host name or bracketed IPv6 literal and lowercases
// its ASCII letters.
func checkHost(h string, asciiOnly bool) (string, string) {
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return "", "must have a valid host"
		}
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", "must have a valid host"
		}
		return "[" + a.String() + "]", ""
	}
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
		case r >= utf8.RuneSelf && asciiOnly:
			return "", "must have an ASCII host (use the xn-- form of international names)"
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)):
		default:
			return "", "must have a valid host"
		}
	}
	// DNS shape: labels of 1 to 63 bytes not starting or ending with '-',
	// at most 253 bytes, one trailing dot allowed.
	name := strings.TrimSuffix(h, ".")
	if name == "" || len(name) > 253 {
		return "", "must have a valid host"
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", "must have a valid host"
		}
	}
	return asciiLower(h), ""
}

func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

func joinOrigin(scheme, host string, port int) string {
	if port == 0 {
		return scheme + "://" + host
	}
	return scheme + "://" + host + ":" + strconv.Itoa(port)
}

// parseGoogleFonts splits a google_fonts value into family specs such as
// "Open Sans:wght@400;700". A "+" in a spec is read as a space (the form
// Google Fonts URLs use) and runs of blanks in a family name are collapsed.
func parseGoogleFonts(s string) ([]string, string) {
	parts := strings.Split(s, "|")
	if len(parts) > MaxGoogleFonts {
		return nil, fmt.Sprintf("must name at most %d families, got %d", MaxGoogleFonts, len(parts))
	}
	fonts := make([]string, 0, len(parts))
	for i, part := range parts {
		spec := strings.ReplaceAll(part, "+", " ")
		name, axes, hasAxes := strings.Cut(spec, ":")
		name = strings.Join(strings.Fields(name), " ")
		axes = strings.TrimSpace(axes)
		switch {
		case name == "":
			return nil, fmt.Sprintf("family %d is empty", i+1)
		case strings.ContainsFunc(name, func(r rune) bool { return !isASCIIAlnum(r) && r != ' ' }):
			return nil, fmt.Sprintf("family %q may hold only letters, digits and spaces", name)
		case hasAxes && axes == "":
			return nil, fmt.Sprintf("family %q has an empty style after ':'", name)
		case strings.ContainsFunc(axes, func(r rune) bool { return !isASCIIAlnum(r) && !strings.ContainsRune(",;@.-", r) }):
			return nil, fmt.Sprintf("family %q: the style after ':' may hold only letters, digits and , ; @ . -", name)
		}
		if hasAxes {
			name += ":" + axes
		}
		if len(name) > MaxGoogleFontSpecLength {
			return nil, fmt.Sprintf("family %d must be at most %d characters", i+1, MaxGoogleFontSpecLength)
		}
		fonts = append(fonts, name)
	}
	return fonts, ""
}

func isASCIIAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// knownZones caches timezone names that loaded; only valid names are kept,
// so the cache is bounded by the tz database.
var knownZones sync.Map

// checkTimezone accepts IANA names that time.LoadLocation knows, written as
// slash-separated segments of letters, digits, '_', '+' and '-'. "Local",
// the posix/ and right/ trees and anything path-like are refused.
func checkTimezone(name string) string {
	const bad = "must be an IANA timezone name such as Europe/Paris"
	if name == "" || name == "Local" || name == "localtime" || name == "posixrules" || len(name) > MaxTimezoneLength ||
		strings.HasPrefix(name, "posix/") || strings.HasPrefix(name, "right/") {
		return bad
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || !isASCIIAlnum(rune(seg[0])) ||
			strings.ContainsFunc(seg, func(r rune) bool { return !isASCIIAlnum(r) && !strings.ContainsRune("_+-", r) }) {
			return bad
		}
	}
	if _, ok := knownZones.Load(name); ok {
		return ""
	}
	if _, err := time.LoadLocation(name); err != nil {
		return bad
	}
	knownZones.Store(name, true)
	return ""
}

// Length units of pdf_options, in inches.
var unitInches = map[string]float64{"in": 1, "px": 96, "pt": 72, "cm": 2.54, "mm": 25.4}

// parseLength reads a PDF length such as "8.5in", "210mm" or "800px" into
// inches. Page sides must be positive; margins may be zero, also written "0".
func parseLength(s string, margin bool) (float64, string) {
	const bad = `must be a length with a unit px, in, cm, mm or pt, such as "8.5in"`
	s = strings.TrimSpace(s)
	if len(s) > 100 {
		return 0, bad
	}
	if margin && s == "0" {
		return 0, ""
	}
	if len(s) < 3 {
		return 0, bad
	}
	num, unit := s[:len(s)-2], strings.ToLower(s[len(s)-2:])
	per, ok := unitInches[unit]
	// Plain decimal or exponent notation only: no sign, hex, "inf" or '_'.
	if !ok || num == "" || !(num[0] >= '0' && num[0] <= '9' || num[0] == '.') ||
		strings.ContainsFunc(num, func(r rune) bool { return !(r >= '0' && r <= '9') && !strings.ContainsRune(".eE+-", r) }) {
		return 0, bad
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, bad
	}
	in := f / per
	switch {
	case in > MaxPDFInches:
		return 0, fmt.Sprintf("must be at most %sin (%s)", formatFloat(MaxPDFInches), s)
	case !margin && in <= 0:
		return 0, "must be greater than zero"
	}
	return in, ""
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// isToken reports whether s is an RFC 7230 token (a valid header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isASCIIAlnum(rune(c)) && strings.IndexByte("!#$%&'*+-.^_`|~", c) < 0 {
			return false
		}
	}
	return true
}

// forbiddenHeader reports hop-by-hop, framing and proxy headers.
func forbiddenHeader(name string) bool {
	switch n := strings.ToLower(name); n {
	case "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer":
		return true
	default:
		return strings.HasPrefix(n, "proxy-")
	}
}

// checkHeaderValue refuses control characters other than tab (CR, LF and
// NUL in particular) and values over MaxHeaderValueBytes.
func checkHeaderValue(v string) string {
	if len(v) > MaxHeaderValueBytes {
		return fmt.Sprintf("must be at most %d bytes, got %d", MaxHeaderValueBytes, len(v))
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r != '\t' && (r < 0x20 || r == 0x7f) }) {
		return "must not contain control characters such as CR, LF or NUL"
	}
	return ""
}

// member is one member of a JSON object, in document order.
type member struct {
	key   string
	value json.RawMessage
}

var errNotObject = errors.New("not a JSON object")

// decodeMembers decodes a JSON object keeping its members' order and
// duplicates, and refuses anything after it.
func decodeMembers(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errNotObject
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errNotObject
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key: key, value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if !atEOF(dec) {
		return nil, errNotObject
	}
	return out, nil
}

// atEOF reports whether only blanks remain after the decoded value.
func atEOF(dec *json.Decoder) bool {
	_, err := dec.Token()
	return err == io.EOF
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// marshal encodes v as compact JSON without HTML escaping (map keys sorted).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
