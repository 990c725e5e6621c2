package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
)

// Resolver looks names up; *net.Resolver implements it.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Check parses host (a name or an IP literal in any spelling, IPv6 with or
// without brackets, no port), resolves it once with r (nil means
// net.DefaultResolver) and returns its addresses if every one of them is
// allowed. allowPrivate lifts the private-address rule but not the cloud
// metadata one. A refused host gives an *AddressError.
func Check(ctx context.Context, r Resolver, host string, allowPrivate bool) ([]netip.Addr, error) {
	if r == nil {
		r = net.DefaultResolver
	}
	h, err := parseHost(host)
	if err != nil {
		return nil, err
	}
	return resolve(ctx, r, host, h, allowPrivate)
}

// CheckURL checks the host of an absolute http or https URL as Check does;
// it is what the API runs on a render's url parameter.
func CheckURL(ctx context.Context, r Resolver, rawURL string, allowPrivate bool) ([]netip.Addr, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidHost, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: %q", ErrBlockedScheme, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%w: URL %q has no host", ErrInvalidHost, rawURL)
	}
	if _, _, err := splitHostPort(u.Host, 1); err != nil {
		return nil, err
	}
	return Check(ctx, r, u.Hostname(), allowPrivate)
}

// verdict applies the address rules to one address of host.
func verdict(host string, a netip.Addr, allowPrivate bool) error {
	switch c, what := classify(a); {
	case c == metadata:
		return &AddressError{Host: host, Addr: a, Range: what, Metadata: true}
	case c == private && !allowPrivate:
		return &AddressError{Host: host, Addr: a, Range: what}
	}
	return nil
}

// resolve turns a parsed host into checked addresses: literals are
// classified, names are looked up once and every answer is classified.
func resolve(ctx context.Context, r Resolver, raw string, h host, allowPrivate bool) ([]netip.Addr, error) {
	if h.addr.IsValid() {
		if err := verdict(raw, h.addr, allowPrivate); err != nil {
			return nil, err
		}
		return []netip.Addr{h.addr}, nil
	}
	if metadataNames[h.name] {
		return nil, &AddressError{Host: raw, Range: "cloud metadata name", Metadata: true}
	}
	if isLocalhost(h.name) {
		if !allowPrivate {
			return nil, &AddressError{Host: raw, Range: "loopback name"}
		}
		return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}, nil
	}
	answers, err := r.LookupIPAddr(ctx, h.lookup)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrResolve, h.lookup, err)
	}
	if len(answers) == 0 {
		return nil, fmt.Errorf("%w: %s: no addresses", ErrResolve, h.lookup)
	}
	addrs := make([]netip.Addr, 0, len(answers))
	for _, ans := range answers {
		a, ok := netip.AddrFromSlice(ans.IP)
		if !ok {
			return nil, fmt.Errorf("%w: %s: bad address %v", ErrResolve, h.lookup, ans.IP)
		}
		a = a.Unmap()
		if ans.Zone != "" && a.Is6() {
			a = a.WithZone(ans.Zone)
		}
		// Every answer must pass: a rebinding name may mix a public and a
		// private address.
		if err := verdict(raw, a, allowPrivate); err != nil {
			return nil, err
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}
