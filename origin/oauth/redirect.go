package oauth

import (
	"errors"
	"net"
	"net/url"
	"strings"
)

// maxRedirectURI bounds a redirect URI given to be matched (registration
// takes at most maxRedirectURIBytes; clients registered before kept up to
// this).
const maxRedirectURI = 2000

// forbiddenSchemes can never take an authorization response: they run code,
// name local data, or are not meant to be navigated to.
var forbiddenSchemes = map[string]bool{
	"javascript": true, "data": true, "vbscript": true, "file": true, "blob": true,
	"about": true, "filesystem": true, "view-source": true, "ws": true, "wss": true,
	"ftp": true, "mailto": true, "tel": true, "sms": true, "urn": true,
}

// checkRedirectURI validates a redirect URI at registration: an absolute
// URI without fragment; https anywhere, http on a loopback host only (RFC
// 8252 §7.3), or a private-use scheme (RFC 8252 §7.1).
func checkRedirectURI(raw string) error {
	if raw == "" || len(raw) > maxRedirectURI {
		return errors.New("must be 1 to 2000 bytes")
	}
	for _, r := range raw {
		if r <= ' ' || r == 0x7f {
			return errors.New("must not contain spaces or control characters")
		}
	}
	if strings.Contains(raw, "#") {
		return errors.New("must not contain a fragment")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("is not a valid URI")
	}
	if u.Scheme == "" {
		return errors.New("must be an absolute URI")
	}
	scheme := strings.ToLower(u.Scheme)
	if u.User != nil {
		return errors.New("must not contain user information")
	}
	switch {
	case scheme == "https":
		if u.Host == "" || u.Hostname() == "" {
			return errors.New("must name a host")
		}
	case scheme == "http":
		if !loopbackHost(u.Hostname()) {
			return errors.New("http is allowed only for loopback hosts (127.0.0.1, [::1], localhost); use https")
		}
	case forbiddenSchemes[scheme]:
		return errors.New("scheme " + scheme + " is not allowed")
	default:
		// A private-use scheme, e.g. com.example.app:/callback.
		if u.Opaque != "" && u.Path == "" && !strings.HasPrefix(u.Opaque, "/") {
			return errors.New("a private-use URI must have a path, e.g. com.example.app:/callback")
		}
	}
	return nil
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}

// matchRedirect reports whether given is one of the registered redirect URIs:
// an exact match, or, for an http loopback URI, a match in everything but the
// port (RFC 8252 §7.3: native apps listen on an ephemeral port).
func matchRedirect(registered []string, given string) bool {
	if given == "" || len(given) > maxRedirectURI {
		return false
	}
	for _, r := range registered {
		if r == given {
			return true
		}
	}
	g, err := url.Parse(given)
	if err != nil || g.Scheme != "http" || !loopbackHost(g.Hostname()) || g.User != nil || strings.Contains(given, "#") {
		return false
	}
	if p := g.Port(); p != "" && !validPort(p) {
		return false
	}
	for _, r := range registered {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "http" || !loopbackHost(u.Hostname()) {
			continue
		}
		if u.Hostname() == g.Hostname() && u.EscapedPath() == g.EscapedPath() && u.RawQuery == g.RawQuery && u.ForceQuery == g.ForceQuery {
			return true
		}
	}
	return false
}

func validPort(p string) bool {
	if len(p) > 5 {
		return false
	}
	n := 0
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n > 0 && n < 65536
}

// formActionSource is the Content-Security-Policy source that lets the
// consent form's answer redirect to uri: its origin, or its scheme alone
// where CSP has no host syntax (private-use schemes, IPv6 literals).
func formActionSource(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme == "http" || scheme == "https") && u.Host != "" && !strings.Contains(u.Host, "[") {
		return scheme + "://" + u.Host
	}
	return scheme + ":"
}

// redirectHost is what the consent page shows of where the client lives.
func redirectHost(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	if u.Host != "" {
		return u.Host
	}
	return u.Scheme + ":"
}
