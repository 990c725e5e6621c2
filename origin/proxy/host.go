package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pictorhq/pictor/origin/egress"
	"github.com/pictorhq/pictor/origin/resource"
)

// Host and URL limits.
const (
	MaxURLLength  = 2048 // url as sent, bytes
	maxNameLength = 253  // a host name without its trailing dot
	maxLabel      = 63
)

// parseURL checks a proxy url: http or https, a host, an optional port,
// nothing after the host but an optional "/", no credentials. It returns
// the url normalized to scheme://host (lower-case, IPv6 bracketed in
// canonical form, one trailing dot of a name dropped) and the port written
// in it (0: none). problem is "" when s is valid; it never quotes s, which
// may hold credentials.
func parseURL(s string) (norm string, port int, problem string) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", 0, "must not be empty"
	case len(s) > MaxURLLength:
		return "", 0, fmt.Sprintf("must be at most %d characters", MaxURLLength)
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return "", 0, "must not contain spaces or control characters"
	case strings.ContainsRune(s, '\\'):
		return "", 0, "must not contain backslashes"
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return "", 0, "must be an absolute URL such as http://proxy.example.com"
	}
	scheme = asciiLower(scheme)
	if scheme != "http" && scheme != "https" {
		return "", 0, "must use the http or https scheme"
	}
	authority, after := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, after = rest[:i], rest[i:]
	}
	if strings.ContainsRune(authority, '@') {
		return "", 0, "must not contain credentials: send them in authentication"
	}
	switch {
	case after == "" || after == "/":
	case strings.HasPrefix(after, "/") && after[1] != '?' && after[1] != '#':
		return "", 0, "must not have a path: only scheme://host[:port]"
	case strings.Contains(after, "?"):
		return "", 0, "must not have a query"
	default:
		return "", 0, "must not have a fragment"
	}
	host, portText := authority, ""
	hasPort := false
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return "", 0, "must have a valid host: an unterminated IPv6 literal"
		}
		host, portText = authority[:end+1], authority[end+1:]
		if portText != "" {
			if portText[0] != ':' {
				return "", 0, "must have a valid host"
			}
			portText, hasPort = portText[1:], true
		}
	} else if i := strings.LastIndexByte(authority, ':'); i >= 0 {
		host, portText, hasPort = authority[:i], authority[i+1:], true
	}
	if host == "" {
		return "", 0, "must have a host"
	}
	if hasPort {
		n, err := strconv.Atoi(portText)
		if err != nil || n < 1 || n > 65535 || strings.TrimLeft(portText, "0123456789") != "" {
			return "", 0, "must have a port between 1 and 65535 after the host, or none"
		}
		port = n
	}
	var h string
	if strings.HasPrefix(host, "[") {
		a, problem := parseIPv6(host[1 : len(host)-1])
		if problem != "" {
			return "", 0, problem
		}
		h = "[" + a.String() + "]"
	} else {
		if strings.ContainsRune(host, ':') {
			return "", 0, "must have a valid host: write an IPv6 address in brackets"
		}
		var problem string
		if h, _, problem = parseName(host); problem != "" {
			return "", 0, "must have a valid host: the host " + problem
		}
	}
	return scheme + "://" + h, port, ""
}

// parseIPv6 reads an IPv6 literal without brackets or zone.
func parseIPv6(s string) (netip.Addr, string) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return netip.Addr{}, "must have a valid host: not an IPv6 address"
	}
	if a.Zone() != "" {
		return netip.Addr{}, "must have a valid host: an IPv6 address without zone"
	}
	return a, ""
}

// parseName checks a host name or IPv4 literal and returns it lower-case,
// without one trailing dot. A name whose last label is numeric (decimal, or
// 0x and hex digits) is read by browsers and the egress as an IPv4 address,
// so it must be one, written as four decimal numbers; ip is then set.
// Names are ASCII: international names are written in their xn-- form.
func parseName(s string) (name string, ip netip.Addr, problem string) {
	if !isASCII(s) {
		return "", ip, "must be ASCII (write international names in their xn-- form)"
	}
	name = strings.TrimSuffix(asciiLower(s), ".")
	switch {
	case name == "":
		return "", ip, "must not be empty"
	case len(name) > maxNameLength:
		return "", ip, fmt.Sprintf("must be at most %d characters", maxNameLength)
	}
	labels := strings.Split(name, ".")
	for _, label := range labels {
		switch {
		case label == "":
			return "", ip, "must not have an empty label"
		case len(label) > maxLabel:
			return "", ip, fmt.Sprintf("must not have a label longer than %d characters", maxLabel)
		case label[0] == '-' || label[len(label)-1] == '-':
			return "", ip, "must not have a label that starts or ends with '-'"
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", ip, "must hold only letters, digits, '-', '_' and dots"
			}
		}
	}
	if numeric(labels[len(labels)-1]) {
		a, err := netip.ParseAddr(name)
		if err != nil || !a.Is4() {
			return "", ip, "must be a name or an IPv4 address written as four decimal numbers"
		}
		return a.String(), a, ""
	}
	return name, ip, ""
}

// numeric reports whether a label is a number in the WHATWG URL sense.
func numeric(label string) bool {
	if label == "" {
		return false
	}
	if h, ok := strings.CutPrefix(label, "0x"); ok {
		label = h
		if label == "" {
			return true
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(label); i++ {
		if c := label[i]; c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseBypassHost checks one bypass_hosts entry: a host name, a "*.name"
// wildcard or an IP literal (IPv6 with or without brackets), without
// scheme, port or path. It returns the entry lower-case, an IPv6 literal in
// canonical form without brackets, one trailing dot of a name dropped.
func parseBypassHost(s string) (string, string) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", "must not be empty"
	case len(s) > maxNameLength+3:
		return "", fmt.Sprintf("must be at most %d characters", maxNameLength)
	case strings.Contains(s, "://"):
		return "", "must be a host name or IP address, not a URL"
	case strings.ContainsRune(s, '/'):
		return "", "must be a host name or IP address (address ranges are not supported)"
	}
	if inner, ok := strings.CutPrefix(s, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return "", "must be a host name or IP address without a port"
		}
		a, problem := parseIPv6(inner)
		if problem != "" {
			return "", "must be a host name or IP address: not an IPv6 address"
		}
		return a.String(), ""
	}
	if strings.ContainsRune(s, ':') {
		if a, err := netip.ParseAddr(s); err == nil && a.Is6() && a.Zone() == "" {
			return a.String(), ""
		}
		return "", "must be a host name or IP address without a port"
	}
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		name, ip, problem := parseName(rest)
		switch {
		case problem != "":
			return "", "must be a host name, *. and a host name, or an IP address: the name " + problem
		case ip.IsValid():
			return "", "must apply *. to a host name, not to an IP address"
		}
		return "*." + name, ""
	}
	if strings.ContainsRune(s, '*') {
		return "", "may only use * as its whole first label, as in *.example.com"
	}
	name, _, problem := parseName(s)
	if problem != "" {
		return "", "must be a host name or IP address: it " + problem
	}
	return name, ""
}

// checkHost refuses a url whose host is an address literal or local name
// the egress refuses (names that need DNS are checked when a render uses the
// proxy): loopback, private and metadata literals, localhost. allowPrivate
// (--allow-private-urls) lifts all but the metadata rule.
func checkHost(norm string, allowPrivate bool) string {
	_, host, _ := strings.Cut(norm, "://")
	_, err := egress.Check(context.Background(), resource.NoLookup, host, allowPrivate)
	if errors.Is(err, egress.ErrBlockedAddress) {
		return fmt.Sprintf("is not allowed: %v", err)
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}
