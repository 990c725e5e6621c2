package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseHost(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantAddr string // "" when a name is expected
		wantName string
		wantErr  bool
		// wantMsg, when set, is a part of the refusal's text that says why.
		wantMsg string
	}{
		{name: "dotted quad", in: "127.0.0.1", wantAddr: "127.0.0.1"},
		{name: "trailing dot ip", in: "127.0.0.1.", wantAddr: "127.0.0.1"},
		{name: "decimal", in: "2130706433", wantAddr: "127.0.0.1"},
		{name: "octal parts", in: "0177.0.0.1", wantAddr: "127.0.0.1"},
		{name: "octal whole", in: "017700000001", wantAddr: "127.0.0.1"},
		{name: "hex parts", in: "0x7f.0.0.1", wantAddr: "127.0.0.1"},
		{name: "hex whole", in: "0x7f000001", wantAddr: "127.0.0.1"},
		{name: "hex upper", in: "0X7F.0X0.0X0.0X1", wantAddr: "127.0.0.1"},
		{name: "hex no digits", in: "0x.0x.0x.0x", wantAddr: "0.0.0.0"},
		{name: "short two parts", in: "127.1", wantAddr: "127.0.0.1"},
		{name: "short three parts", in: "127.0.1", wantAddr: "127.0.0.1"},
		{name: "short private", in: "10.1", wantAddr: "10.0.0.1"},
		{name: "two parts 24 bits", in: "10.16777215", wantAddr: "10.255.255.255"},
		{name: "three parts 16 bits", in: "192.168.65535", wantAddr: "192.168.255.255"},
		{name: "zero", in: "0", wantAddr: "0.0.0.0"},
		{name: "leading zeros octal", in: "000000127.0.0.1", wantAddr: "87.0.0.1"},
		{name: "mixed bases", in: "0xa9.0376.43518", wantAddr: "169.254.169.254"},
		{name: "max", in: "4294967295", wantAddr: "255.255.255.255"},
		{name: "overflow whole", in: "4294967296", wantErr: true},
		{name: "overflow part", in: "256.0.0.1", wantErr: true},
		{name: "overflow short last", in: "127.16777216", wantErr: true},
		{name: "five parts", in: "1.2.3.4.5", wantErr: true},
		{name: "bad octal digit", in: "08.0.0.1", wantErr: true},
		{name: "empty part", in: "127..1", wantErr: true},
		{name: "numeric tld after name", in: "foo.127", wantErr: true},
		{name: "huge part", in: "99999999999999999999999", wantErr: true},
		{name: "hex with non hex is a name", in: "0x7g", wantName: "0x7g"},
		{name: "numeric labels before name", in: "127.0.0.1.nip.io", wantName: "127.0.0.1.nip.io"},
		{name: "ipv6 bracketed", in: "[::1]", wantAddr: "::1"},
		{name: "ipv6 bare", in: "::1", wantAddr: "::1"},
		{name: "ipv6 zone encoded", in: "[fe80::1%25eth0]", wantAddr: "fe80::1%eth0"},
		{name: "ipv6 zone", in: "fe80::1%eth0", wantAddr: "fe80::1%eth0"},
		{name: "ipv6 mapped", in: "[::ffff:127.0.0.1]", wantAddr: "127.0.0.1"},
		{name: "ipv6 mapped hex", in: "[::ffff:7f00:1]", wantAddr: "127.0.0.1"},
		{name: "ipv6 upper", in: "[FE80::ABCD]", wantAddr: "fe80::abcd"},
		{name: "ipv4 in brackets", in: "[127.0.0.1]", wantErr: true},
		{name: "ipv6 unterminated", in: "[::1", wantErr: true},
		{name: "ipv6 bad", in: "[::g]", wantErr: true},
		{name: "ipv6 with octal v4", in: "[::ffff:0177.0.0.1]", wantErr: true},
		{name: "name", in: "Example.COM", wantName: "example.com"},
		{name: "name trailing dot", in: "localhost.", wantName: "localhost"},
		{name: "name two trailing dots", in: "localhost..", wantErr: true},
		{name: "name leading dot", in: ".example.com", wantErr: true},
		{name: "underscore", in: "_dmarc.example.com", wantName: "_dmarc.example.com"},
		{name: "space", in: "exa mple.com", wantErr: true},
		{name: "percent", in: "exa%41mple.com", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "dot", in: ".", wantErr: true},
		{name: "idn", in: "bücher.example", wantName: "xn--bcher-kva.example"},
		{name: "idn upper", in: "BÜCHER.example", wantName: "xn--bcher-kva.example"},
		{name: "idn cyrillic", in: "правда.example", wantName: "xn--80aafi6cg.example"},
		{name: "fullwidth localhost", in: "ｌｏｃａｌｈｏｓｔ", wantName: "localhost"},
		{name: "fullwidth ip", in: "１２７．０．０．１", wantAddr: "127.0.0.1"},
		{name: "ideographic dots", in: "127。0。0。1", wantAddr: "127.0.0.1"},
		{name: "circled digits", in: "①②⑦.0.0.1", wantAddr: "127.0.0.1"},
		{name: "idn symbol", in: "a☃.example", wantErr: true},
		{name: "fullwidth colon", in: "127.0.0.1：80", wantErr: true},
		{name: "invalid utf8", in: "a\xff.example", wantErr: true},

		// IDNA through golang.org/x/net/idna. RFC 3492 section 7.1 samples,
		// lower-cased as UTS #46 maps them.
		{name: "rfc 3492 chinese", in: "他们为什么不说中文.example", wantName: "xn--ihqwcrb4cv8a8dqg056pqjye.example"},
		{name: "rfc 3492 japanese mixed case", in: "3年B組金八先生.example", wantName: "xn--3b-ww4c5e180e575a65lsy2b.example"},
		{name: "rfc 3492 single", in: "ü.example", wantName: "xn--tda.example"},
		{name: "punycode given", in: "xn--bcher-kva.example", wantName: "xn--bcher-kva.example"},
		{name: "punycode upper case", in: "XN--BCHER-KVA.EXAMPLE", wantName: "xn--bcher-kva.example"},
		{name: "punycode in fullwidth", in: "ｘｎ－－ｂｃｈｅｒ－ｋｖａ.example", wantName: "xn--bcher-kva.example"},
		{name: "sharp s kept (nontransitional)", in: "faß.de", wantName: "xn--fa-hia.de"},
		{name: "capital sharp s maps to ss", in: "ẞ.de", wantName: "ss.de"},
		{name: "hyphens as browsers allow", in: "r3---sn-apo3qvuoxuxbt-j5pe.googlevideo.com", wantName: "r3---sn-apo3qvuoxuxbt-j5pe.googlevideo.com"},
		// Forms that map to ASCII come out as the ASCII host, so that the
		// name rules (localhost, metadata names) and the IPv4 reading see it.
		{name: "circled letters", in: "ⓛⓞⓒⓐⓛⓗⓞⓢⓣ", wantName: "localhost"},
		{name: "mathematical bold", in: "𝐥𝐨𝐜𝐚𝐥𝐡𝐨𝐬𝐭", wantName: "localhost"},
		{name: "fullwidth upper case", in: "ＬＯＣＡＬＨＯＳＴ", wantName: "localhost"},
		{name: "kelvin sign", in: "\u212aubernetes.default", wantName: "kubernetes.default"},
		{name: "long s", in: "inſtance-data", wantName: "instance-data"},
		{name: "soft hyphen dropped", in: "local\u00adhost", wantName: "localhost"},
		{name: "zero width space dropped", in: "local\u200bhost", wantName: "localhost"},
		{name: "variation selector dropped", in: "localhost\ufe0f", wantName: "localhost"},
		{name: "fullwidth hex short", in: "０ｘ７ｆ．１", wantAddr: "127.0.0.1"},
		{name: "fullwidth private", in: "１０．０．０．１", wantAddr: "10.0.0.1"},
		{name: "halfwidth ideographic dots", in: "127｡0｡0｡1", wantAddr: "127.0.0.1"},
		// A confusable is another name, never the ASCII name it imitates:
		// it is resolved and its answers checked like any other.
		{name: "latin with a cyrillic a", in: "аpple.com", wantName: "xn--pple-43d.com"},
		{name: "localhost with a cyrillic o", in: "lоcalhost", wantName: "xn--lcalhost-nbh"},
		{name: "latin with a greek omicron", in: "g\u03bfogle.com", wantName: "xn--gogle-rce.com"},
		// Refused.
		{name: "latin with hebrew (bidi rule)", in: "a\u05d0.example", wantErr: true, wantMsg: "invalid label"},
		{name: "leading combining mark", in: "\u0301a.example", wantErr: true, wantMsg: "invalid label"},
		{name: "zero width joiner between latin", in: "a\u200db.example", wantErr: true},
		{name: "hangul filler", in: "local\u3164host", wantErr: true, wantMsg: "U+3164"},
		{name: "one dot leader", in: "127\u20240\u20240\u20241", wantErr: true, wantMsg: "U+2024"},
		{name: "emoji", in: "\U0001f4a9.la", wantErr: true, wantMsg: "U+1F4A9"},
		{name: "fullwidth ipv6 literal", in: "［：：１］", wantErr: true},
		{name: "fullwidth percent", in: "exa％41mple.com", wantErr: true},
		{name: "punycode empty", in: "xn--", wantErr: true},
		{name: "punycode empty first", in: "xn--.example", wantErr: true},
		{name: "punycode empty last", in: "example.xn--", wantErr: true, wantMsg: "nothing encoded"},
		{name: "punycode empty last fullwidth", in: "example.ｘｎ－－", wantErr: true, wantMsg: "nothing encoded"},
		{name: "punycode empty last with ignorable", in: "example.xn--\u00ad", wantErr: true, wantMsg: "nothing encoded"},
		{name: "punycode empty before root", in: "example.xn--.", wantErr: true},
		{name: "punycode truncated", in: "xn--a.example", wantErr: true, wantMsg: "invalid label"},
		{name: "punycode of ascii", in: "xn--abc-.example", wantErr: true, wantMsg: "invalid label"},
		{name: "punycode spelling localhost", in: "xn--localhost-", wantErr: true, wantMsg: "invalid label"},
		{name: "punycode overflow", in: "xn--99999999999.example", wantErr: true, wantMsg: "invalid label"},
		{name: "punycode double hyphen", in: "xn--ab--cd.example", wantErr: true},
		{name: "punycode of fullwidth localhost", in: "xn--mi7cdqncpe6aj", wantErr: true, wantMsg: "invalid label"},
		{name: "punycode not nfc", in: "xn--bucher-xyd.example", wantErr: true, wantMsg: "invalid label"},
		{name: "punycode of a symbol", in: "xn--n3h.example", wantErr: true, wantMsg: "U+2603"},
		{name: "label of 63 bytes", in: strings.Repeat("a", 63) + ".example", wantName: strings.Repeat("a", 63) + ".example"},
		{name: "label of 64 bytes", in: strings.Repeat("a", 64) + ".example", wantErr: true, wantMsg: "label longer than 63"},
		{name: "punycode label over 63 bytes", in: strings.Repeat("ü", 60) + ".de", wantErr: true, wantMsg: "label longer than 63"},
		{name: "name of 254 bytes", in: strings.Repeat("a.", 126) + "ab", wantErr: true, wantMsg: "name longer than 253"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := parseHost(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidHost) {
					t.Fatalf("parseHost(%q) = %+v, %v; want ErrInvalidHost", tc.in, h, err)
				}
				if !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("parseHost(%q): %v; want it to say %q", tc.in, err, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseHost(%q): %v", tc.in, err)
			}
			if tc.wantAddr != "" {
				if want := netip.MustParseAddr(tc.wantAddr); h.addr != want || h.name != "" {
					t.Fatalf("parseHost(%q) = %+v, want address %v", tc.in, h, want)
				}
				return
			}
			if h.addr.IsValid() || h.name != tc.wantName {
				t.Fatalf("parseHost(%q) = %+v, want name %q", tc.in, h, tc.wantName)
			}
		})
	}
}

