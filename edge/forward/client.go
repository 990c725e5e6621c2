package forward

import (
	"net/netip"
	"strings"
)

// Client returns the address of the client a request came from, and the
// X-Forwarded-For to relay with it, which ends with that address: the
// origin limits anonymous requests (OG pages, OAuth registrations) by the
// last entry (contract.ClientAddr).
//
// The peer is the client, unless it is one of the trusted proxies (a load
// balancer in front of the edges, --trusted-proxies): then the entries its
// X-Forwarded-For lines hold are read from the right, past those of
// trusted proxies, and the first other one is the client; the entries
// after it, the proxies', are dropped from the chain. An entry that is no
// address stops the walk at the last trusted proxy, which is then the
// client: what comes before it cannot be read for sure.
func Client(peer netip.Addr, forwardedFor []string, trusted []netip.Prefix) (client netip.Addr, chain string) {
	peer = peer.Unmap()
	var entries []string
	for _, v := range forwardedFor {
		for e := range strings.SplitSeq(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				entries = append(entries, e)
			}
		}
	}
	if !isTrusted(peer, trusted) {
		return peer, strings.Join(append(entries, peer.String()), ", ")
	}
	client = peer
	for i := len(entries) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(entries[i])
		if err != nil {
			break
		}
		a = a.Unmap().WithZone("")
		client = a
		if !isTrusted(a, trusted) {
			return a, strings.Join(entries[:i+1], ", ")
		}
	}
	// Only trusted proxies, or an unreadable entry: the last trusted one
	// read is the client.
	return client, client.String()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
