package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		addr string
		want class
	}{
		{name: "public v4", addr: "93.184.215.14", want: public},
		{name: "public v6", addr: "2606:2800:21f:cb07:6820:80da:af6b:8b2c", want: public},
		{name: "loopback", addr: "127.0.0.1", want: private},
		{name: "loopback top", addr: "127.255.255.254", want: private},
		{name: "loopback v6", addr: "::1", want: private},
		{name: "rfc1918 10", addr: "10.0.0.1", want: private},
		{name: "rfc1918 172", addr: "172.31.255.255", want: private},
		{name: "just outside 172.16/12", addr: "172.32.0.1", want: public},
		{name: "rfc1918 192", addr: "192.168.1.1", want: private},
		{name: "link-local v4 is metadata", addr: "169.254.1.1", want: metadata},
		{name: "link-local v6", addr: "fe80::1", want: private},
		{name: "link-local v6 zone", addr: "fe80::1%eth0", want: private},
		{name: "cgnat", addr: "100.64.0.1", want: private},
		{name: "cgnat top", addr: "100.127.255.255", want: private},
		{name: "multicast v4", addr: "224.0.0.1", want: private},
		{name: "multicast v6", addr: "ff02::1", want: private},
		{name: "unspecified v4", addr: "0.0.0.0", want: private},
		{name: "this network", addr: "0.1.2.3", want: private},
		{name: "unspecified v6", addr: "::", want: private},
		{name: "broadcast", addr: "255.255.255.255", want: private},
		{name: "reserved", addr: "240.0.0.1", want: private},
		{name: "unique-local", addr: "fc00::1", want: private},
		{name: "unique-local fd", addr: "fd12:3456::1", want: private},
		{name: "site-local", addr: "fec0::1", want: private},
		{name: "mapped loopback", addr: "::ffff:127.0.0.1", want: private},
		{name: "mapped public", addr: "::ffff:93.184.215.14", want: public},
		{name: "mapped metadata", addr: "::ffff:169.254.169.254", want: metadata},
		{name: "compatible loopback", addr: "::127.0.0.1", want: private},
		{name: "compatible public", addr: "::93.184.215.14", want: private},
		{name: "compatible metadata", addr: "::169.254.169.254", want: metadata},
		{name: "translated", addr: "::ffff:0:10.0.0.1", want: private},
		{name: "nat64 private", addr: "64:ff9b::10.0.0.1", want: private},
		{name: "nat64 loopback", addr: "64:ff9b::7f00:1", want: private},
		{name: "nat64 public", addr: "64:ff9b::93.184.215.14", want: public},
		{name: "nat64 metadata", addr: "64:ff9b::a9fe:a9fe", want: metadata},
		{name: "nat64 local-use", addr: "64:ff9b:1::1", want: private},
		{name: "nat64 local-use metadata", addr: "64:ff9b:1:a9fe:a9:fe00::", want: metadata},
		{name: "6to4 private", addr: "2002:c0a8:101::1", want: private},
		{name: "6to4 loopback", addr: "2002:7f00:1::", want: private},
		{name: "6to4 public", addr: "2002:5db8:d70e::1", want: public},
		{name: "6to4 metadata", addr: "2002:a9fe:a9fe::", want: metadata},
		{name: "teredo", addr: "2001:0:4136:e378:8000:63bf:3fff:fdd2", want: private},
		{name: "teredo client metadata", addr: "2001:0:4136:e378::5601:5601", want: metadata},
		{name: "teredo server metadata", addr: "2001:0:a9fe:a9fe::1", want: metadata},
		{name: "documentation v4 1", addr: "192.0.2.1", want: private},
		{name: "documentation v4 2", addr: "198.51.100.1", want: private},
		{name: "documentation v4 3", addr: "203.0.113.1", want: private},
		{name: "benchmark v4", addr: "198.19.255.255", want: private},
		{name: "documentation v6", addr: "2001:db8::1", want: private},
		{name: "documentation v6 new", addr: "3fff::1", want: private},
		{name: "benchmark v6", addr: "2001:2::1", want: private},
		{name: "discard v6", addr: "100::1", want: private},
		{name: "outside 2000::/3", addr: "4000::1", want: private},
		{name: "aws metadata", addr: "169.254.169.254", want: metadata},
		{name: "ecs metadata", addr: "169.254.170.2", want: metadata},
		{name: "aws v6 metadata", addr: "fd00:ec2::254", want: metadata},
		{name: "gcp v6 metadata", addr: "fd20:ce::254", want: metadata},
		{name: "alibaba metadata", addr: "100.100.100.200", want: metadata},
		{name: "oracle metadata", addr: "192.0.0.192", want: metadata},
		{name: "azure wireserver", addr: "168.63.129.16", want: metadata},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, what := classify(netip.MustParseAddr(tc.addr))
			if got != tc.want {
				t.Fatalf("classify(%s) = %d (%s), want %d", tc.addr, got, what, tc.want)
			}
			if (got == public) != (what == "") {
				t.Fatalf("classify(%s) = %d with range %q", tc.addr, got, what)
			}
		})
	}
}

