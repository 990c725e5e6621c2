package api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/framing"
	"github.com/pictorhq/pictor/origin/respond"
)

// framingServer serves the routes the shared framing table talks to, the
// way the origin does (Router behind Listener, net/http, loopback).
type framingServer struct {
	*testServer
	smuggled atomic.Int32 // times the smuggled request reached a handler
}

// readBody answers a body read whole with its length, and a body that
// could not be read as the origin's decoders do: the *apierr.Error in the
// chain, or a 400.
func readBody(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		var ae *apierr.Error
		if !errors.As(err, &ae) {
			err = apierr.BadRequest("Malformed request body")
		}
		apierr.Write(w, r, err)
		return
	}
	respond.JSON(w, r, 200, map[string]int64{"received": n})
}

func startFramingServer(t *testing.T, extra ...Route) *framingServer {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startFramingServerOn(t, raw, extra...)
}

func startFramingServerOn(t *testing.T, raw net.Listener, extra ...Route) *framingServer {
	t.Helper()
	s := &framingServer{}
	ok := func(w http.ResponseWriter, r *http.Request) { respond.JSON(w, r, 200, map[string]bool{"ok": true}) }
	routes := append([]Route{
		{Method: "POST", Pattern: "/v1/image", Public: true, Handler: readBody},
		{Method: "GET", Pattern: "/v1/api-keys", Public: true, Handler: ok},
		{Method: "GET", Pattern: "/v1/follow-up", Public: true, Handler: ok},
		{Method: "GET", Pattern: apitest.SmuggledPath, Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
			s.smuggled.Add(1)
			ok(w, r)
		}},
	}, extra...)
	s.testServer = startServerOn(t, raw, nil, 10*time.Second, routes...)
	return s
}

// framedAnswer is an answer read off a raw connection.
type framedAnswer struct {
	*apitest.Response
	close bool // Connection: close
}

func readFramed(t *testing.T, br *bufio.Reader) framedAnswer {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("answer body: %v", err)
	}
	return framedAnswer{&apitest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, resp.Close}
}

func dialFraming(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c := dial(t, addr)
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return c, bufio.NewReader(c)
}

// TestHostileOriginFraming runs the shared raw-socket framing table against
// the origin's port (net/http behind Listener), as TestMalformedFraming
// runs it against the edge: each malformed request is answered 400 with
// the standard body naming the problem, the connection closes, and the
// request smuggled after it reaches no handler and no log; well-framed
// requests at the edges of the rules are served, the connection kept.
// net/http alone took Content-Length with chunked (reading chunked and
// serving the next request), obs-fold and bare LF.
func TestHostileOriginFraming(t *testing.T) {
	logs := apitest.CaptureLogs(t)
	s := startFramingServer(t)
	for _, tc := range apitest.MalformedFraming(apitest.Smuggled) {
		t.Run(tc.Name, func(t *testing.T) {
			c, br := dialFraming(t, s.addr)
			if _, err := io.WriteString(c, tc.Request); err != nil {
				t.Fatal(err)
			}
			r := readFramed(t, br)
			m := apitest.WantError(t, r.Response, http.StatusBadRequest)
			// A refusal in a trailer reaches the handler as net/http's own
			// error (it reads a trailer whole before it looks at it).
			if !strings.Contains(tc.Name, "trailer") {
				apitest.WantMessage(t, m, "Malformed HTTP request: "+tc.Reason.Error())
			}
			if !r.close {
				t.Error("no Connection: close")
			}
			apitest.WantClosed(t, c, br)
		})
	}
	if n := s.smuggled.Load(); n != 0 {
		t.Fatalf("the smuggled request reached a handler %d times", n)
	}
	if strings.Contains(logs.String(), apitest.SmuggledSecret) {
		t.Fatalf("credentials of a refused request in the logs:\n%s", logs.String())
	}

	for _, tc := range apitest.MalformedAfterFollowUp(apitest.Smuggled) {
		t.Run(tc.Name, func(t *testing.T) {
			c, br := dialFraming(t, s.addr)
			io.WriteString(c, tc.Request)
			apitest.WantStatus(t, readFramed(t, br).Response, 200)
			r := readFramed(t, br)
			apitest.WantMessage(t, apitest.WantError(t, r.Response, http.StatusBadRequest), "Malformed HTTP request: "+tc.Reason.Error())
			if !r.close {
				t.Error("no Connection: close")
			}
			apitest.WantClosed(t, c, br)
		})
	}
	if n := s.smuggled.Load(); n != 0 {
		t.Fatalf("the smuggled request reached a handler %d times", n)
	}
	for _, tc := range apitest.WellFramed() {
		t.Run("well framed: "+tc.Name, func(t *testing.T) {
			c, br := dialFraming(t, s.addr)
			io.WriteString(c, tc.Request+apitest.FollowUp)
			r := readFramed(t, br)
			apitest.WantStatus(t, r.Response, 200)
			if want := fmt.Sprintf(`{"received":%d}`, tc.Body); strings.TrimSpace(string(r.Body)) != want {
				t.Fatalf("answer %s, want %s", r.Body, want)
			}
			apitest.WantStatus(t, readFramed(t, br).Response, 200)
		})
	}
}

