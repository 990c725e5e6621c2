package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSchemeRules(t *testing.T) {
	up, hits := newUpstream(t)
	p := port(t, up.URL)
	g, _ := newGateway(t, nil)
	s := openSession(t, g, Policy{AllowPrivate: true})
	tests := []struct {
		name        string
		head        []string
		wantStatus  int
		wantBlocked bool
	}{
		{name: "absolute http", head: []string{"GET http://127.0.0.1:" + p + "/ok HTTP/1.1", "Host: 127.0.0.1:" + p}, wantStatus: 200},
		{name: "absolute ws without upgrade", head: []string{"GET ws://127.0.0.1:" + p + "/ok HTTP/1.1", "Host: 127.0.0.1:" + p}, wantStatus: 200},
		{name: "origin form", head: []string{"GET /path HTTP/1.1", "Host: 127.0.0.1:" + p}, wantStatus: 403, wantBlocked: true},
		{name: "ftp", head: []string{"GET ftp://127.0.0.1:" + p + "/file HTTP/1.1", "Host: 127.0.0.1:" + p}, wantStatus: 403, wantBlocked: true},
		{name: "file", head: []string{"GET file:///etc/passwd HTTP/1.1", "Host: localhost"}, wantStatus: 403, wantBlocked: true},
		{name: "gopher", head: []string{"GET gopher://127.0.0.1:" + p + "/_x HTTP/1.1", "Host: 127.0.0.1:" + p}, wantStatus: 403, wantBlocked: true},
		{name: "absolute https", head: []string{"GET https://127.0.0.1:" + p + "/ HTTP/1.1", "Host: 127.0.0.1:" + p}, wantStatus: 403, wantBlocked: true},
		{name: "absolute wss", head: []string{"GET wss://127.0.0.1:" + p + "/ HTTP/1.1", "Host: 127.0.0.1:" + p}, wantStatus: 403, wantBlocked: true},
		{name: "options star", head: []string{"OPTIONS * HTTP/1.1", "Host: 127.0.0.1:" + p}, wantStatus: 403, wantBlocked: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, hitsBefore := len(s.Blocked()), hits.get()
			resp := rawRoundTrip(t, s.Addr(), tc.head...)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("%s: status %d (%s), want %d", tc.head[0], resp.StatusCode, resp.body, tc.wantStatus)
			}
			blocked := s.Blocked()[before:]
			if !tc.wantBlocked {
				if len(blocked) != 0 || hits.get() != hitsBefore+1 {
					t.Fatalf("allowed request: blocked %v, upstream hits %d", blocked, hits.get()-hitsBefore)
				}
				return
			}
			if len(blocked) != 1 || !errors.Is(blocked[0].Reason, ErrBlockedScheme) {
				t.Fatalf("blocked = %+v, want one ErrBlockedScheme", blocked)
			}
			if hits.get() != hitsBefore {
				t.Fatal("a refused request reached the upstream")
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || resp.body == "" {
				t.Fatalf("refusal body %q (%s), want short text", resp.body, ct)
			}
		})
	}
}

// loopbackSpellings all name 127.0.0.1 (or localhost).
var loopbackSpellings = []struct {
	name string
	host string
	// ascii is the host the upstream sees when host is not ASCII.
	ascii string
}{
	{name: "dotted", host: "127.0.0.1"},
	{name: "trailing dot", host: "127.0.0.1."},
	{name: "decimal", host: "2130706433"},
	{name: "octal parts", host: "0177.0.0.1"},
	{name: "octal whole", host: "017700000001"},
	{name: "hex parts", host: "0x7f.0.0.1"},
	{name: "hex whole", host: "0x7f000001"},
	{name: "hex upper short", host: "0X7F.1"},
	{name: "short", host: "127.1"},
	{name: "three parts", host: "127.0.1"},
	{name: "mapped v6", host: "[::ffff:127.0.0.1]"},
	{name: "mapped v6 hex", host: "[::ffff:7f00:1]"},
	{name: "localhost", host: "localhost"},
	{name: "localhost upper", host: "LOCALHOST"},
	{name: "localhost dot", host: "localhost."},
	{name: "sub localhost", host: "app.localhost"},
	{name: "fullwidth localhost", host: "ｌｏｃａｌｈｏｓｔ", ascii: "localhost"},
	{name: "fullwidth digits", host: "１２７．０．０．１", ascii: "127.0.0.1"},
	{name: "circled localhost", host: "ⓛⓞⓒⓐⓛⓗⓞⓢⓣ", ascii: "localhost"},
	{name: "soft hyphen localhost", host: "local\u00adhost", ascii: "localhost"},
	{name: "fullwidth hex short", host: "０ｘ７ｆ．１", ascii: "127.0.0.1"},
	{name: "halfwidth ideographic dots", host: "127｡0｡0｡1", ascii: "127.0.0.1"},
}

