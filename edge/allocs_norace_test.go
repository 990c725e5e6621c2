//go:build !race

package edge

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/pictorhq/pictor/origin/contract"
)

// TestHitL1AllocatesNothing: answering a cached image from memory, the
// whole handler included, allocates nothing on average (ristretto's access
// buffer, one slice per 64 hits handed to its admission policy, rounds
// down to 0). Built without the race detector, which makes sync.Pool drop
// items at random; `make test` runs it in its race-free pass.
func TestHitL1AllocatesNothing(t *testing.T) {
	o := newFakeOrigin(t)
	e := newTestEdge(t, o.URL)
	uri := "/v1/image/" + testID + ".png"
	get(e, uri)
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(uri)
	allocs := testing.AllocsPerRun(1000, func() {
		ctx.Response.Reset()
		e.handle(&ctx)
	})
	if ctx.Response.StatusCode() != 200 || len(ctx.Response.Body()) == 0 {
		t.Fatalf("status %d, %d bytes: not a hit", ctx.Response.StatusCode(), len(ctx.Response.Body()))
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per L1 hit, want 0", allocs)
	}
}

// TestOGHitAllocatesNothing: an OG image answered from memory, fresh or
// stale while its revalidation runs, allocates no more than an image does:
// nothing. The crawler's platform comes from its User-Agent without
// allocating, and the path, already in its normal spelling, is taken as
// it is.
func TestOGHitAllocatesNothing(t *testing.T) {
	o := newOGOrigin(t, contract.OGFit)
	clock := ogClock()
	e := newTunedEdge(t, o.URL, func(c *Config) { c.Now = clock.Now })
	uri := contract.OGPrefix + ogDomain + "/blog/2026/launch-day"
	get(e, uri, "User-Agent", uaTwitter)
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(uri)
	ctx.Request.Header.SetUserAgent(uaTwitter)
	for _, tc := range []struct {
		name    string
		advance time.Duration
		inm     string
	}{
		{"fresh", 0, ""},
		{"fresh, not modified", 0, fittedETag(`"v1"`, "twitter")},
		{"stale, revalidating", (ogMaxAgeS + 1) * time.Second, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock.Advance(tc.advance)
			if tc.advance > 0 {
				o.holdAnswers() // the revalidation runs throughout
				ctx.Response.Reset()
				e.handle(&ctx)
				o.next(t)
			}
			ctx.Request.Header.Del("If-None-Match")
			if tc.inm != "" {
				ctx.Request.Header.Set("If-None-Match", tc.inm)
			}
			allocs := testing.AllocsPerRun(1000, func() {
				ctx.Response.Reset()
				e.handle(&ctx)
			})
			if s := ctx.Response.StatusCode(); s != 200 && s != 304 {
				t.Fatalf("status %d: not a hit", s)
			}
			if cc := string(ctx.Response.Header.Peek("Cache-Control")); strings.Contains(cc, "max-age=0,") != (tc.advance > 0) {
				t.Fatalf("Cache-Control %q: not the hit this row measures", cc)
			}
			if allocs != 0 {
				t.Fatalf("%v allocations per OG hit, want 0", allocs)
			}
		})
	}
}

// TestHitOverTCPAllocatesNothing: the same over a real keep-alive
// connection, fasthttp's server included. The client reads with fixed
// buffers, so the process's allocation count is the server's.
func TestHitOverTCPAllocatesNothing(t *testing.T) {
	roundTrip := imageHitsOverTCP(t)
	if per := allocsPerRoundTrip(5000, roundTrip); per > 0.05 {
		t.Fatalf("%.3f allocations per hit over TCP, want 0", per)
	}
}

// TestOGHitOverTCPAllocatesNothing: og-hot's request, a cached OG image
// asked for by Twitterbot over a keep-alive connection, allocates no
// more than an image's does.
func TestOGHitOverTCPAllocatesNothing(t *testing.T) {
	roundTrip := ogHitsOverTCP(t)
	if per := allocsPerRoundTrip(5000, roundTrip); per > 0.05 {
		t.Fatalf("%.3f allocations per OG hit over TCP, want 0", per)
	}
}