// TestOriginFramingPipelined: a request refused after one that is served
// on the same connection, both sent at once, leaves the first alone: it is
// answered by its handler, its context not canceled although net/http
// read ahead into the refused bytes while the handler ran; the second is
// answered 400 and the connection closes.
func TestOriginFramingPipelined(t *testing.T) {
	type held struct {
		canceled bool
	}
	results := make(chan held, 1)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := startFramingServerOn(t, &watchedListener{Listener: raw}, Route{Method: "GET", Pattern: "/v1/hold", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
		c := r.Context().Value(connKey{}).(*conn)
		inner := c.Conn.(*watchedConn)
		// Until net/http's read ahead is under way past the refusal (a
		// read of the socket after all of it was read), or the request
		// is canceled.
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); <-tick.C {
			if r.Context().Err() != nil || (c.refused.Load() != nil && inner.reading.Load()) {
				break
			}
		}
		results <- held{canceled: r.Context().Err() != nil}
		respond.JSON(w, r, 200, map[string]bool{"held": true})
	}})
	c, br := dialFraming(t, s.addr)
	io.WriteString(c, "GET /v1/hold HTTP/1.1\r\nHost: e\r\n\r\n"+"GET /v1/api-keys HTTP/1.1\r\nHost: e\r\nX A: 1\r\n\r\n"+apitest.Smuggled)
	first := readFramed(t, br)
	apitest.WantStatus(t, first.Response, 200)
	if h := <-results; h.canceled {
		t.Fatal("the first request was canceled by the refusal of the second")
	}
	second := readFramed(t, br)
	apitest.WantMessage(t, apitest.WantError(t, second.Response, 400), framing.ErrFieldName.Error())
	apitest.WantClosed(t, c, br)
	if s.smuggled.Load() != 0 {
		t.Fatal("the smuggled request reached a handler")
	}
}

// watchedListener's connections say when a read of the socket is under way.
type watchedListener struct{ net.Listener }

func (l *watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c}, nil
}

type watchedConn struct {
	net.Conn
	reading atomic.Bool
}

func (c *watchedConn) Read(p []byte) (int, error) {
	c.reading.Store(true)
	defer c.reading.Store(false)
	return c.Conn.Read(p)
}

// TestOriginFramingStreams: the check holds back nothing of a well-framed
// stream. A full-duplex chunked body (the edges' purge channel) is read
// chunk by chunk as each arrives, the answer interleaved; a body sent
// after Expect: 100-continue arrives once net/http asked for it.
func TestOriginFramingStreams(t *testing.T) {
	echo := Route{Method: "POST", Pattern: "/v1/echo", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			apierr.Write(w, r, err)
			return
		}
		w.WriteHeader(200)
		rc.Flush()
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			fmt.Fprintf(w, "echo %s\n", sc.Text())
			rc.Flush()
		}
	}}
	s := startFramingServer(t, echo)

	t.Run("full duplex", func(t *testing.T) {
		c, br := dialFraming(t, s.addr)
		io.WriteString(c, "POST /v1/echo HTTP/1.1\r\nHost: e\r\nTransfer-Encoding: chunked\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("answer %v, %v", resp, err)
		}
		lines := bufio.NewReader(resp.Body)
		for i := range 3 {
			line := fmt.Sprintf("ack %d;x=\"y\"\n", i)
			fmt.Fprintf(c, "%x;n=%d\r\n%s\r\n", len(line), i, line)
			got, err := lines.ReadString('\n')
			if err != nil || got != "echo "+line {
				t.Fatalf("after chunk %d: %q, %v", i, got, err)
			}
		}
		io.WriteString(c, "0\r\n\r\n")
		if rest, err := io.ReadAll(lines); err != nil || len(rest) != 0 {
			t.Fatalf("after the last chunk: %q, %v", rest, err)
		}
	})
	t.Run("Expect 100-continue", func(t *testing.T) {
		c, br := dialFraming(t, s.addr)
		io.WriteString(c, "POST /v1/image HTTP/1.1\r\nHost: e\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n")
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
			t.Fatalf("before the body: %q, %v", line, err)
		}
		if blank, _ := br.ReadString('\n'); blank != "\r\n" {
			t.Fatalf("100 Continue followed by %q", blank)
		}
		io.WriteString(c, "5\r\nhello\r\n0\r\n\r\n"+apitest.FollowUp)
		r := readFramed(t, br)
		if r.Status != 200 || strings.TrimSpace(string(r.Body)) != `{"received":5}` {
			t.Fatalf("answer %d %s", r.Status, r.Body)
		}
		apitest.WantStatus(t, readFramed(t, br).Response, 200)
	})
}

