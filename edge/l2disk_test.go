package edge

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/contract/imaging"
)

// TestL2BodiesSentFromDisk: bodies too large for L1 are answered from
// their files in L2 (sendfile): whole, in PDF ranges, for HEAD and 304s,
// pipelined on one connection; no answer keeps a file open.
func TestL2BodiesSentFromDisk(t *testing.T) {
	testBodiesSent(t, 1<<20) // below every body: each hit is an L2 hit
}

// TestL1BodiesSentFromMemory: the same exchanges answered from L1, whose
// bodies above memoryStreamAbove leave with their headers in one writev
// (cache.MemoryBody through the connection's hold).
func TestL1BodiesSentFromMemory(t *testing.T) {
	testBodiesSent(t, 64<<20)
}

// testBodiesSent pipelines GET, HEAD, 304 and PDF ranges of a 3 MiB PNG
// and a 2 MiB PDF over one connection, from an edge whose L1 is mem bytes.
func testBodiesSent(t *testing.T, mem int64) {
	o := newSpellingOrigin(t)
	o.bodies[imaging.PNG] = noisy(3 << 20)
	pdf := append([]byte("%PDF-1.4\n"), noisy(2<<20)...)
	o.bodies[imaging.PDF] = pdf
	cfg := DefaultConfig()
	cfg.OriginURL = o.URL
	cfg.CacheDir = filepath.Join(t.TempDir(), "cache")
	cfg.CacheMem = mem
	cfg.CacheDisk = 64 << 20
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Stop(t.Context()) })
	base := startEdge(t, e)
	pngURI, pdfURI := "/v1/image/"+testID+".png", signedPath+"/pdf?html=x"

	c, err := net.Dial("tcp", base[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(c)
	type exchange struct {
		method, uri, header string
		status              int
		body                []byte
		contentRange        string
	}
	do := func(xs []exchange) {
		t.Helper()
		var req strings.Builder
		for _, x := range xs {
			fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: edge\r\n%s\r\n", x.method, x.uri, x.header)
		}
		if _, err := io.WriteString(c, req.String()); err != nil {
			t.Fatal(err)
		}
		for i, x := range xs {
			r, err := http.ReadResponse(br, &http.Request{Method: x.method})
			if err != nil {
				t.Fatalf("%s %s %q: %v", x.method, x.uri, x.header, err)
			}
			body, err := io.ReadAll(r.Body)
			if err != nil || r.StatusCode != x.status || !bytes.Equal(body, x.body) {
				t.Fatalf("exchange %d, %s %s %q: %d, %d bytes (%v); want %d, %d bytes", i, x.method, x.uri, x.header,
					r.StatusCode, len(body), err, x.status, len(x.body))
			}
			if got := r.Header.Get("Content-Range"); got != x.contentRange {
				t.Fatalf("exchange %d: Content-Range %q, want %q", i, got, x.contentRange)
			}
		}
	}
	// The fills.
	do([]exchange{{method: "GET", uri: pngURI, status: 200, body: o.bodies[imaging.PNG]}, {method: "GET", uri: pdfURI, status: 200, body: pdf}})
	e.stores.settle()
	asked := o.requests()

	// No collection while the hits run: a file left open would be closed
	// by its finalizer, not by the answer, and go unseen.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	n := len(pdf)
	for range 6 { // L2 hits read a sample of bodies into memory: both paths
		do([]exchange{
			{method: "GET", uri: pngURI, status: 200, body: o.bodies[imaging.PNG]},
			{method: "HEAD", uri: pngURI, status: 200},
			{method: "GET", uri: pngURI, header: "If-None-Match: \"png-etag\"\r\n", status: 304},
			{method: "GET", uri: pdfURI, header: "Range: bytes=100-199\r\n", status: 206, body: pdf[100:200],
				contentRange: fmt.Sprintf("bytes 100-199/%d", n)},
			{method: "GET", uri: pdfURI, header: "Range: bytes=-50\r\n", status: 206, body: pdf[n-50:],
				contentRange: fmt.Sprintf("bytes %d-%d/%d", n-50, n-1, n)},
			{method: "GET", uri: pdfURI, header: "Range: bytes=0-0\r\n", status: 206, body: pdf[:1],
				contentRange: fmt.Sprintf("bytes 0-0/%d", n)},
			{method: "GET", uri: pdfURI, header: fmt.Sprintf("Range: bytes=%d-\r\n", n), status: 416, body: nil,
				contentRange: fmt.Sprintf("bytes */%d", n)},
			{method: "GET", uri: pdfURI, status: 200, body: pdf},
		})
	}
	if got := o.requests(); got != asked {
		t.Fatalf("the origin was asked %d more times: the hits were not served from L2", got-asked)
	}
	s := e.cache.Stats()
	if mem > int64(len(pdf)+len(o.bodies[imaging.PNG])) {
		// The fills left both bodies in L1, where every hit finds them.
		if s.L2Hits != 0 || s.L1Hits == 0 || s.SendfileBytes != 0 {
			t.Fatalf("cache stats %+v: want L1 hits only", s)
		}
		return
	}
	// Each round sends the PNG whole and the PDF whole at least, with
	// sendfile unless a sampled hit read it into memory (one in eight).
	if s.L2Hits == 0 || s.L1Bytes >= int64(len(pdf)) || s.SendfileBytes < uint64(len(pdf)) {
		t.Fatalf("cache stats %+v: want L2 hits sent with sendfile and no body in L1", s)
	}
	// The cache keeps the two files open for the next hits; every answer
	// released its hold, so purging them closes them. fasthttp releases
	// a body once it has written it, which may come just after the client
	// has read the last byte.
	dir := filepath.Join(cfg.CacheDir, "bodies")
	if n := apitest.OpenFilesUnder(t, dir); n > 2 {
		t.Fatalf("%d body files open for 2 entries", n)
	}
	if _, err := e.cache.PurgeOrg("org-1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for apitest.OpenFilesUnder(t, dir) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d body files are still open", apitest.OpenFilesUnder(t, dir))
		}
		<-tick.C
	}
}