func TestSplitHostPort(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		def      uint16
		wantHost string
		wantPort uint16
		wantErr  bool
	}{
		{name: "host port", in: "example.com:8080", def: 80, wantHost: "example.com", wantPort: 8080},
		{name: "default port", in: "example.com", def: 80, wantHost: "example.com", wantPort: 80},
		{name: "empty port", in: "example.com:", def: 80, wantHost: "example.com", wantPort: 80},
		{name: "ipv6 port", in: "[::1]:443", wantHost: "[::1]", wantPort: 443},
		{name: "ipv6 zone port", in: "[fe80::1%25eth0]:443", wantHost: "[fe80::1%25eth0]", wantPort: 443},
		{name: "ipv6 default", in: "[::1]", def: 80, wantHost: "[::1]", wantPort: 80},
		{name: "missing port", in: "example.com", wantErr: true},
		{name: "port zero", in: "example.com:0", def: 80, wantErr: true},
		{name: "port too big", in: "example.com:65536", def: 80, wantErr: true},
		{name: "port sign", in: "example.com:+80", def: 80, wantErr: true},
		{name: "bare ipv6", in: "::1:80", def: 80, wantErr: true},
		{name: "junk after bracket", in: "[::1]x", def: 80, wantErr: true},
		{name: "empty host", in: ":80", def: 80, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, p, err := splitHostPort(tc.in, tc.def)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidHost) {
					t.Fatalf("splitHostPort(%q) = %q, %d, %v; want ErrInvalidHost", tc.in, h, p, err)
				}
				return
			}
			if err != nil || h != tc.wantHost || p != tc.wantPort {
				t.Fatalf("splitHostPort(%q) = %q, %d, %v; want %q, %d", tc.in, h, p, err, tc.wantHost, tc.wantPort)
			}
		})
	}
}

func TestParseHostBoundsWork(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{name: "long ascii", in: strings.Repeat("a.", 600) + "com"},
		{name: "long unicode", in: strings.Repeat("ü", 600) + ".de"},
		{name: "long digits", in: strings.Repeat("1", 2000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseHost(tc.in); !errors.Is(err, ErrInvalidHost) {
				t.Fatalf("parseHost(%d bytes) = %v, want ErrInvalidHost", len(tc.in), err)
			}
		})
	}
}
