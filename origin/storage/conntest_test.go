package storage_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/storage"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

func TestConnectionTestWritesUnderPrefix(t *testing.T) {
	gw := s3test.New(t)
	var logs logBuffer
	c := newConnector(t, testConfig(&logs))
	conn := gwConnection(gw)
	if err := c.Test(context.Background(), conn); err != nil {
		t.Fatalf("Test: %v (%s)", err, storage.Describe(err))
	}
	keys := gw.Keys(t, gw.Bucket, "")
	if len(keys) != 1 || !strings.HasPrefix(keys[0], "renders/org-1/.hcti/connection-tests/") || !strings.HasSuffix(keys[0], ".txt") {
		t.Fatalf("objects %v, want one renders/org-1/.hcti/connection-tests/<time>-<random>.txt", keys)
	}
	obj := gw.Get(t, gw.Bucket, keys[0])
	if obj.ContentType != "text/plain; charset=utf-8" || !strings.Contains(string(obj.Body), "connection test") {
		t.Errorf("test object %q of type %q", obj.Body, obj.ContentType)
	}

	// At the bucket's root, the object is under .hcti/ directly; a second
	// test writes a second object.
	conn.KeyPrefix = ""
	if err := c.Test(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	if keys := gw.Keys(t, gw.Bucket, storage.TestPrefix); len(keys) != 1 {
		t.Errorf("objects under %s: %v, want one", storage.TestPrefix, keys)
	}
}

// TestConnectionTestFailuresAgainstVersitygw: each failure a real S3 can
// give has its own kind and words.
func TestConnectionTestFailuresAgainstVersitygw(t *testing.T) {
	gw := s3test.New(t)
	var logs logBuffer
	c := newConnector(t, testConfig(&logs))
	tests := []struct {
		name  string
		edit  func(*storage.Connection)
		kind  error
		words []string
	}{
		{
			name:  "bucket does not exist",
			edit:  func(c *storage.Connection) { c.Bucket = "no-such-bucket" },
			kind:  storage.ErrBucketNotFound,
			words: []string{`bucket "no-such-bucket" does not exist`, "NoSuchBucket"},
		},
		{
			name:  "wrong secret",
			edit:  func(c *storage.Connection) { c.SecretAccessKey = "wrong-" + c.SecretAccessKey },
			kind:  storage.ErrCredentials,
			words: []string{"secret access key does not match", "SignatureDoesNotMatch"},
		},
		{
			name:  "unknown access key",
			edit:  func(c *storage.Connection) { c.AccessKeyID = "AKIDUNKNOWN" },
			kind:  storage.ErrCredentials,
			words: []string{"access key id is not known"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := gwConnection(gw)
			tt.edit(&conn)
			err := c.Test(context.Background(), conn)
			wantKind(t, err, tt.kind, tt.words...)
		})
	}
	if keys := gw.Keys(t, gw.Bucket, ""); len(keys) != 0 {
		t.Errorf("failed tests wrote %v", keys)
	}
}

func TestConnectionTestStoppedServer(t *testing.T) {
	gw := s3test.New(t)
	var logs logBuffer
	c := newConnector(t, testConfig(&logs))
	conn := gwConnection(gw)
	if err := c.Test(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	gw.Stop()
	err := c.Test(context.Background(), conn)
	wantKind(t, err, storage.ErrUnreachable, "connection to 127.0.0.1:", "refused")
	// A write of a cached writer fails the same way, after its attempts.
	w, err := c.Open(conn)
	if err != nil {
		t.Fatal(err)
	}
	err = w.Put(context.Background(), w.Key("a.png"), strings.NewReader("x"), 1, "image/png")
	wantKind(t, err, storage.ErrUnreachable, "refused")

	gw.Start()
	if err := c.Test(context.Background(), conn); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if err := w.Put(context.Background(), w.Key("a.png"), strings.NewReader("x"), 1, "image/png"); err != nil {
		t.Fatalf("write after restart: %v", err)
	}
}

// stub is an HTTP server standing in for an endpoint; requests counts
// what it was sent.
type stub struct {
	*httptest.Server
	requests atomic.Int64
}

func newStub(t *testing.T, tls bool, h http.HandlerFunc) *stub {
	s := &stub{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	})
	if tls {
		s.Server = httptest.NewTLSServer(handler)
	} else {
		s.Server = httptest.NewServer(handler)
	}
	t.Cleanup(func() {
		s.CloseClientConnections() // ends hanging handlers
		s.Close()
	})
	return s
}

// stubConnection is an other_s3_compatible connection to url.
func stubConnection(url string) storage.Connection {
	return storage.Connection{Provider: storage.OtherS3Compatible, Bucket: "renders", Endpoint: url, ForcePathStyle: true,
		AccessKeyID: "AKIDSTUB", SecretAccessKey: "stub-secret-access-key"}
}

func s3Error(w http.ResponseWriter, status int, code string, header ...string) {
	for i := 0; i+1 < len(header); i += 2 {
		w.Header().Set(header[i], header[i+1])
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>server says ` + code + `</Message><RequestId>r1</RequestId></Error>`))
}

// TestConnectionTestFailuresOfOtherServers: endpoints that are not S3,
// that never answer, that fail TLS or refuse the write.
func TestConnectionTestFailuresOfOtherServers(t *testing.T) {
	tests := []struct {
		name     string
		tls      bool
		https    bool // the endpoint says https whatever the stub speaks
		handler  http.HandlerFunc
		kind     error
		words    []string
		attempts int64 // requests the stub must see; 0: not checked
	}{
		{
			name: "HTML page answering 200",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				_, _ = w.Write([]byte("<!doctype html><html><body>Welcome</body></html>"))
			},
			kind: storage.ErrNotS3, words: []string{"HTTP 200 without an ETag", "check that the endpoint is the S3 API"}, attempts: 1,
		},
		{
			name: "HTML page answering 404",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte("<html><body>Not found</body></html>"))
			},
			kind: storage.ErrNotS3, words: []string{"HTTP 404 with an HTML page, not an S3 API response"}, attempts: 1,
		},
		{
			name: "JSON API answering 403",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"error":"forbidden"}`))
			},
			kind: storage.ErrNotS3, words: []string{"HTTP 403 with JSON"},
		},
		{
			name:    "unknown access key (AWS's code)",
			handler: func(w http.ResponseWriter, r *http.Request) { s3Error(w, http.StatusForbidden, "InvalidAccessKeyId") },
			kind:    storage.ErrCredentials, words: []string{"access key id is not known", "InvalidAccessKeyId"}, attempts: 1,
		},
		{
			name:    "access denied",
			handler: func(w http.ResponseWriter, r *http.Request) { s3Error(w, http.StatusForbidden, "AccessDenied") },
			kind:    storage.ErrAccessDenied, words: []string{`access denied writing to bucket "renders"`, "AccessDenied"}, attempts: 1,
		},
		{
			name: "bucket in another region",
			handler: func(w http.ResponseWriter, r *http.Request) {
				s3Error(w, http.StatusMovedPermanently, "PermanentRedirect", "X-Amz-Bucket-Region", "eu-west-1")
			},
			kind: storage.ErrWrongRegion, words: []string{"not in region us-east-1", "it is in eu-west-1"},
		},
		{
			name:     "throttled through every attempt",
			handler:  func(w http.ResponseWriter, r *http.Request) { s3Error(w, http.StatusServiceUnavailable, "SlowDown") },
			kind:     storage.ErrServerError,
			words:    []string{"kept failing (SlowDown, HTTP 503)"},
			attempts: int64(storage.DefaultConfig().MaxAttempts),
		},
		{
			name: "internal errors through every attempt",
			handler: func(w http.ResponseWriter, r *http.Request) {
				s3Error(w, http.StatusInternalServerError, "InternalError")
			},
			kind:     storage.ErrServerError,
			words:    []string{"HTTP 500"},
			attempts: int64(storage.DefaultConfig().MaxAttempts),
		},
		{
			name: "untrusted certificate",
			tls:  true,
			kind: storage.ErrTLS, words: []string{"TLS with 127.0.0.1:", "not signed by a trusted authority"},
		},
		{
			name: "plain HTTP on an https endpoint", https: true,
			kind: storage.ErrTLS, words: []string{"plain HTTP on an https endpoint"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.handler
			if h == nil {
				h = func(w http.ResponseWriter, r *http.Request) { w.Header().Set("ETag", `"x"`) }
			}
			s := newStub(t, tt.tls, h)
			url := s.URL
			if tt.https {
				url = strings.Replace(url, "http://", "https://", 1)
			}
			var logs logBuffer
			c := newConnector(t, testConfig(&logs))
			err := c.Test(context.Background(), stubConnection(url))
			wantKind(t, err, tt.kind, tt.words...)
			if tt.attempts != 0 && s.requests.Load() != tt.attempts {
				t.Errorf("%d requests, want %d", s.requests.Load(), tt.attempts)
			}
		})
	}
}

