package blob

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// fakeS3 opens an S3 store on endpoint with two attempts per request and
// a short timeout.
func fakeS3(t *testing.T, endpoint string) Blobs {
	t.Helper()
	cfg := DefaultConfig()
	cfg.URL = "s3://bucket/p?path_style=true&endpoint=" + endpoint
	cfg.Credentials = credentials.NewStaticCredentialsProvider("key", "secret", "")
	cfg.MaxAttempts = 2
	cfg.MaxBackoff = time.Millisecond
	cfg.Timeout = 300 * time.Millisecond
	b, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// silent accepts connections and never answers; closing it ends them.
func silent(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return "http://" + l.Addr().String()
}

// TestS3Unavailable: what another try later may cure is ErrUnavailable,
// and the caller's own cancellation is not.
func TestS3Unavailable(t *testing.T) {
	var attempts atomic.Int64
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
	}))
	defer failing.Close()
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
	}))
	defer forbidden.Close()

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		endpoint string
		ctx      context.Context
		want     error // matched with errors.Is
		attempts int64 // of the failing server, when it is the endpoint
	}{
		{name: "connection refused", endpoint: "http://" + apitest.ClosedAddr(t), ctx: context.Background(), want: ErrUnavailable},
		{name: "no answer", endpoint: silent(t), ctx: context.Background(), want: ErrUnavailable},
		{name: "5xx through every attempt", endpoint: failing.URL, ctx: context.Background(), want: ErrUnavailable, attempts: 2},
		{name: "access denied is not an outage", endpoint: forbidden.URL, ctx: context.Background()},
		{name: "the caller canceled", endpoint: silent(t), ctx: canceled, want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fakeS3(t, tt.endpoint)
			id := "01a200a2-2585-7706-ab1e-4006e28d9bff"
			ops := []struct {
				name string
				do   func() error
			}{
				{"put", func() error { return b.Put(tt.ctx, id, "image.png", []byte("x")) }},
				{"read", func() error { _, err := b.Read(tt.ctx, id, "image.png"); return err }},
				{"open", func() error { _, err := b.Open(tt.ctx, id, "image.png"); return err }},
				{"remove", func() error { return b.Remove(tt.ctx, id) }},
			}
			for _, op := range ops {
				attempts.Store(0)
				err := op.do()
				switch {
				case err == nil:
					t.Errorf("%s succeeded", op.name)
				case tt.want == nil && (errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotFound)):
					t.Errorf("%s: %v, want neither ErrUnavailable nor ErrNotFound", op.name, err)
				case tt.want != nil && !errors.Is(err, tt.want):
					t.Errorf("%s: %v, want %v", op.name, err, tt.want)
				case tt.want == ErrUnavailable && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
					t.Errorf("%s: %v matches a context error: the origin would answer 504 or 499", op.name, err)
				case tt.want == context.Canceled && errors.Is(err, ErrUnavailable):
					t.Errorf("%s: %v: a canceled request is not an outage", op.name, err)
				}
				if tt.attempts > 0 && attempts.Load() != tt.attempts {
					t.Errorf("%s: %d attempts, want %d", op.name, attempts.Load(), tt.attempts)
				}
			}
		})
	}
}

// TestS3StalledBody: a server that stops sending in the middle of an
// object fails the read after Timeout with ErrUnavailable, for Read and
// for an open Object.
func TestS3StalledBody(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Length", "1000")
		h.Set("ETag", `"e"`)
		h.Set("X-Amz-Meta-Sha256", strings.Repeat("0", 64))
		w.WriteHeader(http.StatusOK)
		w.Write(make([]byte, 10))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	b := fakeS3(t, srv.URL)
	ctx := context.Background()
	if _, err := b.Read(ctx, "id", "image.png"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Read: %v, want ErrUnavailable", err)
	}
	o, err := b.Open(ctx, "id", "image.png")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := io.ReadAll(o); !errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadAll: %v, want ErrUnavailable", err)
	}
}