// TestLoopbackSpellings sends every spelling through a real session: refused
// by default, and with AllowPrivate relayed to the real server on
// 127.0.0.1, which proves the spelling was read as that address.
func TestLoopbackSpellings(t *testing.T) {
	up, _ := newUpstream(t)
	echo := echoServer(t)
	p, echoPort := port(t, up.URL), echo[strings.LastIndexByte(echo, ':')+1:]
	res := &fakeResolver{}
	g, _ := newGateway(t, res)
	strict := openSession(t, g, Policy{})
	open := openSession(t, g, Policy{AllowPrivate: true})
	for _, tc := range loopbackSpellings {
		t.Run(tc.name, func(t *testing.T) {
			authority, hostHeader := tc.host+":"+p, tc.host+":"+p
			if tc.ascii != "" {
				// Go's server refuses a Host header that is not ASCII; the
				// authority of the request line is what counts anyway.
				hostHeader = tc.ascii + ":" + p
			}
			head := []string{"GET http://" + authority + "/path?q=1 HTTP/1.1", "Host: " + hostHeader}
			before := len(strict.Blocked())
			resp := rawRoundTrip(t, strict.Addr(), head...)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("strict http %s: %d %q, want 403", authority, resp.StatusCode, resp.body)
			}
			if b := strict.Blocked()[before:]; len(b) != 1 || !errors.Is(b[0].Reason, ErrBlockedAddress) {
				t.Fatalf("strict http %s: blocked %+v", authority, b)
			}
			connectHost := strings.TrimSuffix(hostHeader, p) + echoPort
			resp = rawRoundTrip(t, strict.Addr(), "CONNECT "+tc.host+":"+echoPort+" HTTP/1.1", "Host: "+connectHost)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("strict CONNECT %s: %d, want 403", tc.host, resp.StatusCode)
			}

			resp = rawRoundTrip(t, open.Addr(), head...)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("allowed http %s: %d %q, want 200", authority, resp.StatusCode, resp.body)
			}
			got := decodeSeen(t, resp.body)
			if got.RequestURI != "/path?q=1" || got.Host != hostHeader {
				t.Fatalf("upstream saw %q with Host %q, want /path?q=1 with Host %q", got.RequestURI, got.Host, hostHeader)
			}
			conn, br := connect(t, open.Addr(), tc.host+":"+echoPort, connectHost)
			fmt.Fprint(conn, "ping\n")
			if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
				t.Fatalf("tunnel echo = %q, %v", line, err)
			}
			conn.Close()
		})
	}
	if calls := res.calls(); len(calls) != 0 {
		t.Fatalf("loopback spellings were looked up: %v", calls)
	}
	if len(open.Blocked()) != 0 {
		t.Fatalf("allowed session blocked %+v", open.Blocked())
	}
}

func TestBlockedAddresses(t *testing.T) {
	res := &fakeResolver{}
	g, _ := newGateway(t, res)
	hook := &redirectDial{}
	g.dialHook = hook.dial
	s := openSession(t, g, Policy{})
	tests := []struct {
		name string
		host string
	}{
		{name: "rfc1918 10", host: "10.0.0.1"},
		{name: "rfc1918 10 short", host: "10.1"},
		{name: "rfc1918 172", host: "172.16.5.4"},
		{name: "rfc1918 192", host: "192.168.1.1"},
		{name: "rfc1918 decimal", host: "3232235777"},
		{name: "cgnat", host: "100.64.0.1"},
		{name: "link-local", host: "169.254.10.10"},
		{name: "multicast", host: "224.0.0.1"},
		{name: "unspecified", host: "0.0.0.0"},
		{name: "zero", host: "0"},
		{name: "broadcast", host: "255.255.255.255"},
		{name: "reserved", host: "240.0.0.1"},
		{name: "documentation", host: "192.0.2.1"},
		{name: "benchmark", host: "198.18.0.1"},
		{name: "v6 unspecified", host: "[::]"},
		{name: "v6 loopback", host: "[::1]"},
		{name: "v6 link-local zone", host: "[fe80::1%25eth0]"},
		{name: "v6 unique-local", host: "[fc00::1]"},
		{name: "v6 unique-local fd", host: "[fd00::1]"},
		{name: "v6 multicast", host: "[ff02::1]"},
		{name: "nat64 loopback", host: "[64:ff9b::7f00:1]"},
		{name: "nat64 private", host: "[64:ff9b::a00:1]"},
		{name: "6to4 loopback", host: "[2002:7f00:1::]"},
		{name: "6to4 private", host: "[2002:c0a8:101::1]"},
		{name: "teredo", host: "[2001::1]"},
		{name: "v6 documentation", host: "[2001:db8::1]"},
		{name: "v4 compatible", host: "[::127.0.0.1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.Blocked())
			resp := rawRoundTrip(t, s.Addr(), "GET http://"+tc.host+"/ HTTP/1.1", "Host: "+tc.host)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("GET %s: %d, want 403", tc.host, resp.StatusCode)
			}
			resp = rawRoundTrip(t, s.Addr(), "CONNECT "+tc.host+":443 HTTP/1.1", "Host: "+tc.host+":443")
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("CONNECT %s: %d, want 403", tc.host, resp.StatusCode)
			}
			b := s.Blocked()[before:]
			if len(b) != 2 || !errors.Is(b[0].Reason, ErrBlockedAddress) || !errors.Is(b[1].Reason, ErrBlockedAddress) {
				t.Fatalf("blocked = %+v, want two ErrBlockedAddress", b)
			}
			if want := strings.Replace(tc.host, "%25", "%", 1) + ":443"; b[1].Target != want {
				t.Fatalf("CONNECT target recorded as %q", b[1].Target)
			}
		})
	}
	if d := hook.addrs(); len(d) != 0 {
		t.Fatalf("blocked addresses were dialed: %v", d)
	}
	if c := res.calls(); len(c) != 0 {
		t.Fatalf("literals were looked up: %v", c)
	}
}

