package proxy

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Proxy is a stored proxy: where a render of the organization sends its
// outbound traffic when the image names it with proxy_id.
type Proxy struct {
	ID    string `json:"id"` // UUIDv7, the API's path id
	OrgID string `json:"org_id"`
	Name  string `json:"name"`
	// URL is scheme://host: http or https, lower-case, without port, path
	// or credentials. An IPv6 host is bracketed.
	URL      string `json:"url"`
	Port     int    `json:"port"` // 1 to 65535
	Disabled bool   `json:"disabled"`
	// Username is "" when the proxy takes no credentials.
	Username string `json:"username,omitempty"`
	// SealedPassword is the password sealed with seal.Box under the proxy's
	// id; nil when there is none. Store.Credentials opens it.
	SealedPassword []byte `json:"sealed_password,omitempty"`
	// BypassHosts are reached without the proxy: lower-case host names,
	// "*.name" wildcards and IP literals (IPv6 without brackets), unique,
	// in the order first sent. See Bypasses.
	BypassHosts []string  `json:"bypass_hosts"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Enabled is !Disabled.
func (p *Proxy) Enabled() bool { return !p.Disabled }

// HasPassword reports whether a password is stored.
func (p *Proxy) HasPassword() bool { return len(p.SealedPassword) > 0 }

// Scheme is "http" or "https": how a render talks to the proxy itself.
func (p *Proxy) Scheme() string {
	scheme, _, _ := strings.Cut(p.URL, "://")
	return scheme
}

// Address is the proxy's host:port, ready to dial ("[::1]:3128" for an
// IPv6 host).
func (p *Proxy) Address() string {
	_, host, _ := strings.Cut(p.URL, "://")
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return net.JoinHostPort(host, strconv.Itoa(p.Port))
}

// Bypasses reports whether a request to host (a name or an IP literal,
// IPv6 with or without brackets, no port) goes around the proxy: host
// equals an entry of BypassHosts (case and one trailing dot aside; IP
// literals compared as addresses), or is a subdomain, at any depth, of the
// name of a "*.name" entry. "*.example.com" matches a.example.com and
// a.b.example.com, not example.com itself.
func (p *Proxy) Bypasses(host string) bool {
	host = strings.TrimSuffix(asciiLower(host), ".")
	if h, ok := strings.CutPrefix(host, "["); ok {
		host = strings.TrimSuffix(h, "]")
	}
	addr, err := netip.ParseAddr(host)
	isAddr := err == nil && addr.Zone() == ""
	for _, entry := range p.BypassHosts {
		if isAddr {
			if a, err := netip.ParseAddr(entry); err == nil && a.Unmap() == addr.Unmap() {
				return true
			}
			continue
		}
		if suffix, ok := strings.CutPrefix(entry, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
			continue
		}
		if host == entry {
			return true
		}
	}
	return false
}

// Secret is a plaintext password on its way to being sealed. It prints,
// logs and marshals as "[redacted]", so that no %v of a Request, log line
// or JSON dump shows it; string(s) is the password.
type Secret string

const redacted = "[redacted]"

// Format implements fmt.Formatter for every verb.
func (Secret) Format(f fmt.State, _ rune) { f.Write([]byte(redacted)) }

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON implements json.Marshaler.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

var (
	_ fmt.Formatter  = Secret("")
	_ slog.LogValuer = Secret("")
)