// TestRetriesThrottlingThenSucceeds: two SlowDown answers, then the write
// goes through.
func TestRetriesThrottlingThenSucceeds(t *testing.T) {
	var n atomic.Int64
	s := newStub(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			s3Error(w, http.StatusServiceUnavailable, "SlowDown")
		case 2:
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.Header().Set("ETag", `"0123"`)
		}
	})
	var logs logBuffer
	c := newConnector(t, testConfig(&logs))
	if err := c.Test(context.Background(), stubConnection(s.URL)); err != nil {
		t.Fatalf("Test: %v", err)
	}
	if s.requests.Load() != 3 {
		t.Errorf("%d requests, want 3", s.requests.Load())
	}
	if !strings.Contains(logs.String(), "retrying request") {
		t.Errorf("retries not logged:\n%s", logs.String())
	}
}

// hang is a handler that reads the request and never answers: it returns
// when the client closes the connection (the server notices it once the
// body is read).
func hang(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// TestConnectionTestTimeout: an endpoint that accepts the request and
// never answers fails the test as a timeout within TestTimeout.
func TestConnectionTestTimeout(t *testing.T) {
	s := newStub(t, false, hang)
	var logs logBuffer
	cfg := testConfig(&logs)
	cfg.TestTimeout = 300 * time.Millisecond
	c := newConnector(t, cfg)
	start := time.Now()
	err := c.Test(context.Background(), stubConnection(s.URL))
	elapsed := time.Since(start)
	wantKind(t, err, storage.ErrTimeout, "no answer from 127.0.0.1:", "within 300ms")
	// The bound holds: well under the transport's own 60 s header timeout.
	if elapsed > cfg.TestTimeout+5*time.Second {
		t.Errorf("Test returned after %v, bound %v", elapsed, cfg.TestTimeout)
	}
	// A write is bounded by WriteTimeout (plus a second per WriteMinRate
	// bytes: none for 1 KiB).
	cfg.WriteTimeout = 300 * time.Millisecond
	w, err := newConnector(t, cfg).Open(stubConnection(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	err = w.Put(context.Background(), w.Key("a.png"), strings.NewReader(strings.Repeat("x", 1024)), 1024, "image/png")
	wantKind(t, err, storage.ErrTimeout, "within 300ms")

	// The caller's earlier deadline is the bound when it is shorter.
	cfg.TestTimeout = time.Minute
	c = newConnector(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = c.Test(ctx, stubConnection(s.URL))
	wantKind(t, err, storage.ErrTimeout)
	// The bound named is what was left of the caller's 200 ms when the test
	// began (a little less on a busy machine), not TestTimeout's minute.
	bound := -1
	if m := regexp.MustCompile(`within (\d+)ms`).FindStringSubmatch(storage.Describe(err)); m != nil {
		bound, _ = strconv.Atoi(m[1])
	}
	if bound < 100 || bound > 200 {
		t.Errorf("Describe = %q, want the caller's deadline (up to 200ms) as the bound", storage.Describe(err))
	}
}

// TestConnectionTestCanceled: the caller's cancellation is its own error,
// not a failure of the destination.
func TestConnectionTestCanceled(t *testing.T) {
	s := newStub(t, false, hang)
	var logs logBuffer
	c := newConnector(t, testConfig(&logs))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	err := c.Test(ctx, stubConnection(s.URL))
	var e *storage.Error
	if !errors.Is(err, context.Canceled) || errors.As(err, &e) {
		t.Fatalf("error %v, want the caller's context.Canceled", err)
	}
}

// stubResolver answers every name with its addresses, or "no such host".
type stubResolver map[string][]net.IPAddr

func (r stubResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestConnectionTestUnreachableAndBlocked(t *testing.T) {
	s := newStub(t, false, func(w http.ResponseWriter, r *http.Request) { w.Header().Set("ETag", `"x"`) })
	port := s.Listener.Addr().(*net.TCPAddr).Port
	resolver := stubResolver{
		"rebind.example.com":   {{IP: net.ParseIP("203.0.113.7")}, {IP: net.ParseIP("127.0.0.1")}},
		"loopback.example.com": {{IP: net.ParseIP("127.0.0.1")}},
	}
	tests := []struct {
		name         string
		endpoint     string
		allowPrivate bool
		kind         error
		words        []string
	}{
		{name: "unknown host", endpoint: "https://s3.nowhere.example", kind: storage.ErrUnreachable, words: []string{"cannot resolve host s3.nowhere.example"}},
		{name: "loopback not allowed", endpoint: s.URL, kind: storage.ErrBlockedEndpoint, words: []string{"private or internal address"}},
		{name: "name resolving to loopback", endpoint: "http://loopback.example.com:" + strconv.Itoa(port), kind: storage.ErrBlockedEndpoint},
		{name: "any answer private", endpoint: "http://rebind.example.com", kind: storage.ErrBlockedEndpoint},
		{name: "cloud metadata even when private is allowed", endpoint: "http://169.254.169.254", allowPrivate: true, kind: storage.ErrBlockedEndpoint},
		{name: "name resolving to loopback, allowed", endpoint: "http://loopback.example.com:" + strconv.Itoa(port), allowPrivate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logBuffer
			cfg := testConfig(&logs)
			cfg.AllowPrivate = tt.allowPrivate
			cfg.Resolver = resolver
			c := newConnector(t, cfg)
			before := s.requests.Load()
			err := c.Test(context.Background(), stubConnection(tt.endpoint))
			if tt.kind == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantKind(t, err, tt.kind, tt.words...)
			if s.requests.Load() != before {
				t.Error("the stub was reached")
			}
		})
	}
}

func TestConnectionTestInvalidSettings(t *testing.T) {
	var logs logBuffer
	c := newConnector(t, testConfig(&logs))
	conn := stubConnection("ftp://example.com")
	err := c.Test(context.Background(), conn)
	var ce *storage.ConnectionError
	if !errors.As(err, &ce) || ce.Field != "endpoint" || !errors.Is(err, storage.ErrInvalidConnection) {
		t.Fatalf("error %v, want a *ConnectionError on endpoint", err)
	}
	if _, err := c.Open(conn); !errors.Is(err, storage.ErrInvalidConnection) {
		t.Errorf("Open: %v, want ErrInvalidConnection", err)
	}
}