func TestMetadataStaysBlockedWithAllowPrivate(t *testing.T) {
	res := &fakeResolver{answers: map[string][][]string{
		"meta.example":  {{"169.254.169.254"}},
		"meta6.example": {{"fd00:ec2::254"}},
	}}
	g, _ := newGateway(t, res)
	hook := &redirectDial{}
	g.dialHook = hook.dial
	s := openSession(t, g, Policy{AllowPrivate: true})
	tests := []struct {
		name string
		host string
	}{
		{name: "aws", host: "169.254.169.254"},
		{name: "aws decimal", host: "2852039166"},
		{name: "aws hex", host: "0xa9fea9fe"},
		{name: "ecs", host: "169.254.170.2"},
		{name: "alibaba", host: "100.100.100.200"},
		{name: "oracle", host: "192.0.0.192"},
		{name: "aws v6", host: "[fd00:ec2::254]"},
		{name: "mapped", host: "[::ffff:169.254.169.254]"},
		{name: "nat64", host: "[64:ff9b::a9fe:a9fe]"},
		{name: "6to4", host: "[2002:a9fe:a9fe::]"},
		{name: "gcp name", host: "metadata.google.internal"},
		{name: "gcp name upper dot", host: "METADATA.GOOGLE.INTERNAL."},
		{name: "short name", host: "metadata"},
		{name: "aws name", host: "instance-data"},
		{name: "resolves to metadata", host: "meta.example"},
		{name: "resolves to v6 metadata", host: "meta6.example"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.Blocked())
			resp := rawRoundTrip(t, s.Addr(), "GET http://"+tc.host+"/latest/meta-data/ HTTP/1.1", "Host: "+tc.host, "Metadata-Flavor: Google")
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("GET %s: %d, want 403", tc.host, resp.StatusCode)
			}
			resp = rawRoundTrip(t, s.Addr(), "CONNECT "+tc.host+":80 HTTP/1.1", "Host: "+tc.host+":80")
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("CONNECT %s: %d, want 403", tc.host, resp.StatusCode)
			}
			b := s.Blocked()[before:]
			if len(b) != 2 || !errors.Is(b[0].Reason, ErrCloudMetadata) || !errors.Is(b[1].Reason, ErrCloudMetadata) {
				t.Fatalf("blocked = %+v, want two ErrCloudMetadata", b)
			}
		})
	}
	if d := hook.addrs(); len(d) != 0 {
		t.Fatalf("metadata was dialed: %v", d)
	}
	for _, name := range res.calls() {
		if name != "meta.example" && name != "meta6.example" {
			t.Fatalf("metadata name %q was looked up", name)
		}
	}
}

// TestResolveOnce proves a name is looked up once per request and the
// checked answer is what gets dialed: the fake resolver answers a public
// address first and loopback after, as a rebinding DNS server would.
func TestResolveOnce(t *testing.T) {
	tests := []struct {
		name    string
		connect bool
	}{
		{name: "http"},
		{name: "connect", connect: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up, hits := newUpstream(t)
			res := &fakeResolver{answers: map[string][][]string{
				"rebind.example": {{"93.184.215.14"}, {"127.0.0.1"}},
			}}
			g, _ := newGateway(t, res)
			hook := &redirectDial{to: up.Listener.Addr().String()}
			g.dialHook = hook.dial
			s := openSession(t, g, Policy{})
			if tc.connect {
				conn, br := connect(t, s.Addr(), "rebind.example:80")
				fmt.Fprint(conn, "GET /x HTTP/1.1\r\nHost: rebind.example\r\n\r\n")
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("through tunnel: %v, %v", resp, err)
				}
				resp.Body.Close()
			} else {
				resp := rawRoundTrip(t, s.Addr(), "GET http://rebind.example/x HTTP/1.1", "Host: rebind.example")
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET: %d %q", resp.StatusCode, resp.body)
				}
				if got := decodeSeen(t, resp.body); got.Host != "rebind.example" {
					t.Fatalf("upstream saw Host %q", got.Host)
				}
			}
			if calls := res.calls(); !slices.Equal(calls, []string{"rebind.example"}) {
				t.Fatalf("lookups = %v, want exactly one", calls)
			}
			if d := hook.addrs(); !slices.Equal(d, []string{"93.184.215.14:80"}) {
				t.Fatalf("dialed %v, want only the first answer 93.184.215.14:80", d)
			}
			if hits.get() != 1 {
				t.Fatalf("upstream hits = %d", hits.get())
			}
			// The next request looks up again, gets loopback and is refused.
			resp := rawRoundTrip(t, s.Addr(), "GET http://rebind.example/x HTTP/1.1", "Host: rebind.example")
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("second GET after rebinding: %d, want 403", resp.StatusCode)
			}
			if d := hook.addrs(); len(d) != 1 {
				t.Fatalf("dialed %v after the rebinding answer", d)
			}
		})
	}
}

