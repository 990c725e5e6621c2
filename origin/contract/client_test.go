package contract

import (
	"net/netip"
	"testing"
)

func TestClientAddr(t *testing.T) {
	for _, tt := range []struct {
		name, xff, remote, want string
	}{
		{"no header", "", "192.0.2.1:5000", "192.0.2.1"},
		{"the edge's entry is the last", "10.0.0.1, 198.51.100.7", "127.0.0.1:4000", "198.51.100.7"},
		{"a forged first entry is ignored", "1.2.3.4,198.51.100.7", "127.0.0.1:4000", "198.51.100.7"},
		{"IPv4-mapped is IPv4", "::ffff:198.51.100.7", "127.0.0.1:4000", "198.51.100.7"},
		{"IPv6 with a zone", "", "[fe80::1%eth0]:80", "fe80::1"},
		{"garbage falls back to the peer", "not an address", "[2001:db8::1]:80", "2001:db8::1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ClientAddr(tt.xff, tt.remote)
			if !ok || got != netip.MustParseAddr(tt.want) {
				t.Fatalf("ClientAddr(%q, %q) = %v, %v; want %s", tt.xff, tt.remote, got, ok, tt.want)
			}
		})
	}
	if _, ok := ClientAddr("", "pipe"); ok {
		t.Fatal("an address out of nothing")
	}
}

func TestClientKey(t *testing.T) {
	a := ClientKey(netip.MustParseAddr("2001:db8:1:2:aaaa::1"))
	b := ClientKey(netip.MustParseAddr("2001:db8:1:2:bbbb::9"))
	c := ClientKey(netip.MustParseAddr("2001:db8:1:3::1"))
	if a != b || a == c {
		t.Fatalf("IPv6 keys %q %q %q: want one /64 a key", a, b, c)
	}
	if k := ClientKey(netip.MustParseAddr("198.51.100.7")); k != "198.51.100.7" {
		t.Fatalf("IPv4 key %q", k)
	}
}
