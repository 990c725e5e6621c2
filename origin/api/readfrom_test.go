package api_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/ratelimit"
)

// readFromRecorder is a ResponseWriter with its own ReadFrom, as
// net/http's (which sends an *os.File with sendfile): it notes what each
// ReadFrom was given.
type readFromRecorder struct {
	*httptest.ResponseRecorder
	sources []io.Reader
}

func (r *readFromRecorder) ReadFrom(src io.Reader) (int64, error) {
	r.sources = append(r.sources, src)
	return io.Copy(r.ResponseRecorder, src)
}

// fileRouter is a Router with one public route, GET /file, that serves a
// file holding data with http.ServeContent.
func fileRouter(t *testing.T, data []byte) *api.Router {
	t.Helper()
	path := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return api.New(api.Config{Authenticator: authenticator{}, Limiter: ratelimit.NewMemory(nil)},
		routes(api.Route{Method: "GET", Pattern: "/file", Public: true, Handler: func(w http.ResponseWriter, r *http.Request) {
			f, err := os.Open(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			http.ServeContent(w, r, "", time.Time{}, f)
		}}))
}

// TestFileBodyReachesReadFrom: a file a handler copies to the router's
// ResponseWriter (http.ServeContent, io.Copy) reaches the server's
// ReadFrom as the file itself, so that net/http can send it with sendfile,
// and the router still counts the answer's status and bytes.
func TestFileBodyReachesReadFrom(t *testing.T) {
	data := bytes.Repeat([]byte("file bytes "), 1000)
	rt := fileRouter(t, data)
	rec := &readFromRecorder{ResponseRecorder: httptest.NewRecorder()}
	rt.ServeHTTP(rec, httptest.NewRequest("GET", "/file", nil))
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), data) {
		t.Fatalf("status %d, %d bytes; want 200 and the file", rec.Code, rec.Body.Len())
	}
	if len(rec.sources) != 1 {
		t.Fatalf("ReadFrom called %d times, want once", len(rec.sources))
	}
	lr, ok := rec.sources[0].(*io.LimitedReader)
	if !ok {
		t.Fatalf("ReadFrom given a %T, want ServeContent's *io.LimitedReader", rec.sources[0])
	}
	if _, ok := lr.R.(*os.File); !ok {
		t.Fatalf("ReadFrom given a reader of %T, want the *os.File", lr.R)
	}
}

// sendfileListener accepts TCP connections that note what their ReadFrom
// (the kernel's sendfile path for a file) sent.
type sendfileListener struct {
	net.Listener
	sent *atomic.Int64
}

func (l sendfileListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sendfileConn{TCPConn: c.(*net.TCPConn), sent: l.sent}, nil
}

type sendfileConn struct {
	*net.TCPConn
	sent *atomic.Int64
}

func (c *sendfileConn) ReadFrom(r io.Reader) (int64, error) {
	n, err := c.TCPConn.ReadFrom(r)
	c.sent.Add(n)
	return n, err
}

// TestFileBodyReachesTheConnection: through the origin port's Listener
// and the Router, over loopback, a file a handler serves with
// http.ServeContent reaches the TCP connection's ReadFrom (sendfile), not
// a copy through Write; the answer is whole.
func TestFileBodyReachesTheConnection(t *testing.T) {
	data := bytes.Repeat([]byte("file bytes "), 100_000)
	rt := fileRouter(t, data)
	var sent atomic.Int64
	srv := httptest.NewUnstartedServer(rt)
	ln := api.NewListener(sendfileListener{Listener: srv.Listener, sent: &sent}, 8<<10)
	srv.Listener = ln
	ln.ServerHooks(srv.Config)
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		ln.CloseAll()
	})
	resp, err := http.Get(srv.URL + "/file")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("status %d, %d bytes, %v; want 200 and the file", resp.StatusCode, len(body), err)
	}
	// net/http writes the first 512 bytes (sniffLen) itself, with the
	// header, before it hands the rest to the connection's ReadFrom.
	if got := sent.Load(); got < int64(len(data)-512) || got > int64(len(data)) {
		t.Fatalf("the connection's ReadFrom sent %d bytes, want the file's %d but its first 512 at most", got, len(data))
	}
}