func TestEveryAnswerChecked(t *testing.T) {
	up, _ := newUpstream(t)
	res := &fakeResolver{answers: map[string][][]string{
		"public.example":    {{"93.184.215.14"}},
		"twopublic.example": {{"93.184.215.20", "93.184.215.21"}},
		"mixed.example":     {{"93.184.215.14", "10.0.0.1"}},
		"mixed6.example":    {{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", "::1"}},
		"private.example":   {{"192.168.1.20"}},
		"empty.example":     {{}},
	}}
	g, _ := newGateway(t, res)
	hook := &redirectDial{to: up.Listener.Addr().String()}
	g.dialHook = hook.dial
	s := openSession(t, g, Policy{})
	tests := []struct {
		name        string
		host        string
		wantStatus  int
		wantBlocked bool
		wantDial    string
	}{
		{name: "public", host: "public.example", wantStatus: 200, wantDial: "93.184.215.14:80"},
		{name: "two public dials the first", host: "twopublic.example", wantStatus: 200, wantDial: "93.184.215.20:80"},
		{name: "public and private", host: "mixed.example", wantStatus: 403, wantBlocked: true},
		{name: "public and loopback v6", host: "mixed6.example", wantStatus: 403, wantBlocked: true},
		{name: "private", host: "private.example", wantStatus: 403, wantBlocked: true},
		{name: "no answer", host: "empty.example", wantStatus: 502},
		{name: "unknown", host: "unknown.example", wantStatus: 502},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, dialsBefore := len(s.Blocked()), len(hook.addrs())
			resp := rawRoundTrip(t, s.Addr(), "GET http://"+tc.host+"/ HTTP/1.1", "Host: "+tc.host)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("GET %s: %d %q, want %d", tc.host, resp.StatusCode, resp.body, tc.wantStatus)
			}
			if got := len(s.Blocked()) - before; got != map[bool]int{true: 1}[tc.wantBlocked] {
				t.Fatalf("%d new blocked entries", got)
			}
			dials := hook.addrs()[dialsBefore:]
			if tc.wantDial == "" && len(dials) != 0 || tc.wantDial != "" && !slices.Equal(dials, []string{tc.wantDial}) {
				t.Fatalf("dialed %v, want %q", dials, tc.wantDial)
			}
		})
	}
}

func TestDialFallsBackToNextCheckedAddress(t *testing.T) {
	up, _ := newUpstream(t)
	res := &fakeResolver{answers: map[string][][]string{
		"dual.example": {{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", "93.184.215.14"}},
	}}
	g, _ := newGateway(t, res)
	var dialed []string
	g.dialHook = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed = append(dialed, addr)
		if strings.HasPrefix(addr, "[") {
			return nil, errors.New("network unreachable")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, up.Listener.Addr().String())
	}
	s := openSession(t, g, Policy{})
	resp := rawRoundTrip(t, s.Addr(), "GET http://dual.example/ HTTP/1.1", "Host: dual.example")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %q", resp.StatusCode, resp.body)
	}
	if want := []string{"[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:80", "93.184.215.14:80"}; !slices.Equal(dialed, want) {
		t.Fatalf("dialed %v, want %v", dialed, want)
	}
}

func TestDialTimeout(t *testing.T) {
	tests := []struct {
		name string
		head []string
	}{
		{name: "http", head: []string{"GET http://slow.example/ HTTP/1.1", "Host: slow.example"}},
		{name: "connect", head: []string{"CONNECT slow.example:443 HTTP/1.1", "Host: slow.example:443"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.DialTimeout = 50 * time.Millisecond
			cfg.Resolver = &fakeResolver{answers: map[string][][]string{"slow.example": {{"93.184.215.14"}}}}
			g, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			// A dial that never completes on its own: only the timeout ends it.
			g.dialHook = func(ctx context.Context, _, _ string) (net.Conn, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			s := openSession(t, g, Policy{})
			resp := rawRoundTrip(t, s.Addr(), tc.head...)
			if resp.StatusCode != http.StatusGatewayTimeout {
				t.Fatalf("%s: %d %q, want 504", tc.head[0], resp.StatusCode, resp.body)
			}
		})
	}
}

func TestResolveTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.DialTimeout = 50 * time.Millisecond
	cfg.Resolver = blockingResolver{}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := openSession(t, g, Policy{})
	resp := rawRoundTrip(t, s.Addr(), "GET http://hang.example/ HTTP/1.1", "Host: hang.example")
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("GET: %d %q, want 504", resp.StatusCode, resp.body)
	}
}

type blockingResolver struct{}

func (blockingResolver) LookupIPAddr(ctx context.Context, _ string) ([]net.IPAddr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	final, finalHits := newUpstream(t)
	redirector := httptest.NewServer(http.RedirectHandler(final.URL+"/landed", http.StatusFound))
	t.Cleanup(redirector.Close)
	g, _ := newGateway(t, nil)
	s := openSession(t, g, Policy{AllowPrivate: true})
	resp, err := proxyClient(t, s, nil).Get(redirector.URL + "/start")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != final.URL+"/landed" {
		t.Fatalf("got %s Location %q, want the 302 itself", resp.Status, resp.Header.Get("Location"))
	}
	if finalHits.get() != 0 {
		t.Fatal("the proxy followed the redirect")
	}
}

