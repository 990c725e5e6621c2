package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestOwnAnswersAreMarked: every answer the session makes itself carries
// AnswerHeader, is never cached, and Answered gives the failure it
// reports, with the host and port asked for; relayed answers (a site's own
// 404 or 502) carry none.
func TestOwnAnswersAreMarked(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/own-502" {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(site.Close)
	to := map[string]string{
		"93.184.215.1:80": site.Listener.Addr().String(),
		"93.184.215.2:80": apitest.ClosedAddr(t),
		"93.184.215.3:80": apitest.ResetServer(t),
	}
	res := &fakeResolver{answers: map[string][][]string{
		"public.test":  {{"93.184.215.1"}},
		"refused.test": {{"93.184.215.2"}},
		"reset.test":   {{"93.184.215.3"}},
		"private.test": {{"127.0.0.1"}},
	}}
	cfg := testConfig()
	cfg.Resolver = res
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.dialHook = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dest, ok := to[addr]
		if !ok {
			return nil, fmt.Errorf("test dial: no route to %s", addr)
		}
		var nd net.Dialer
		return nd.DialContext(ctx, network, dest)
	}
	internal := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/doc/current" {
			io.WriteString(w, "<p>document</p>")
			return
		}
		http.NotFound(w, r)
	})
	s := openSession(t, g, Policy{InternalHost: "pictor.internal", Internal: internal})

	tests := []struct {
		name   string
		head   []string
		status int
		own    bool
		want   error
		// orWant is also right: a reset can come back from the dial
		// itself when the peer resets before the dial looks.
		orWant    error
		wantErrno syscall.Errno
		// orEOF: the end of the stream is right too. A socket reports a
		// reset once, to whichever call meets it first: when that is the
		// request's write, the read of the answer finds the stream ended.
		orEOF   bool
		host    string
		port    uint16
		connect bool
	}{
		{name: "a site's own 404", head: []string{"GET http://public.test/missing HTTP/1.1", "Host: public.test"}, status: 404},
		{name: "a site's own 502", head: []string{"GET http://public.test/own-502 HTTP/1.1", "Host: public.test"}, status: 502},
		{name: "the internal host's document", head: []string{"GET http://pictor.internal/doc/current HTTP/1.1", "Host: pictor.internal"}, status: 200},
		{name: "refused address", head: []string{"GET http://private.test:8080/x HTTP/1.1", "Host: private.test:8080"}, status: 403, own: true,
			want: ErrBlockedAddress, host: "private.test", port: 8080},
		{name: "refused literal", head: []string{"GET http://10.0.0.1/ HTTP/1.1", "Host: 10.0.0.1"}, status: 403, own: true,
			want: ErrBlockedAddress, host: "10.0.0.1", port: 80},
		{name: "name that does not resolve", head: []string{"GET http://nonexistent.invalid/ HTTP/1.1", "Host: nonexistent.invalid"}, status: 502, own: true,
			want: ErrResolve, host: "nonexistent.invalid", port: 80},
		{name: "connection refused", head: []string{"GET http://refused.test/ HTTP/1.1", "Host: refused.test"}, status: 502, own: true,
			want: ErrDial, wantErrno: syscall.ECONNREFUSED, host: "refused.test", port: 80},
		{name: "connection reset", head: []string{"GET http://reset.test/ HTTP/1.1", "Host: reset.test"}, status: 502, own: true,
			want: ErrUpstream, orWant: ErrDial, wantErrno: syscall.ECONNRESET, orEOF: true, host: "reset.test", port: 80},
		{name: "document the internal host does not hold", head: []string{"GET http://pictor.internal/doc/other HTTP/1.1", "Host: pictor.internal"}, status: 404, own: true,
			want: ErrNotServed, host: "pictor.internal", port: 80},
		{name: "refused tunnel", head: []string{"CONNECT private.test:443 HTTP/1.1", "Host: private.test:443"}, status: 403, own: true,
			want: ErrBlockedAddress, host: "private.test", port: 443, connect: true},
		{name: "tunnel to a name that does not resolve", head: []string{"CONNECT nonexistent.invalid:443 HTTP/1.1", "Host: nonexistent.invalid:443"}, status: 502, own: true,
			want: ErrResolve, host: "nonexistent.invalid", port: 443, connect: true},
		{name: "tunnel refused by the site", head: []string{"CONNECT refused.test:80 HTTP/1.1", "Host: refused.test:80"}, status: 502, own: true,
			want: ErrDial, wantErrno: syscall.ECONNREFUSED, host: "refused.test", port: 80, connect: true},
		{name: "tunnel to the internal host", head: []string{"CONNECT pictor.internal:443 HTTP/1.1", "Host: pictor.internal:443"}, status: 403, own: true,
			want: ErrBlockedScheme, host: "pictor.internal", port: 443, connect: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := rawRoundTrip(t, s.Addr(), tc.head...)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s: %d %q, want %d", tc.head[0], resp.StatusCode, resp.body, tc.status)
			}
			marker := resp.Header.Get(AnswerHeader)
			if !tc.own {
				if marker != "" {
					t.Fatalf("a relayed answer carries %s: %q", AnswerHeader, marker)
				}
				return
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", cc)
			}
			f, ok := s.Answered(marker)
			if !ok {
				t.Fatalf("Answered(%q) does not know the session's own answer", marker)
			}
			if !errors.Is(f.Err, tc.want) && (tc.orWant == nil || !errors.Is(f.Err, tc.orWant)) {
				t.Errorf("failure %v, want %v", f.Err, tc.want)
			}
			if tc.wantErrno != 0 && !errors.Is(f.Err, tc.wantErrno) && (!tc.orEOF || !errors.Is(f.Err, io.EOF)) {
				t.Errorf("failure %v, want it to carry %v", f.Err, tc.wantErrno)
			}
			if f.Host != tc.host || f.Port != tc.port || f.Connect != tc.connect {
				t.Errorf("failure for %s port %d (connect %v), want %s port %d (connect %v)", f.Host, f.Port, f.Connect, tc.host, tc.port, tc.connect)
			}
		})
	}
}

