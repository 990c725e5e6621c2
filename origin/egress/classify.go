package egress

import (
	"net/netip"
	"strings"
)

// class is the verdict of the address rules.
type class uint8

const (
	// public addresses are always allowed.
	public class = iota
	// private addresses are allowed only with Policy.AllowPrivate.
	private
	// metadata addresses are never allowed.
	metadata
)

type namedPrefix struct {
	prefix netip.Prefix
	name   string
}

func prefixes(list ...string) []namedPrefix {
	out := make([]namedPrefix, 0, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		out = append(out, namedPrefix{netip.MustParsePrefix(list[i]), list[i+1]})
	}
	return out
}

// metadataAddrs are cloud metadata services outside 169.254.0.0/16 (which
// holds 169.254.169.254, AWS ECS's 169.254.170.2 and Tencent's 169.254.0.23).
var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("100.100.100.200"):    true, // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"):        true, // Oracle Cloud
	netip.MustParseAddr("168.63.129.16"):      true, // Azure WireServer
	netip.MustParseAddr("fd00:ec2::254"):      true, // AWS IMDS over IPv6
	netip.MustParseAddr("fd00:ec2::23"):       true, // AWS EKS pod identity
	netip.MustParseAddr("fd00:ec2::123"):      true, // AWS time sync
	netip.MustParseAddr("fd20:ce::254"):       true, // GCP metadata over IPv6
	netip.MustParseAddr("fd00:c1::a9fe:a9fe"): true, // Oracle Cloud over IPv6
}

// linkLocal4 holds the metadata, DNS and time services of most clouds, so
// all of it stays blocked.
var linkLocal4 = netip.MustParsePrefix("169.254.0.0/16")

// metadataNames are host names of cloud metadata services.
var metadataNames = map[string]bool{
	"metadata":                     true,
	"metadata.google.internal":     true,
	"metadata.goog":                true,
	"instance-data":                true,
	"instance-data.ec2.internal":   true,
	"metadata.tencentyun.com":      true,
	"metadata.packet.net":          true,
	"metadata.platformequinix.com": true,
}

var private4 = prefixes(
	"0.0.0.0/8", "unspecified",
	"10.0.0.0/8", "private",
	"100.64.0.0/10", "cgnat",
	"127.0.0.0/8", "loopback",
	"172.16.0.0/12", "private",
	"192.0.0.0/24", "ietf protocol assignment",
	"192.0.2.0/24", "documentation",
	"192.88.99.0/24", "6to4 relay anycast",
	"192.168.0.0/16", "private",
	"198.18.0.0/15", "benchmarking",
	"198.51.100.0/24", "documentation",
	"203.0.113.0/24", "documentation",
	"224.0.0.0/4", "multicast",
	"255.255.255.255/32", "broadcast",
	"240.0.0.0/4", "reserved",
)

var private6 = prefixes(
	"::/128", "unspecified",
	"::1/128", "loopback",
	"100::/64", "discard-only",
	"2001:2::/48", "benchmarking",
	"2001:10::/28", "orchid",
	"2001:20::/28", "orchid",
	"2001:db8::/32", "documentation",
	"3fff::/20", "documentation",
	"fc00::/7", "unique-local",
	"fe80::/10", "link-local",
	"fec0::/10", "site-local",
	"ff00::/8", "multicast",
)

var (
	globalUnicast6 = netip.MustParsePrefix("2000::/3")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
	v4Compatible   = netip.MustParsePrefix("::/96")
	v4Translated   = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// classify returns the class of a and, unless public, the name of its range.
func classify(a netip.Addr) (class, string) {
	a = a.WithZone("")
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is4() {
		return classify4(a)
	}
	if metadataAddrs[a] {
		return metadata, "cloud metadata"
	}
	b := a.As16()
	v4 := func(i int) netip.Addr { return netip.AddrFrom4([4]byte(b[i : i+4])) }
	switch {
	case nat64.Contains(a):
		// A NAT64 address reaches its embedded IPv4 address.
		if c, what := classify4(v4(12)); c != public {
			return c, "nat64 of " + what
		}
		return public, ""
	case sixToFour.Contains(a):
		// 6to4 reaches its embedded IPv4 address.
		if c, what := classify4(v4(2)); c != public {
			return c, "6to4 of " + what
		}
		return public, ""
	case nat64Local.Contains(a):
		// RFC 6052 /48 layout: the IPv4 address skips the u octet.
		return embedded(netip.AddrFrom4([4]byte{b[6], b[7], b[9], b[10]}), "local-use nat64")
	case teredo.Contains(a):
		// Teredo embeds the server address and the obfuscated client one.
		c := [4]byte(b[12:16])
		for i := range c {
			c[i] ^= 0xff
		}
		if cls, what := embedded(netip.AddrFrom4(c), "teredo"); cls == metadata {
			return cls, what
		}
		return embedded(v4(4), "teredo")
	case v4Translated.Contains(a):
		return embedded(v4(12), "ipv4-translated")
	}
	for _, p := range private6 {
		if p.prefix.Contains(a) {
			return private, p.name
		}
	}
	if v4Compatible.Contains(a) {
		return embedded(v4(12), "ipv4-compatible")
	}
	if !globalUnicast6.Contains(a) {
		return private, "reserved"
	}
	return public, ""
}

// embedded classifies an IPv6 range that is never public but embeds an
// IPv4 address: metadata if the embedded address is, private otherwise.
func embedded(v4 netip.Addr, what string) (class, string) {
	if c, w := classify4(v4); c == metadata {
		return metadata, what + " of " + w
	}
	return private, what
}

func classify4(a netip.Addr) (class, string) {
	if linkLocal4.Contains(a) || metadataAddrs[a] {
		return metadata, "cloud metadata"
	}
	for _, p := range private4 {
		if p.prefix.Contains(a) {
			return private, p.name
		}
	}
	return public, ""
}

// isLocalhost reports the names that are loopback without any lookup.
func isLocalhost(name string) bool {
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}