// scriptedConn is a net.Conn whose reads hand out data in the sizes sizes
// gives (cycling, each 1 to 256), then io.EOF.
type scriptedConn struct {
	net.Conn
	data  []byte
	sizes []byte
	i     int
}

func (s *scriptedConn) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := len(s.data)
	if len(s.sizes) > 0 {
		n = min(n, int(s.sizes[s.i%len(s.sizes)])+1)
		s.i++
	}
	n = copy(p, s.data[:n])
	s.data = s.data[n:]
	return n, nil
}

// FuzzListenerConn: whatever the sizes of the socket's reads and of the
// reader's buffers, a connection of the Listener gives its reader exactly
// the bytes a Checker passes of the stream, in order, then (placeholders
// for a request refused within its first bytes and) the refusal, a 400
// naming the checker's reason, or the stream's end; never a byte the
// checker refused or did not see.
func FuzzListenerConn(f *testing.F) {
	for _, tc := range apitest.MalformedFraming(apitest.Smuggled) {
		f.Add([]byte(tc.Request), []byte{5, 0, 40}, []byte{0, 9})
	}
	for _, tc := range apitest.WellFramed() {
		f.Add([]byte(tc.Request+apitest.FollowUp), []byte{255}, []byte{3})
	}
	for _, tc := range apitest.MalformedAfterFollowUp(apitest.Smuggled) {
		f.Add([]byte(tc.Request), []byte{1, 30}, []byte{0, 2})
	}
	f.Fuzz(func(t *testing.T, stream, socket, reads []byte) {
		var wantChecker framing.Checker
		passed, reason := wantChecker.Check(stream)
		l := NewListener(nil, 1<<10)
		c := &conn{Conn: &scriptedConn{data: stream, sizes: socket}, l: l}
		c.between()
		var got []byte
		var err error
		for i := 0; err == nil; i++ {
			size := 4096
			if len(reads) > 0 {
				size = int(reads[i%len(reads)]) + 1
			}
			p := make([]byte, size)
			var n int
			n, err = c.Read(p)
			got = append(got, p[:n]...)
			if i > len(stream)+peekAhead+2 {
				t.Fatalf("no end after %d reads", i)
			}
			// net/http reads the next request only once it served this one.
			c.begun.Store(c.frame.Requests() + 1)
		}
		want := stream[:passed:passed]
		if reason != nil {
			// Placeholders make up the refused request's first bytes.
			want = append(want, bytes.Repeat([]byte{placeholder}, max(0, peekAhead-int(wantChecker.Offset())))...)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("read %q, the checker passed %q", got, want)
		}
		var ae *apierr.Error
		switch {
		case reason == nil && err != io.EOF:
			t.Fatalf("a well-framed stream ended with %v", err)
		case reason != nil && (!errors.As(err, &ae) || ae.Status != 400 || !errors.Is(err, reason)):
			t.Fatalf("refused for %v, read ended with %v", reason, err)
		}
	})
}

// BenchmarkOriginPort is a keep-alive client's request and answer on the
// origin's port, net/http serving the bare listener and the Listener side
// by side: the difference is what the Listener (framing check included)
// costs each request.
func BenchmarkOriginPort(b *testing.B) {
	req := []byte("POST /v1/image HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: pictor-client/1.0 (linux; go1.26)\r\n" +
		"Authorization: Basic YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo6MDEyMzQ1Njc4OWFiY2RlZg==\r\n" +
		"Accept: application/json\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n{\"html\":\"<p>Hello, world</p>\"}")
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Length", "2")
		w.Write([]byte("{}"))
	})
	for _, wrapped := range []bool{false, true} {
		name := "bare"
		if wrapped {
			name = "listener"
		}
		b.Run(name, func(b *testing.B) {
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := &http.Server{Handler: handler, MaxHeaderBytes: 64 << 10}
			var ln net.Listener = raw
			if wrapped {
				l := NewListener(raw, 64<<10)
				l.ServerHooks(srv)
				ln = l
			}
			var wg sync.WaitGroup
			wg.Go(func() { srv.Serve(ln) })
			defer func() {
				srv.Shutdown(context.Background())
				wg.Wait()
			}()
			c, err := net.Dial("tcp", raw.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReader(c)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