// TestAnswerCannotBeForged: a site that sends AnswerHeader itself, with
// this session's very marker, has it removed; values the session did not
// hand out are not its answers.
func TestAnswerCannotBeForged(t *testing.T) {
	var marker string
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(AnswerHeader, marker+"-0")
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(site.Close)
	g, _ := newGateway(t, nil)
	s := openSession(t, g, Policy{AllowPrivate: true})
	other := openSession(t, g, Policy{})
	marker = s.marker

	resp := rawRoundTrip(t, s.Addr(), "GET "+site.URL+"/ HTTP/1.1", "Host: "+site.Listener.Addr().String())
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(AnswerHeader) != "" {
		t.Fatalf("relayed %d with %s %q, want the site's 502 without it", resp.StatusCode, AnswerHeader, resp.Header.Get(AnswerHeader))
	}
	// The refusal another session made is not this session's answer, nor a
	// number this session never handed out.
	refusal := rawRoundTrip(t, other.Addr(), "GET http://10.0.0.1/ HTTP/1.1", "Host: 10.0.0.1").Header.Get(AnswerHeader)
	if _, ok := other.Answered(refusal); !ok {
		t.Fatalf("the other session does not know its answer %q", refusal)
	}
	for _, v := range []string{refusal, marker + "-0", marker + "-1", marker, "", "-0", marker + "-x", marker + "-18446744073709551615"} {
		if f, ok := s.Answered(v); ok {
			t.Errorf("Answered(%q) = %+v, want no answer of this session", v, f)
		}
	}
}