// TestRedirectHopsAreChecked follows a redirect from a public host to
// loopback with a real client: the second hop is a new proxy request and is
// refused.
func TestRedirectHopsAreChecked(t *testing.T) {
	internal, internalHits := newUpstream(t)
	public := httptest.NewServer(http.RedirectHandler(internal.URL+"/secret", http.StatusFound))
	t.Cleanup(public.Close)
	res := &fakeResolver{answers: map[string][][]string{"public.example": {{"93.184.215.14"}}}}
	g, _ := newGateway(t, res)
	g.dialHook = (&redirectDial{to: public.Listener.Addr().String()}).dial
	s := openSession(t, g, Policy{})
	client := proxyClient(t, s, nil)
	client.CheckRedirect = nil // follow, as Chromium does
	resp, err := client.Get("http://public.example/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("after redirect: %s, want 403", resp.Status)
	}
	if internalHits.get() != 0 {
		t.Fatal("the redirect reached loopback")
	}
	b := s.Blocked()
	if len(b) != 1 || b[0].Target != internal.URL+"/secret" || !errors.Is(b[0].Reason, ErrBlockedAddress) {
		t.Fatalf("blocked = %+v", b)
	}
}

func TestHeaders(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "X-Hop-Resp")
		w.Header().Set("X-Hop-Resp", "1")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("Proxy-Whatever", "1")
		w.Header().Set("X-End-To-End", "kept")
		var keys []string
		for k := range r.Header {
			keys = append(keys, k+"="+strings.Join(r.Header[k], ","))
		}
		slices.Sort(keys)
		fmt.Fprintf(w, "host=%s\n%s\n", r.Host, strings.Join(keys, "\n"))
	}))
	t.Cleanup(upstream.Close)
	p := port(t, upstream.URL)
	g, _ := newGateway(t, nil)
	s := openSession(t, g, Policy{AllowPrivate: true})
	resp := rawRoundTrip(t, s.Addr(),
		"GET http://127.0.0.1:"+p+"/h HTTP/1.1",
		"Host: 127.0.0.1:"+p,
		"Proxy-Connection: keep-alive",
		"Proxy-Authorization: Basic dTpw",
		"Proxy-Custom: 1",
		"Connection: X-Hop, keep-alive",
		"X-Hop: 1",
		"Keep-Alive: timeout=5",
		"Te: gzip",
		"Accept-Language: de",
		"User-Agent: Chromium-test",
		"X-Page-Header: yes",
	)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d %q", resp.StatusCode, resp.body)
	}
	lines := strings.Split(strings.TrimSpace(resp.body), "\n")
	if lines[0] != "host=127.0.0.1:"+p {
		t.Fatalf("upstream Host %q", lines[0])
	}
	got := strings.Join(lines[1:], "\n")
	tests := []struct {
		name    string
		header  string
		present bool
	}{
		{name: "proxy-connection dropped", header: "Proxy-Connection="},
		{name: "proxy-authorization dropped", header: "Proxy-Authorization="},
		{name: "other proxy header dropped", header: "Proxy-Custom="},
		{name: "connection dropped", header: "Connection="},
		{name: "connection-listed dropped", header: "X-Hop="},
		{name: "keep-alive dropped", header: "Keep-Alive="},
		{name: "te dropped", header: "Te="},
		{name: "no x-forwarded-for", header: "X-Forwarded-For="},
		{name: "no forwarded", header: "Forwarded="},
		{name: "no via", header: "Via="},
		{name: "end-to-end kept", header: "X-Page-Header=yes", present: true},
		{name: "accept-language kept", header: "Accept-Language=de", present: true},
		{name: "user agent kept", header: "User-Agent=Chromium-test", present: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(got, tc.header) != tc.present {
				t.Fatalf("upstream headers:\n%s\nwant %q present=%v", got, tc.header, tc.present)
			}
		})
	}
	for _, h := range []string{"X-Hop-Resp", "Keep-Alive", "Proxy-Whatever"} {
		if resp.Header.Get(h) != "" {
			t.Errorf("response header %s relayed", h)
		}
	}
	if resp.Header.Get("X-End-To-End") != "kept" {
		t.Error("end-to-end response header dropped")
	}
}

func TestPageForwardedHeadersPassUnchanged(t *testing.T) {
	up, _ := newUpstream(t)
	p := port(t, up.URL)
	g, _ := newGateway(t, nil)
	s := openSession(t, g, Policy{AllowPrivate: true})
	resp := rawRoundTrip(t, s.Addr(), "GET http://127.0.0.1:"+p+"/ HTTP/1.1", "Host: 127.0.0.1:"+p, "X-Forwarded-For: 203.0.113.9")
	got := decodeSeen(t, resp.body)
	if v := got.Header.Values("X-Forwarded-For"); !slices.Equal(v, []string{"203.0.113.9"}) {
		t.Fatalf("X-Forwarded-For = %v, want the page's value only", v)
	}
}