// TestL2SendfileHitAllocations: an L2 hit on a body sent with sendfile
// allocates its open body and the sendfile's callback (four objects), and
// the connection nothing more: its raw socket sends the held headers and
// lends its RawConn to the sendfile (nine objects when each hit asked the
// connection for a RawConn twice and made a callback for the headers).
func TestL2SendfileHitAllocations(t *testing.T) {
	o := newFakeOrigin(t)
	o.png = noisy(2 << 20) // larger than L1, which keeps it out
	e := newTunedEdge(t, o.URL, func(c *Config) { c.CacheMem = 1 << 20 })
	roundTrip, quiesce := hitsAndQuiesceOverTCP(t, e, "GET /v1/image/"+testID+".png HTTP/1.1\r\nHost: edge\r\n\r\n", o.png)
	quiesce()
	before := e.cache.Stats()
	const n = 300
	per := allocsPerRoundTrip(n, roundTrip)
	quiesce()
	after := e.cache.Stats()
	if hits, sent := after.L2Hits-before.L2Hits, after.SendfileBytes-before.SendfileBytes; hits != n || sent != uint64(n*len(o.png)) {
		t.Fatalf("%d L2 hits and %d bytes sent with sendfile, want %d and %d", hits, sent, n, n*len(o.png))
	}
	if per > 4.05 {
		t.Fatalf("%.2f allocations per L2 hit sent with sendfile, want at most 4", per)
	}
}

// BenchmarkHitOverTCP and BenchmarkOGHitOverTCP are hot-image's and
// og-hot's request over one keep-alive connection, client included:
// the OG hit should cost what the image hit does.
func BenchmarkHitOverTCP(b *testing.B)   { benchmarkRoundTrips(b, imageHitsOverTCP(b)) }
func BenchmarkOGHitOverTCP(b *testing.B) { benchmarkRoundTrips(b, ogHitsOverTCP(b)) }

func benchmarkRoundTrips(b *testing.B, roundTrip func()) {
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		roundTrip()
	}
}

// imageHitsOverTCP returns the round trip of a cached 24 KiB image.
func imageHitsOverTCP(t testing.TB) func() {
	o := newFakeOrigin(t)
	o.png = noisy(24 << 10)
	e := newTestEdge(t, o.URL)
	return hitsOverTCP(t, e, "GET /v1/image/"+testID+".png HTTP/1.1\r\nHost: edge\r\n\r\n", o.png)
}

// ogHitsOverTCP returns the round trip of a cached OG image, asked for
// by Twitterbot.
func ogHitsOverTCP(t testing.TB) func() {
	o := newOGOrigin(t, contract.OGFit)
	e := newTestEdge(t, o.URL)
	uri := contract.OGPrefix + ogDomain + "/p/hot"
	want := bytes.Clone(get(e, uri, "User-Agent", uaTwitter).Response.Body())
	return hitsOverTCP(t, e, "GET "+uri+" HTTP/1.1\r\nHost: edge\r\nUser-Agent: "+uaTwitter+"\r\nAccept: */*\r\n\r\n", want)
}

// hitsOverTCP starts e, opens a keep-alive connection to it and returns
// the round trip of req on it, whose answer's body must be want; the
// cache and the pools are warm, the body checked. The client reads with
// fixed buffers, so the process's allocations are the server's.
func hitsOverTCP(t testing.TB, e *Edge, req string, want []byte) func() {
	roundTrip, _ := hitsAndQuiesceOverTCP(t, e, req, want)
	return roundTrip
}

// hitsAndQuiesceOverTCP is hitsOverTCP, and also returns quiesce: a round trip
// of GET /healthz on the same connection, which the edge reads only once
// it has finished the answers before it, counters included (a body's
// sendfile bytes are counted after the client may have read them).
func hitsAndQuiesceOverTCP(t testing.TB, e *Edge, req string, want []byte) (roundTrip, quiesce func()) {
	t.Helper()
	base := startEdge(t, e)
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Minute))
	br := bufio.NewReaderSize(c, 64<<10)
	body := make([]byte, len(want))
	scratch := make([]byte, 4<<10)
	// exchange sends raw and reads the answer's body into into, which
	// must be its exact length when exact is set.
	exchange := func(raw, into []byte, exact bool) {
		if _, err := c.Write(raw); err != nil {
			t.Fatal(err)
		}
		n := -1
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
				n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
			}
			if len(line) == 2 {
				break
			}
		}
		if n < 0 || n > len(into) || (exact && n != len(into)) {
			t.Fatalf("Content-Length %d, want %d", n, len(into))
		}
		if _, err := io.ReadFull(br, into[:n]); err != nil {
			t.Fatal(err)
		}
	}
	raw, healthz := []byte(req), []byte("GET /healthz HTTP/1.1\r\nHost: edge\r\n\r\n")
	roundTrip = func() { exchange(raw, body, true) }
	quiesce = func() { exchange(healthz, scratch, false) }
	for range 200 { // fill, admission to L1, pools warm
		roundTrip()
	}
	e.stores.settle()
	if !bytes.Equal(body, want) {
		t.Fatal("the body differs from the origin's")
	}
	return roundTrip, quiesce
}

// allocsPerRoundTrip returns the process's allocations per round trip.
func allocsPerRoundTrip(n int, roundTrip func()) float64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		roundTrip()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(n)
}
