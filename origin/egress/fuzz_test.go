package egress

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

type resolverFunc func(ctx context.Context, host string) ([]net.IPAddr, error)

func (f resolverFunc) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	return f(ctx, host)
}

// oracleIPv4 is a second, independent reading of inet_aton built on
// strconv: it returns the address a numeric host names.
func oracleIPv4(host string) (netip.Addr, bool) {
	s := strings.TrimSuffix(strings.ToLower(host), ".")
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, "_+-") || strings.HasPrefix(p, "0b") || strings.HasPrefix(p, "0o") {
			return netip.Addr{}, false
		}
		if p == "0x" {
			vals = append(vals, 0)
			continue
		}
		v, err := strconv.ParseUint(p, 0, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	var ip uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		ip += v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(32-8*(len(vals)-1)) {
		return netip.Addr{}, false
	}
	ip += last
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

// FuzzCheckHost: whatever host comes in, Check either fails or returns
// addresses that are all allowed; numeric hosts never reach the resolver;
// canonical literals parse as net/netip reads them and numeric ones as an
// independent inet_aton does.
func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "2130706433", "0177.0.0.1", "017700000001", "0x7f.0.0.1", "0x7f000001", "0X7F.1",
		"127.1", "10.1", "0x.0x.0x.0x", "4294967295", "4294967296", "1.2.3.4.5", "08.1", "1..2", "127.0.0.1.",
		"[::1]", "::1", "[fe80::1%25eth0]", "fe80::1%eth0", "[::ffff:127.0.0.1]", "::ffff:169.254.169.254",
		"[64:ff9b::7f00:1]", "2002:a9fe:a9fe::", "2001:0:4136:e378::5601:5601", "fd00:ec2::254",
		"localhost", "LOCALHOST.", "a.localhost", "metadata.google.internal", "metadata", "example.com",
		"bücher.de", "ｌｏｃａｌｈｏｓｔ", "１２７．０．０．１", "①②⑦.0.0.1", "127。0。0。1", "0x7g", "foo.0x1",
		"169.254.169.254", "100.100.100.200", "93.184.215.14", "", ".", "[", "[]", "[127.0.0.1]",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	answer := net.IPAddr{IP: net.IPv4(93, 184, 215, 14)}
	f.Fuzz(func(t *testing.T, host string, allowPrivate bool) {
		var looked []string
		res := resolverFunc(func(_ context.Context, name string) ([]net.IPAddr, error) {
			looked = append(looked, name)
			return []net.IPAddr{answer}, nil
		})
		addrs, err := Check(context.Background(), res, host, allowPrivate)
		if err == nil {
			if len(addrs) == 0 {
				t.Fatalf("Check(%q) allowed no addresses", host)
			}
			for _, a := range addrs {
				c, what := classify(a)
				if c == metadata || !allowPrivate && c != public {
					t.Fatalf("Check(%q, %v) allowed %v (%s)", host, allowPrivate, a, what)
				}
				u := a.Unmap()
				if netip.MustParsePrefix("169.254.0.0/16").Contains(u) {
					t.Fatalf("Check(%q) allowed link-local metadata range %v", host, a)
				}
				if !allowPrivate && (u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsMulticast() ||
					u.IsUnspecified() || u.IsInterfaceLocalMulticast() || u.IsLinkLocalMulticast()) {
					t.Fatalf("Check(%q) allowed %v, which net/netip calls non-public", host, a)
				}
			}
		}
		for _, name := range looked {
			n := strings.TrimSuffix(name, ".")
			if _, err := netip.ParseAddr(n); err == nil || endsInNumber(n) {
				t.Fatalf("Check(%q) sent the numeric host %q to the resolver", host, name)
			}
			if _, ok := oracleIPv4(n); ok {
				t.Fatalf("Check(%q) sent %q, an inet_aton address, to the resolver", host, name)
			}
		}
		h, perr := parseHost(host)
		if len(host) > maxRawLen {
			if perr == nil {
				t.Fatalf("parseHost accepted %d bytes", len(host))
			}
			return
		}
		if want, err := netip.ParseAddr(host); err == nil {
			if perr != nil || h.addr != want.Unmap() {
				t.Fatalf("parseHost(%q) = %+v, %v; net/netip reads %v", host, h, perr, want)
			}
			if c1, _ := classify(want); c1 != mustClass(h.addr) {
				t.Fatalf("classify disagrees between %v and %v", want, h.addr)
			}
		}
		if want, ok := oracleIPv4(host); ok {
			if perr != nil || h.addr != want {
				t.Fatalf("parseHost(%q) = %+v, %v; inet_aton reads %v", host, h, perr, want)
			}
		} else if perr == nil && h.addr.Is4() && isASCII(host) && !strings.ContainsAny(host, "[:") {
			t.Fatalf("parseHost(%q) = %v, which inet_aton refuses", host, h.addr)
		}
	})
}

func mustClass(a netip.Addr) class {
	c, _ := classify(a)
	return c
}
