package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestReadAnswer(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		status   int
		ct, body string
		keep     bool
		wantErr  error
	}{
		{name: "keep-alive 200", raw: "HTTP/1.1 200 OK\r\nContent-Type: image/jpeg\r\nContent-Length: 3\r\n\r\nabcNEXT",
			status: 200, ct: "image/jpeg", body: "abc", keep: true},
		{name: "header case and spaces", raw: "HTTP/1.1 200 OK\r\ncontent-length:   2 \r\nCONTENT-TYPE:image/webp\r\n\r\nhi",
			status: 200, ct: "image/webp", body: "hi", keep: true},
		{name: "connection close", raw: "HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
			status: 404, keep: false},
		{name: "HTTP/1.0 closes", raw: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x", keep: false},
		{name: "HTTP/1.0 keep-alive", raw: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx",
			status: 200, body: "x", keep: true},
		{name: "304 has no body", raw: "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n", status: 304, keep: true},
		{name: "chunked", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n", wantErr: errChunked},
		{name: "no length", raw: "HTTP/1.1 200 OK\r\n\r\nxyz", wantErr: errNoLength},
		{name: "garbage", raw: "SSH-2.0-OpenSSH\r\n", wantErr: errBadStatus},
		{name: "short body", raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", wantErr: io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf []byte
			a, keep, err := readAnswer(bufio.NewReader(strings.NewReader(tt.raw)), &buf)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != tt.status || string(a.ContentType) != tt.ct || string(a.Body) != tt.body || keep != tt.keep {
				t.Fatalf("got %d %q %q keep=%v; want %d %q %q keep=%v", a.Status, a.ContentType, a.Body, keep,
					tt.status, tt.ct, tt.body, tt.keep)
			}
		})
	}
}

// cannedServer answers every request on loopback with a fixed answer:
// a 200 of body, or after closeAfter answers on a connection a last one
// with "Connection: close" (0: never). It counts connections accepted.
type cannedServer struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn // closed at cleanup, clients' idle ones included
}

func startCanned(t testing.TB, body []byte, closeAfter int) *cannedServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &cannedServer{ln: ln}
	answer := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nServer: canned\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	last := fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 1; ; n++ {
					// Requests have no body: read up to the blank line.
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
					}
					if closeAfter > 0 && n == closeAfter {
						c.Write(last)
						return
					}
					if _, err := c.Write(answer); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func TestKeepAlive(t *testing.T) {
	body := bytes.Repeat([]byte("pictor"), 4000)
	tests := []struct {
		name       string
		closeAfter int
		gets       int
		wantDials  int64
	}{
		{"one connection for every request", 0, 100, 1},
		{"dials again after Connection: close", 10, 25, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startCanned(t, body, tt.closeAfter)
			var dials atomic.Int64
			k := NewKeepAlive(s.ln.Addr().String(), &dials)
			defer k.Close()
			for i := range tt.gets {
				a, err := k.Get("/hot.jpg")
				if err != nil {
					t.Fatalf("GET %d: %v", i, err)
				}
				if a.Status != 200 || !bytes.Equal(a.Body, body) || string(a.ContentType) != "image/jpeg" {
					t.Fatalf("GET %d: %d %q, %d bytes", i, a.Status, a.ContentType, len(a.Body))
				}
			}
			if dials.Load() != tt.wantDials || s.accepted.Load() != tt.wantDials {
				t.Fatalf("dialed %d, server accepted %d; want %d", dials.Load(), s.accepted.Load(), tt.wantDials)
			}
		})
	}
}

func TestGetRunCountsWrongAnswersAsErrors(t *testing.T) {
	body := []byte("the right bytes")
	s := startCanned(t, body, 0)
	tests := []struct {
		name    string
		expect  []byte // the body the run expects
		ct      string
		wantErr string
	}{
		{"right", body, "image/jpeg", ""},
		{"wrong length", []byte("short"), "image/jpeg", "bytes, want"},
		{"wrong bytes, same length", bytes.ToUpper(body), "image/jpeg", "CRC-32"},
		{"wrong type", body, "image/webp", "Content-Type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := fileSet{contentType: []byte(tt.ct)}
			set.add("/x", tt.expect)
			g := newGetRun(s.ln.Addr().String(), 1, &set, func(int) int { return 0 })
			defer g.close()
			_, err := g.op(t.Context(), 0) // the first answer of a client has its body checked
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("op = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// The load generator's cost per GET of a 24 KB body against a canned
// server in the same process (whose cost is included): the fast path
// against net/http and fasthttp's client, 32 connections.
//
//	go test ./bench -run '^$' -bench Client -cpu 2
func BenchmarkClient(b *testing.B) {
	body := bytes.Repeat([]byte{0xa5}, 24<<10)
	clients := []struct {
		name string
		get  func(addr string) func() error
	}{
		{"keepalive", func(addr string) func() error {
			k := NewKeepAlive(addr, nil)
			return func() error {
				a, err := k.Get("/hot.jpg")
				if err == nil && len(a.Body) != len(body) {
					err = errors.New("short body")
				}
				return err
			}
		}},
		{"fasthttp", func(addr string) func() error {
			c := &fasthttp.HostClient{Addr: addr, MaxConns: 1}
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			req.SetRequestURI("http://" + addr + "/hot.jpg")
			return func() error {
				err := c.Do(req, resp)
				if err == nil && len(resp.Body()) != len(body) {
					err = errors.New("short body")
				}
				return err
			}
		}},
		{"net-http", func(addr string) func() error {
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
			return func() error {
				resp, err := c.Get("http://" + addr + "/hot.jpg")
				if err != nil {
					return err
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && n != int64(len(body)) {
					err = errors.New("short body")
				}
				return err
			}
		}},
	}
	for _, c := range clients {
		b.Run(c.name, func(b *testing.B) {
			s := startCanned(b, body, 0)
			b.SetParallelism(16) // 16 × GOMAXPROCS goroutines, one client each
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				get := c.get(s.ln.Addr().String())
				for pb.Next() {
					if err := get(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