// TestTunnelFindsFailures: a failed CONNECT is found by host and port in
// any spelling the session reads as the same host, only after the mark it
// was given, and the latest one wins.
func TestTunnelFindsFailures(t *testing.T) {
	g, _ := newGateway(t, &fakeResolver{answers: map[string][][]string{"private.test": {{"127.0.0.1"}}}})
	s := openSession(t, g, Policy{})
	before := s.Mark()
	rawRoundTrip(t, s.Addr(), "CONNECT nonexistent.invalid:443 HTTP/1.1", "Host: nonexistent.invalid:443")
	rawRoundTrip(t, s.Addr(), "CONNECT private.test:443 HTTP/1.1", "Host: private.test:443")
	rawRoundTrip(t, s.Addr(), "CONNECT 127.0.0.1:8443 HTTP/1.1", "Host: 127.0.0.1:8443")
	rawRoundTrip(t, s.Addr(), "GET http://nonexistent.invalid:444/ HTTP/1.1", "Host: nonexistent.invalid:444")
	after := s.Mark()

	tests := []struct {
		name string
		host string
		port uint16
		want error // nil: none found
	}{
		{"as requested", "nonexistent.invalid", 443, ErrResolve},
		{"upper case and trailing dot", "NONEXISTENT.invalid.", 443, ErrResolve},
		{"another name", "private.test", 443, ErrBlockedAddress},
		{"another port", "private.test", 8443, nil},
		{"an address in another spelling", "2130706433", 8443, ErrBlockedAddress},
		{"a plain http request is no tunnel", "nonexistent.invalid", 444, nil},
		{"an invalid host", "exa mple", 443, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := s.Tunnel(tc.host, tc.port, before)
			if tc.want == nil {
				if ok {
					t.Fatalf("Tunnel(%s, %d) = %+v, want none", tc.host, tc.port, f)
				}
				return
			}
			if !ok || !errors.Is(f.Err, tc.want) || !f.Connect {
				t.Fatalf("Tunnel(%s, %d) = %+v, %v; want a CONNECT failure matching %v", tc.host, tc.port, f, ok, tc.want)
			}
		})
	}
	if f, ok := s.Tunnel("nonexistent.invalid", 443, after); ok {
		t.Fatalf("a failure before the mark was found: %+v", f)
	}
}

// TestFailuresAreBounded: a session keeps its last maxFailures answers;
// an older answer is still recognized as the session's own, its failure
// forgotten.
func TestFailuresAreBounded(t *testing.T) {
	g, _ := newGateway(t, nil)
	s := openSession(t, g, Policy{})
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(testTimeout))
	br := bufio.NewReader(conn)
	var markers []string
	for i := range maxFailures + 5 {
		fmt.Fprintf(conn, "GET http://10.0.0.1/%d HTTP/1.1\r\nHost: 10.0.0.1\r\n\r\n", i)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		markers = append(markers, resp.Header.Get(AnswerHeader))
	}
	if f, ok := s.Answered(markers[0]); !ok || f.Err != nil {
		t.Fatalf("the oldest answer: %+v, %v; want it known, its failure forgotten", f, ok)
	}
	last := len(markers) - 1
	if f, ok := s.Answered(markers[last]); !ok || f.Target != "http://10.0.0.1/"+strconv.Itoa(last) || !errors.Is(f.Err, ErrBlockedAddress) {
		t.Fatalf("the latest answer: %+v, %v", f, ok)
	}
	if n := len(s.failures); n != maxFailures {
		t.Fatalf("%d failures kept, want %d", n, maxFailures)
	}
}

// TestClosedSessionAnswers: a request that reaches a closing session gets
// the session's own marked 503, for a plain request and a CONNECT alike.
func TestClosedSessionAnswers(t *testing.T) {
	g, _ := newGateway(t, nil)
	s := openSession(t, g, Policy{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "http://public.test/page", nil),
		httptest.NewRequest(http.MethodConnect, "public.test:443", nil),
	} {
		rec := httptest.NewRecorder()
		s.serve(rec, req)
		f, ok := s.Answered(rec.Header().Get(AnswerHeader))
		if rec.Code != http.StatusServiceUnavailable || !ok || !errors.Is(f.Err, ErrClosed) || f.Host != "public.test" {
			t.Fatalf("%s %s on a closed session: %d, %+v %v", req.Method, req.RequestURI, rec.Code, f, ok)
		}
	}
}