// TestStreaming proves bodies flow both ways without being buffered: each
// side waits for the other's first chunk before sending the rest.
func TestStreaming(t *testing.T) {
	gotFirst := make(chan struct{})
	clientGotFirst := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 5)
		if _, err := io.ReadFull(r.Body, buf); err != nil || string(buf) != "part1" {
			http.Error(w, "bad first part", 400)
			return
		}
		close(gotFirst)
		rest, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got:%s%s;", buf, rest)
		w.(http.Flusher).Flush()
		select {
		case <-clientGotFirst:
		case <-time.After(testTimeout):
			return
		}
		fmt.Fprint(w, "second")
	}))
	t.Cleanup(upstream.Close)
	g, _ := newGateway(t, nil)
	s := openSession(t, g, Policy{AllowPrivate: true})
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, upstream.URL+"/stream", pr)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		if _, err := io.WriteString(pw, "part1"); err != nil {
			errc <- err
			return
		}
		select {
		case <-gotFirst:
		case <-time.After(testTimeout):
			errc <- errors.New("upstream never saw the first request chunk: the request body was buffered")
			pw.Close()
			return
		}
		_, err := io.WriteString(pw, "part2")
		pw.Close()
		errc <- err
	}()
	resp, err := proxyClient(t, s, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString(';')
	if err != nil || first != "got:part1part2;" {
		t.Fatalf("first response chunk %q, %v", first, err)
	}
	close(clientGotFirst)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "second" {
		t.Fatalf("rest %q, %v", rest, err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestWebSocketUpgrade(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			http.Error(w, "want upgrade", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		line, err := brw.ReadString('\n')
		if err != nil {
			return
		}
		fmt.Fprint(conn, "echo:"+line)
	}))
	t.Cleanup(upstream.Close)
	p := port(t, upstream.URL)
	g, _ := newGateway(t, nil)
	s := openSession(t, g, Policy{AllowPrivate: true})
	for _, scheme := range []string{"http", "ws"} {
		t.Run(scheme, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(testTimeout))
			fmt.Fprintf(conn, "GET %s://127.0.0.1:%s/socket HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", scheme, p, p)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("status %s", resp.Status)
			}
			fmt.Fprint(conn, "hello\n")
			line, err := br.ReadString('\n')
			if err != nil || line != "echo:hello\n" {
				t.Fatalf("after upgrade: %q, %v", line, err)
			}
		})
	}
}

func TestConnectTLS(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secure hello")
	}))
	t.Cleanup(tlsSrv.Close)
	base := tlsSrv.Client().Transport.(*http.Transport)
	g, _ := newGateway(t, nil)
	tests := []struct {
		name         string
		allowPrivate bool
		wantBody     string
	}{
		{name: "allowed", allowPrivate: true, wantBody: "secure hello"},
		{name: "refused", allowPrivate: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openSession(t, g, Policy{AllowPrivate: tc.allowPrivate})
			resp, err := proxyClient(t, s, base).Get(tlsSrv.URL + "/")
			if tc.wantBody == "" {
				if err == nil {
					resp.Body.Close()
					t.Fatal("CONNECT to loopback succeeded without AllowPrivate")
				}
				b := s.Blocked()
				if len(b) != 1 || b[0].Target != tlsSrv.Listener.Addr().String() || !errors.Is(b[0].Reason, ErrBlockedAddress) {
					t.Fatalf("blocked = %+v", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if string(body) != tc.wantBody || resp.TLS == nil {
				t.Fatalf("body %q TLS %v", body, resp.TLS != nil)
			}
		})
	}
}

func TestConnectRequiresPort(t *testing.T) {
	g, _ := newGateway(t, nil)
	s := openSession(t, g, Policy{AllowPrivate: true})
	resp := rawRoundTrip(t, s.Addr(), "CONNECT 127.0.0.1 HTTP/1.1", "Host: 127.0.0.1")
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("CONNECT without port: %d", resp.StatusCode)
	}
	if b := s.Blocked(); len(b) != 1 || !errors.Is(b[0].Reason, ErrInvalidHost) {
		t.Fatalf("blocked = %+v", b)
	}
}

func TestInternalHost(t *testing.T) {
	type call struct{ uri, host, path, query, proxyAuth string }
	calls := make(chan call, 10)
	internal := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls <- call{r.RequestURI, r.Host, r.URL.Path, r.URL.RawQuery, r.Header.Get("Proxy-Authorization")}
		fmt.Fprint(w, "internal")
	})
	res := &fakeResolver{}
	g, reg := newGateway(t, res)
	hook := &redirectDial{}
	g.dialHook = hook.dial
	s := openSession(t, g, Policy{InternalHost: "pictor.internal", Internal: internal})
	tests := []struct {
		name       string
		head       []string
		wantStatus int
		wantURI    string
	}{
		{name: "document", head: []string{"GET http://pictor.internal/doc/abc?x=1&y=%2F HTTP/1.1", "Host: pictor.internal", "Proxy-Authorization: Basic eDp5"}, wantStatus: 200, wantURI: "/doc/abc?x=1&y=%2F"},
		{name: "explicit port 80", head: []string{"GET http://pictor.internal:80/emoji/1f600.svg HTTP/1.1", "Host: pictor.internal:80"}, wantStatus: 200, wantURI: "/emoji/1f600.svg"},
		{name: "upper case trailing dot", head: []string{"GET http://PICTOR.INTERNAL./a HTTP/1.1", "Host: PICTOR.INTERNAL."}, wantStatus: 200, wantURI: "/a"},
		{name: "other port", head: []string{"GET http://pictor.internal:8080/a HTTP/1.1", "Host: pictor.internal:8080"}, wantStatus: 403},
		{name: "connect 443", head: []string{"CONNECT pictor.internal:443 HTTP/1.1", "Host: pictor.internal:443"}, wantStatus: 403},
		{name: "connect 80", head: []string{"CONNECT pictor.internal:80 HTTP/1.1", "Host: pictor.internal:80"}, wantStatus: 403},
		{name: "https absolute", head: []string{"GET https://pictor.internal/a HTTP/1.1", "Host: pictor.internal"}, wantStatus: 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.Blocked())
			resp := rawRoundTrip(t, s.Addr(), tc.head...)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("%s: %d %q, want %d", tc.head[0], resp.StatusCode, resp.body, tc.wantStatus)
			}
			if tc.wantStatus != 200 {
				if b := s.Blocked()[before:]; len(b) != 1 || !errors.Is(b[0].Reason, ErrBlockedScheme) {
					t.Fatalf("blocked = %+v, want one ErrBlockedScheme", b)
				}
				return
			}
			c := <-calls
			if c.uri != tc.wantURI || resp.body != "internal" || c.proxyAuth != "" {
				t.Fatalf("internal handler got %+v, body %q; want request URI %q without Proxy-*", c, resp.body, tc.wantURI)
			}
		})
	}
	if len(res.calls()) != 0 || len(hook.addrs()) != 0 {
		t.Fatalf("internal host was looked up %v or dialed %v", res.calls(), hook.addrs())
	}
	if got := counterValue(t, reg, kindInternal, outcomeAllowed); got != 3 {
		t.Fatalf("internal allowed = %v, want 3", got)
	}
}

