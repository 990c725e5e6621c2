package forward

import (
	"net/netip"
	"strings"
	"testing"
)

func TestClient(t *testing.T) {
	lb := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, tt := range []struct {
		name          string
		peer          string
		xff           []string
		trusted       []netip.Prefix
		client, chain string
	}{
		{"no proxy: the peer", "198.51.100.7", nil, nil, "198.51.100.7", "198.51.100.7"},
		{"no trusted proxy: a client's X-Forwarded-For is kept, the peer appended", "198.51.100.7", []string{"1.2.3.4"}, nil, "198.51.100.7", "1.2.3.4, 198.51.100.7"},
		{"an untrusted peer's forgery does not count", "198.51.100.7", []string{"203.0.113.9"}, lb, "198.51.100.7", "203.0.113.9, 198.51.100.7"},
		{"behind a trusted load balancer", "10.1.2.3", []string{"203.0.113.9"}, lb, "203.0.113.9", "203.0.113.9"},
		{"a forged entry before the real client stays before it", "10.1.2.3", []string{"1.1.1.1, 203.0.113.9"}, lb, "203.0.113.9", "1.1.1.1, 203.0.113.9"},
		{"two trusted hops, lines and entries", "10.1.2.3", []string{"1.1.1.1", "203.0.113.9, 10.9.9.9"}, lb, "203.0.113.9", "1.1.1.1, 203.0.113.9"},
		{"IPv4-mapped peer and entries", "::ffff:10.1.2.3", []string{"::ffff:203.0.113.9"}, lb, "203.0.113.9", "::ffff:203.0.113.9"},
		{"IPv6", "fd00::1", []string{"2001:db8::5"}, lb, "2001:db8::5", "2001:db8::5"},
		{"garbage stops the walk at the last trusted hop", "10.1.2.3", []string{"203.0.113.9, unknown, 10.9.9.9"}, lb, "10.9.9.9", "10.9.9.9"},
		{"only trusted hops", "10.1.2.3", []string{"10.4.4.4"}, lb, "10.4.4.4", "10.4.4.4"},
		{"a trusted peer with no header is the client", "10.1.2.3", nil, lb, "10.1.2.3", "10.1.2.3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client, chain := Client(netip.MustParseAddr(tt.peer), tt.xff, tt.trusted)
			if client.String() != tt.client || chain != tt.chain {
				t.Fatalf("Client = %s, %q; want %s, %q", client, chain, tt.client, tt.chain)
			}
			if last := chain[strings.LastIndex(chain, " ")+1:]; netip.MustParseAddr(last).Unmap() != client {
				t.Fatalf("the chain %q does not end with the client %s", chain, client)
			}
		})
	}
}

func FuzzClient(f *testing.F) {
	f.Add("10.1.2.3", "203.0.113.9, 10.9.9.9")
	f.Add("198.51.100.7", "x,,y")
	f.Add("fd00::1", "::ffff:1.2.3.4, fd00::2")
	lb := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	f.Fuzz(func(t *testing.T, peer, xff string) {
		p, err := netip.ParseAddr(peer)
		if err != nil {
			return
		}
		client, chain := Client(p, []string{xff}, lb)
		if !client.IsValid() {
			t.Fatalf("no client for %s %q", peer, xff)
		}
		last := chain[strings.LastIndex(chain, ",")+1:]
		if a, err := netip.ParseAddr(strings.TrimSpace(last)); err != nil || a.Unmap().WithZone("") != client.WithZone("") {
			t.Fatalf("chain %q does not end with the client %s", chain, client)
		}
	})
}
