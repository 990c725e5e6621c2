package load_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/bench/internal/benchtest"
	"github.com/pictorhq/pictor/bench/load"
)

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
			s := benchtest.StartCanned(t, body, tt.closeAfter)
			var dials atomic.Int64
			k := load.NewKeepAlive(s.Addr(), &dials)
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
			if dials.Load() != tt.wantDials || s.Accepted.Load() != tt.wantDials {
				t.Fatalf("dialed %d, server accepted %d; want %d", dials.Load(), s.Accepted.Load(), tt.wantDials)
			}
		})
	}
}

func TestKeepAliveUserAgent(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.UserAgent())
		w.Header().Set("Content-Length", "2")
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	k := load.NewKeepAlive(strings.TrimPrefix(srv.URL, "http://"), nil)
	defer k.Close()
	for _, ua := range []string{"", "Twitterbot/1.0"} {
		if ua != "" {
			k.SetUserAgent(ua)
		}
		if a, err := k.Get("/x"); err != nil || a.Status != 200 {
			t.Fatalf("GET: %v, %+v", err, a)
		}
	}
	if want := []string{load.DefaultUserAgent, "Twitterbot/1.0"}; !slices.Equal(got, want) {
		t.Fatalf("User-Agents %q, want %q (the same connection)", got, want)
	}
}

// The load generator's cost per GET of a 24 KB body against a canned
// server in the same process (whose cost is included): the fast path
// against net/http and fasthttp's client, 32 connections.
//
//	go test ./bench/load -run '^$' -bench Client -cpu 2
func BenchmarkClient(b *testing.B) {
	body := bytes.Repeat([]byte{0xa5}, 24<<10)
	clients := []struct {
		name string
		get  func(addr string) func() error
	}{
		{"keepalive", func(addr string) func() error {
			k := load.NewKeepAlive(addr, nil)
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
			s := benchtest.StartCanned(b, body, 0)
			b.SetParallelism(16) // 16 × GOMAXPROCS goroutines, one client each
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				get := c.get(s.Addr())
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