// fakeResolver answers from a table: the i-th lookup of a name gets
// answers[name][i], the last answer repeating. It stands in for a DNS server
// returning rebinding answers, which the tests cannot run.
type fakeResolver struct {
	answers map[string][][]string
	err     error // returned for every lookup when set

	mu      sync.Mutex
	lookups []string
}

func (f *fakeResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	f.mu.Lock()
	n := 0
	for _, l := range f.lookups {
		if l == host {
			n++
		}
	}
	f.lookups = append(f.lookups, host)
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	seq, ok := f.answers[host]
	if !ok || len(seq) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, s := range seq[min(n, len(seq)-1)] {
		a := netip.MustParseAddr(s)
		out = append(out, net.IPAddr{IP: net.IP(a.AsSlice()), Zone: a.Zone()})
	}
	return out, nil
}

func (f *fakeResolver) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.lookups)
}

func TestCheck(t *testing.T) {
	res := &fakeResolver{answers: map[string][][]string{
		"public.example":   {{"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"}},
		"private.example":  {{"10.0.0.7"}},
		"mixed.example":    {{"93.184.215.14", "192.168.0.1"}},
		"mixed6.example":   {{"93.184.215.14", "::1"}},
		"mapped.example":   {{"::ffff:127.0.0.1"}},
		"meta.example":     {{"169.254.169.254"}},
		"empty.example":    {{}},
		"xn--bcher-kva.de": {{"93.184.215.14"}},
		"dotted.example.":  {{"93.184.215.14"}},
		"xn--lcalhost-nbh": {{"127.0.0.1"}},
		"xn--pple-43d.com": {{"93.184.215.14"}},
	}}
	tests := []struct {
		name         string
		host         string
		allowPrivate bool
		want         []string
		wantErr      error
		wantNoLookup bool
		// wantLookup, when set, is the name the resolver must be asked.
		wantLookup string
	}{
		{name: "public name", host: "public.example", want: []string{"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"}},
		{name: "public literal", host: "93.184.215.14", want: []string{"93.184.215.14"}, wantNoLookup: true},
		{name: "public literal decimal", host: "1572394766", want: []string{"93.184.215.14"}, wantNoLookup: true},
		{name: "private name", host: "private.example", wantErr: ErrBlockedAddress},
		{name: "private name allowed", host: "private.example", allowPrivate: true, want: []string{"10.0.0.7"}},
		{name: "one private answer of two", host: "mixed.example", wantErr: ErrBlockedAddress},
		{name: "loopback v6 answer", host: "mixed6.example", wantErr: ErrBlockedAddress},
		{name: "mapped answer", host: "mapped.example", wantErr: ErrBlockedAddress},
		{name: "metadata answer", host: "meta.example", wantErr: ErrCloudMetadata},
		{name: "metadata answer allowed private", host: "meta.example", allowPrivate: true, wantErr: ErrCloudMetadata},
		{name: "no answer", host: "empty.example", wantErr: ErrResolve},
		{name: "unknown name", host: "nowhere.example", wantErr: ErrResolve},
		{name: "idn", host: "bücher.de", want: []string{"93.184.215.14"}},
		{name: "trailing dot keeps fqdn lookup", host: "dotted.example.", want: []string{"93.184.215.14"}},
		{name: "localhost", host: "localhost", wantErr: ErrBlockedAddress, wantNoLookup: true},
		{name: "localhost allowed", host: "LocalHost.", allowPrivate: true, want: []string{"127.0.0.1", "::1"}, wantNoLookup: true},
		{name: "sub localhost", host: "app.localhost", wantErr: ErrBlockedAddress, wantNoLookup: true},
		{name: "metadata name", host: "metadata.google.internal", allowPrivate: true, wantErr: ErrCloudMetadata, wantNoLookup: true},
		{name: "metadata name upper dot", host: "METADATA.GOOGLE.INTERNAL.", allowPrivate: true, wantErr: ErrCloudMetadata, wantNoLookup: true},
		{name: "metadata short", host: "metadata", allowPrivate: true, wantErr: ErrCloudMetadata, wantNoLookup: true},
		{name: "instance-data", host: "instance-data", allowPrivate: true, wantErr: ErrCloudMetadata, wantNoLookup: true},
		{name: "metadata literal allowed private", host: "169.254.169.254", allowPrivate: true, wantErr: ErrCloudMetadata, wantNoLookup: true},
		{name: "metadata v6 literal", host: "[fd00:ec2::254]", allowPrivate: true, wantErr: ErrCloudMetadata, wantNoLookup: true},
		{name: "loopback hex", host: "0x7f.1", wantErr: ErrBlockedAddress, wantNoLookup: true},
		{name: "loopback hex allowed", host: "0x7f.1", allowPrivate: true, want: []string{"127.0.0.1"}, wantNoLookup: true},
		{name: "zone literal", host: "fe80::1%eth0", wantErr: ErrBlockedAddress, wantNoLookup: true},
		{name: "zone literal allowed", host: "fe80::1%eth0", allowPrivate: true, want: []string{"fe80::1%eth0"}, wantNoLookup: true},
		{name: "invalid", host: "1.2.3.4.5", wantErr: ErrInvalidHost, wantNoLookup: true},
		// The host as IDNA normalises it is what is checked: forms that
		// map to a private literal or name stay blocked, confusables are
		// looked up as their own punycode name, bad punycode goes nowhere.
		{name: "fullwidth private literal", host: "１０．０．０．１", wantErr: ErrBlockedAddress, wantNoLookup: true},
		{name: "fullwidth hex loopback", host: "０ｘ７ｆ．１", wantErr: ErrBlockedAddress, wantNoLookup: true},
		{name: "circled localhost", host: "ⓛⓞⓒⓐⓛⓗⓞⓢⓣ", wantErr: ErrBlockedAddress, wantNoLookup: true},
		{name: "soft hyphen in localhost", host: "local\u00adhost", wantErr: ErrBlockedAddress, wantNoLookup: true},
		{name: "variation selector on localhost", host: "localhost\ufe0f", wantErr: ErrBlockedAddress, wantNoLookup: true},
		{name: "fullwidth metadata name", host: "ｍｅｔａｄａｔａ．ｇｏｏｇｌｅ．ｉｎｔｅｒｎａｌ", allowPrivate: true, wantErr: ErrCloudMetadata, wantNoLookup: true},
		{name: "long s metadata name", host: "inſtance-data", allowPrivate: true, wantErr: ErrCloudMetadata, wantNoLookup: true},
		{name: "cyrillic o localhost resolving to loopback", host: "lоcalhost", wantErr: ErrBlockedAddress, wantLookup: "xn--lcalhost-nbh"},
		{name: "cyrillic a confusable", host: "аpple.com", want: []string{"93.184.215.14"}, wantLookup: "xn--pple-43d.com"},
		{name: "punycode empty last", host: "dotted.example.xn--", wantErr: ErrInvalidHost, wantNoLookup: true},
		{name: "punycode spelling localhost", host: "xn--localhost-", wantErr: ErrInvalidHost, wantNoLookup: true},
		{name: "latin with hebrew", host: "a\u05d0.example", wantErr: ErrInvalidHost, wantNoLookup: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(res.calls())
			got, err := Check(context.Background(), res, tc.host, tc.allowPrivate)
			calls := res.calls()[before:]
			if tc.wantNoLookup && len(calls) != 0 {
				t.Errorf("Check(%q) looked %v up", tc.host, calls)
			}
			if tc.wantLookup != "" && !slices.Equal(calls, []string{tc.wantLookup}) {
				t.Errorf("Check(%q) looked %v up, want %q", tc.host, calls, tc.wantLookup)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Check(%q) = %v, %v; want %v", tc.host, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Check(%q): %v", tc.host, err)
			}
			var want []netip.Addr
			for _, s := range tc.want {
				want = append(want, netip.MustParseAddr(s))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("Check(%q) = %v, want %v", tc.host, got, want)
			}
		})
	}
}