// TestConnHold: what MoreFollows(true) holds back leaves ahead of the next
// write, or alone at MoreFollows(false), in order and whole, through the
// raw socket calls (sock_linux.go) and through net.Conn.
func TestConnHold(t *testing.T) {
	for _, raw := range []bool{true, false} {
		t.Run(fmt.Sprintf("raw=%v", raw), func(t *testing.T) {
			client, server := tcpPair(t)
			c := &conn{Conn: server}
			if raw {
				if c.sock = newSock(server); c.sock == nil {
					t.Fatal("no raw socket for a TCP connection")
				}
			}
			testConnHold(t, c, client)
		})
	}
}

// tcpPair returns both ends of a loopback TCP connection, closed with t.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

func testConnHold(t *testing.T, c *conn, client net.Conn) {
	body := noisy(200 << 10)
	steps := []struct {
		name string
		do   func() error
		want []byte
	}{
		{"held then written", func() error {
			if err := c.MoreFollows(true); err != nil {
				return err
			}
			if n, err := c.Write([]byte("head")); n != 4 || err != nil {
				return fmt.Errorf("held write: %d, %v", n, err)
			}
			if n, err := c.Write(body); n != len(body) || err != nil {
				return fmt.Errorf("write after it: %d, %v", n, err)
			}
			return c.MoreFollows(false)
		}, append([]byte("head"), body...)},
		{"held alone", func() error {
			if err := c.MoreFollows(true); err != nil {
				return err
			}
			if _, err := c.Write([]byte("only")); err != nil {
				return err
			}
			return c.MoreFollows(false)
		}, []byte("only")},
		{"nothing held", func() error {
			_, err := c.Write([]byte("plain"))
			return err
		}, []byte("plain")},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			client.SetReadDeadline(time.Now().Add(time.Minute))
			done := make(chan error, 1)
			go func() { done <- s.do() }()
			got := make([]byte, len(s.want))
			if _, err := io.ReadFull(client, got); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, s.want) {
				t.Fatalf("read %.20q…, want %.20q…", got, s.want)
			}
		})
	}
}