// TestOpenURL: the URL selects the store; every S3 setting is checked,
// and a wrong one names --blobs.
func TestOpenURL(t *testing.T) {
	dataDir := t.TempDir()
	tests := []struct {
		url     string
		dir     string     // the files store's directory
		s3      s3Location // or the S3 location
		problem string     // or a part of the error
	}{
		{url: "", dir: filepath.Join(dataDir, "images")},
		{url: "file:", dir: filepath.Join(dataDir, "images")},
		{url: "file:///srv/blobs/", dir: "/srv/blobs"},
		{url: "s3://bucket", s3: s3Location{bucket: "bucket"}},
		{url: "s3://my.bucket/a/b/?region=eu-west-3", s3: s3Location{bucket: "my.bucket", prefix: "a/b", region: "eu-west-3"}},
		{url: "s3://bucket/p?endpoint=http://127.0.0.1:9000/&path_style=true", s3: s3Location{bucket: "bucket", prefix: "p", endpoint: "http://127.0.0.1:9000", region: "us-east-1", pathStyle: true}},
		{url: "s3://bucket?endpoint=https://s3.example.com&region=auto&path_style=false", s3: s3Location{bucket: "bucket", endpoint: "https://s3.example.com", region: "auto"}},
		{url: "file:relative", problem: "file:///absolute/path"},
		{url: "gs://bucket", problem: "must be file: or s3://"},
		{url: "s3://b", problem: "bucket"},
		{url: "s3://key:secret@bucket", problem: "credentials do not go in the URL"},
		{url: "s3://bucket/a/../b", problem: "prefix"},
		{url: "s3://bucket/a//b", problem: "prefix"},
		{url: "s3://bucket?endpoint=127.0.0.1:9000", problem: "endpoint"},
		{url: "s3://bucket?endpoint=ftp://x", problem: "endpoint"},
		{url: "s3://bucket?region=US%20East", problem: "region"},
		{url: "s3://bucket?path_style=yes", problem: "path_style"},
		{url: "s3://bucket?pathstyle=true", problem: `unknown parameter "pathstyle"`},
		{url: "s3://bucket?region=a&region=b", problem: "given 2 times"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			loc, err := parseURL(tt.url, dataDir)
			if tt.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tt.problem) || !strings.Contains(err.Error(), "--blobs") {
					t.Fatalf("error %v, want one naming --blobs and %q", err, tt.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if loc.dir != tt.dir || loc.s3 != tt.s3 {
				t.Fatalf("location %+v, want dir %q or %+v", loc, tt.dir, tt.s3)
			}
		})
	}
	// A store that cannot open is a nil Blobs, not a typed nil.
	notDir := filepath.Join(dataDir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := OpenURL(context.Background(), "", notDir); err == nil || b != nil {
		t.Fatalf("OpenURL over a file = %#v, %v; want nil and an error", b, err)
	}
	if _, err := parseURL("", ""); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("files store without a data directory: %v", err)
	}
	for _, c := range []Config{
		{URL: "", DataDir: dataDir, Timeout: 0, MaxAttempts: 1, MaxBackoff: time.Second},
		{URL: "", DataDir: dataDir, Timeout: time.Second, MaxAttempts: 0, MaxBackoff: time.Second},
		{URL: "", DataDir: dataDir, Timeout: time.Second, MaxAttempts: 1, MaxBackoff: 0},
	} {
		if _, err := New(context.Background(), c); err == nil || !strings.Contains(err.Error(), "--blobs-") {
			t.Errorf("New(%+v) = %v, want an error naming the flag", c, err)
		}
	}
}

// TestOpenURLDefaultChain: OpenURL takes credentials from the SDK's
// default chain (here the environment), the files store its data
// directory.
func TestOpenURLDefaultChain(t *testing.T) {
	ctx := context.Background()
	srv := s3test.New(t)
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	b, err := OpenURL(ctx, "s3://"+srv.Bucket+"?path_style=true&endpoint="+srv.URL, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	id := "01a200a2-2585-7706-ab1e-4006e28d9bff"
	if err := b.Put(ctx, id, "image.png", []byte("png")); err != nil {
		t.Fatal(err)
	}
	if got := srv.Get(t, srv.Bucket, "ff/"+id+"/image.png"); string(got.Body) != "png" {
		t.Fatalf("object %q", got.Body)
	}

	files, err := OpenURL(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := files.(*Store); !ok || s.dir != filepath.Join(dir, "images") {
		t.Fatalf("OpenURL(\"\") = %T %+v", files, files)
	}
}