func TestAddressErrorMatches(t *testing.T) {
	_, err := Check(context.Background(), nil, "169.254.169.254", false)
	var ae *AddressError
	if !errors.As(err, &ae) || !ae.Metadata || ae.Addr != netip.MustParseAddr("169.254.169.254") {
		t.Fatalf("Check(metadata) = %v, want an *AddressError for the metadata address", err)
	}
	if !errors.Is(err, ErrBlockedAddress) || !errors.Is(err, ErrCloudMetadata) {
		t.Fatalf("%v does not match both sentinels", err)
	}
	_, err = Check(context.Background(), nil, "10.0.0.1", false)
	if !errors.Is(err, ErrBlockedAddress) || errors.Is(err, ErrCloudMetadata) {
		t.Fatalf("Check(10.0.0.1) = %v, want ErrBlockedAddress only", err)
	}
}

func TestCheckURL(t *testing.T) {
	res := &fakeResolver{answers: map[string][][]string{"public.example": {{"93.184.215.14"}}}}
	tests := []struct {
		name    string
		url     string
		wantErr error
	}{
		{name: "http", url: "http://public.example/page"},
		{name: "https port", url: "https://public.example:8443/"},
		{name: "userinfo", url: "http://user:pw@public.example/"},
		{name: "ftp", url: "ftp://public.example/", wantErr: ErrBlockedScheme},
		{name: "file", url: "file:///etc/passwd", wantErr: ErrBlockedScheme},
		{name: "javascript", url: "javascript:alert(1)", wantErr: ErrBlockedScheme},
		{name: "relative", url: "/path", wantErr: ErrBlockedScheme},
		{name: "no host", url: "http:///path", wantErr: ErrInvalidHost},
		{name: "bad port", url: "http://public.example:0/", wantErr: ErrInvalidHost},
		{name: "decimal loopback", url: "http://2130706433/", wantErr: ErrBlockedAddress},
		{name: "ipv6 zone", url: "http://[fe80::1%25eth0]:8080/", wantErr: ErrBlockedAddress},
		{name: "mapped v6", url: "http://[::ffff:169.254.169.254]/", wantErr: ErrCloudMetadata},
		{name: "upper localhost", url: "HTTP://LOCALHOST:8080/", wantErr: ErrBlockedAddress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckURL(context.Background(), res, tc.url, false)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("CheckURL(%q) = %v, want %v", tc.url, err, tc.wantErr)
			}
		})
	}
}