func TestOpenValidatesPolicy(t *testing.T) {
	g, _ := newGateway(t, nil)
	ok := http.NotFoundHandler()
	tests := []struct {
		name    string
		policy  Policy
		wantErr bool
	}{
		{name: "empty", policy: Policy{}},
		{name: "internal", policy: Policy{InternalHost: "pictor.internal", Internal: ok}},
		{name: "internal without handler", policy: Policy{InternalHost: "pictor.internal"}, wantErr: true},
		{name: "internal ip", policy: Policy{InternalHost: "10.0.0.1", Internal: ok}, wantErr: true},
		{name: "internal with port", policy: Policy{InternalHost: "pictor.internal:80", Internal: ok}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := g.Open(tc.policy)
			if err == nil {
				defer s.Close()
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("Open(%+v) error %v, want error %v", tc.policy, err, tc.wantErr)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr bool
	}{
		{name: "default", mutate: func(*Config) {}},
		{name: "zero dial timeout", mutate: func(c *Config) { c.DialTimeout = 0 }, wantErr: true},
		{name: "negative dial timeout", mutate: func(c *Config) { c.DialTimeout = -time.Second }, wantErr: true},
		{name: "no resolver", mutate: func(c *Config) { c.Resolver = nil }, wantErr: true},
		{name: "no logger", mutate: func(c *Config) { c.Logger = nil }, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mutate(&cfg)
			_, err := New(cfg)
			if (err != nil) != tc.wantErr {
				t.Fatalf("New: %v, want error %v", err, tc.wantErr)
			}
			if err == nil && cfg.Validate() != nil {
				t.Fatal("New accepted what Validate refuses")
			}
		})
	}
}

func TestMetrics(t *testing.T) {
	up, _ := newUpstream(t)
	echo := echoServer(t)
	p := port(t, up.URL)
	g, reg := newGateway(t, &fakeResolver{})
	// A second gateway on the same registry shares the collectors.
	gc := DefaultConfig()
	gc.DialTimeout, gc.Registerer, gc.Logger = time.Second, reg, slog.New(slog.DiscardHandler)
	if _, err := New(gc); err != nil {
		t.Fatal(err)
	}
	s := openSession(t, g, Policy{})
	open := openSession(t, g, Policy{AllowPrivate: true})
	rawRoundTrip(t, open.Addr(), "GET http://127.0.0.1:"+p+"/ HTTP/1.1", "Host: 127.0.0.1:"+p)
	conn, _ := connect(t, open.Addr(), echo)
	conn.Close()
	rawRoundTrip(t, s.Addr(), "GET http://127.0.0.1:"+p+"/ HTTP/1.1", "Host: 127.0.0.1:"+p)
	rawRoundTrip(t, s.Addr(), "CONNECT 10.0.0.1:443 HTTP/1.1", "Host: 10.0.0.1:443")
	rawRoundTrip(t, s.Addr(), "GET ftp://example.com/ HTTP/1.1", "Host: example.com")
	rawRoundTrip(t, s.Addr(), "GET http://unknown.example/ HTTP/1.1", "Host: unknown.example")
	tests := []struct {
		name          string
		kind, outcome string
		want          float64
	}{
		{name: "http allowed", kind: kindHTTP, outcome: outcomeAllowed, want: 1},
		{name: "connect allowed", kind: kindConnect, outcome: outcomeAllowed, want: 1},
		{name: "http blocked address", kind: kindHTTP, outcome: outcomeBlockedAddress, want: 1},
		{name: "connect blocked address", kind: kindConnect, outcome: outcomeBlockedAddress, want: 1},
		{name: "http blocked scheme", kind: kindHTTP, outcome: outcomeBlockedScheme, want: 1},
		{name: "http error", kind: kindHTTP, outcome: outcomeError, want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := counterValue(t, reg, tc.kind, tc.outcome); got != tc.want {
				t.Fatalf("requests{kind=%s,outcome=%s} = %v, want %v", tc.kind, tc.outcome, got, tc.want)
			}
		})
	}
}

