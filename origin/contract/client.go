package contract

import (
	"net"
	"net/netip"
	"strings"
)

// HeaderForwardedFor is the header the edge appends its client's address
// to (X-Forwarded-For), on relayed requests and on its own OG fills.
const HeaderForwardedFor = "X-Forwarded-For"

// ClientAddr returns the address of the client a request at the origin
// came from: the last entry of X-Forwarded-For, which the edge appends to
// whatever the client sent (the entries before it are the client's own
// and cannot be trusted), else the peer's address. The origin's port is
// internal: whoever reaches it directly is an edge or an operator. ok is
// false when neither names an address.
func ClientAddr(forwardedFor, remoteAddr string) (addr netip.Addr, ok bool) {
	if i := strings.LastIndexByte(forwardedFor, ','); i >= 0 {
		forwardedFor = forwardedFor[i+1:]
	}
	if a, err := netip.ParseAddr(strings.TrimSpace(forwardedFor)); err == nil {
		return a.Unmap().WithZone(""), true
	}
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

// ClientKey is what per-client limits count by: an IPv4 address, or the
// /64 an IPv6 address is in (one subscriber usually holds a whole /64, so
// counting single IPv6 addresses would give one client 2^64 allowances).
func ClientKey(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