func TestBlockedIsBounded(t *testing.T) {
	g, _ := newGateway(t, nil)
	s := openSession(t, g, Policy{})
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(testTimeout))
	br := bufio.NewReader(conn)
	for i := range maxBlocked + 5 {
		fmt.Fprintf(conn, "GET http://10.0.0.1/%d HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n", i)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := len(s.Blocked()); n != maxBlocked {
		t.Fatalf("%d blocked entries kept, want %d", n, maxBlocked)
	}
}

// TestDialerRechecks covers the second line of defense: the dial path
// refuses names and unchecked private addresses on its own.
func TestDialerRechecks(t *testing.T) {
	g, _ := newGateway(t, nil)
	strict := openSession(t, g, Policy{})
	open := openSession(t, g, Policy{AllowPrivate: true})
	tests := []struct {
		name    string
		s       *Session
		addr    string
		wantErr error
	}{
		{name: "control private", s: strict, addr: "10.0.0.1:80", wantErr: ErrBlockedAddress},
		{name: "control loopback v6", s: strict, addr: "[::1]:80", wantErr: ErrBlockedAddress},
		{name: "control metadata allowed private", s: open, addr: "169.254.169.254:80", wantErr: ErrCloudMetadata},
		{name: "control name", s: open, addr: "localhost:80", wantErr: ErrInvalidHost},
		{name: "control public", s: strict, addr: "93.184.215.14:80"},
		{name: "control private allowed", s: open, addr: "10.0.0.1:80"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.control("tcp", tc.addr, nil)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("control(%s) = %v, want %v", tc.addr, err, tc.wantErr)
			}
		})
	}
	for _, addr := range []string{"localhost:80", "example.com:80", "10.0.0.1:80", "[fe80::1%eth0]:80"} {
		t.Run("transport dial "+addr, func(t *testing.T) {
			if c, err := strict.dialTransport(context.Background(), "tcp", addr); err == nil {
				c.Close()
				t.Fatalf("dialTransport(%s) connected", addr)
			}
		})
	}
	// The dial itself takes no name.
	if c, err := open.dialOne(context.Background(), "localhost:80"); !errors.Is(err, ErrInvalidHost) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dialOne(localhost:80) = %v, want ErrInvalidHost", err)
	}
}

func TestGatewayCheck(t *testing.T) {
	g, _ := newGateway(t, &fakeResolver{answers: map[string][][]string{"public.example": {{"93.184.215.14"}}}})
	if addrs, err := g.Check(context.Background(), "public.example", false); err != nil || len(addrs) != 1 {
		t.Fatalf("Check(public) = %v, %v", addrs, err)
	}
	if _, err := g.Check(context.Background(), "0x7f.1", false); !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("Check(0x7f.1) = %v", err)
	}
}

// TestHammer runs allowed and refused requests and tunnels from many
// goroutines through one session. Run with -race.
func TestHammer(t *testing.T) {
	up, hits := newUpstream(t)
	echo := echoServer(t)
	p := port(t, up.URL)
	g, reg := newGateway(t, nil)
	s := openSession(t, g, Policy{AllowPrivate: true})
	client := proxyClient(t, s, nil)
	const workers, each = 16, 10
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			errc <- func() error {
				for i := range each {
					switch (w + i) % 3 {
					case 0:
						resp, err := client.Get("http://127.0.0.1:" + p + "/")
						if err != nil {
							return err
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							return fmt.Errorf("allowed request: %s", resp.Status)
						}
					case 1:
						resp, err := client.Get("http://169.254.169.254/latest/")
						if err != nil {
							return err
						}
						resp.Body.Close()
						if resp.StatusCode != http.StatusForbidden {
							return fmt.Errorf("metadata request: %s", resp.Status)
						}
					case 2:
						conn, err := net.Dial("tcp", s.Addr())
						if err != nil {
							return err
						}
						_ = conn.SetDeadline(time.Now().Add(testTimeout))
						fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", echo, echo)
						br := bufio.NewReader(conn)
						resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
						if err != nil || resp.StatusCode != http.StatusOK {
							conn.Close()
							return fmt.Errorf("CONNECT: %v %v", resp, err)
						}
						fmt.Fprint(conn, "x\n")
						line, err := br.ReadString('\n')
						conn.Close()
						if err != nil || line != "x\n" {
							return fmt.Errorf("tunnel echo %q, %v", line, err)
						}
					}
				}
				return nil
			}()
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	var wantAllowed, wantBlocked, wantTunnels int
	for w := range workers {
		for i := range each {
			switch (w + i) % 3 {
			case 0:
				wantAllowed++
			case 1:
				wantBlocked++
			case 2:
				wantTunnels++
			}
		}
	}
	if hits.get() != wantAllowed || len(s.Blocked()) != wantBlocked {
		t.Fatalf("upstream hits %d, blocked %d; want %d, %d", hits.get(), len(s.Blocked()), wantAllowed, wantBlocked)
	}
	if got := counterValue(t, reg, kindConnect, outcomeAllowed); got != float64(wantTunnels) {
		t.Fatalf("tunnels counted %v, want %d", got, wantTunnels)
	}
}
