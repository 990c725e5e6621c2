package storage_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pictorhq/pictor/origin/storage"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

func TestPutSmallObject(t *testing.T) {
	gw := s3test.New(t)
	var logs logBuffer
	c := newConnector(t, testConfig(&logs))
	w, err := c.Open(gwConnection(gw))
	if err != nil {
		t.Fatal(err)
	}
	body := randomBytes(1, 300<<10)
	key := w.Key("0196f5d2-image.png")
	if key != "renders/org-1/0196f5d2-image.png" {
		t.Fatalf("key %q", key)
	}
	if err := w.Put(context.Background(), key, bytes.NewReader(body), int64(len(body)), "image/png"); err != nil {
		t.Fatal(err)
	}
	got := gw.Get(t, gw.Bucket, key)
	if !bytes.Equal(got.Body, body) {
		t.Fatalf("object differs from what was written (%d bytes, want %d)", len(got.Body), len(body))
	}
	if got.ContentType != "image/png" {
		t.Errorf("Content-Type %q, want image/png", got.ContentType)
	}

	// An empty file, from a stream and from bytes.
	for i, body := range []io.Reader{strings.NewReader(""), bytes.NewReader(nil)} {
		key := w.Key(fmt.Sprintf("empty-%d.txt", i))
		if err := w.Put(context.Background(), key, body, 0, "text/plain"); err != nil {
			t.Fatal(err)
		}
		if got := gw.Get(t, gw.Bucket, key); len(got.Body) != 0 {
			t.Errorf("empty object holds %d bytes", len(got.Body))
		}
	}

	// The cache gives the same Writer for the same settings.
	again, err := c.Open(gwConnection(gw))
	if err != nil || again != w {
		t.Errorf("Open again = %p, %v; want the cached %p", again, err, w)
	}
}

// TestPutMultipartStreamed writes more than a part from a stream that is
// produced as it is read, and reads it back byte for byte.
func TestPutMultipartStreamed(t *testing.T) {
	gw := s3test.New(t)
	var logs logBuffer
	c := newConnector(t, testConfig(&logs))
	w, err := c.Open(gwConnection(gw))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		size int64
		put  int64 // the size announced to Put
		want string
	}{
		{name: "known size", size: 40<<20 + 123, put: 40<<20 + 123, want: "-3"},
		{name: "unknown size", size: 17 << 20, put: -1, want: "-2"},
		{name: "a part and a byte", size: 16<<20 + 1, put: 16<<20 + 1, want: "-2"},
		{name: "exactly one part", size: 16 << 20, put: 16 << 20},
		{name: "one part of unknown size", size: 3 << 20, put: -1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := w.Key(strings.ReplaceAll(tt.name, " ", "-") + ".pdf")
			seed := uint64(100 + i)
			if err := w.Put(context.Background(), key, randomStream(seed, tt.size), tt.put, "application/pdf"); err != nil {
				t.Fatal(err)
			}
			head, err := gw.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(gw.Bucket), Key: aws.String(key)})
			if err != nil {
				t.Fatal(err)
			}
			if aws.ToInt64(head.ContentLength) != tt.size || aws.ToString(head.ContentType) != "application/pdf" {
				t.Errorf("object of %d bytes, %q; want %d, application/pdf", aws.ToInt64(head.ContentLength), aws.ToString(head.ContentType), tt.size)
			}
			// A multipart upload's ETag ends with -<parts>; up to a part is
			// one PutObject.
			etag := strings.Trim(aws.ToString(head.ETag), `"`)
			if tt.want != "" && !strings.HasSuffix(etag, tt.want) {
				t.Errorf("ETag %s: want a multipart upload of %s parts", etag, strings.TrimPrefix(tt.want, "-"))
			}
			if tt.want == "" && strings.Contains(etag, "-") {
				t.Errorf("ETag %s: want a single PutObject", etag)
			}
			obj := gw.Open(t, gw.Bucket, key)
			defer obj.Close()
			sameStream(t, obj, randomStream(seed, tt.size))
		})
	}
	if ups := gw.MultipartUploads(t, gw.Bucket); len(ups) != 0 {
		t.Errorf("multipart uploads left: %v", ups)
	}
}

// TestPutWrongSize: a body shorter or longer than announced fails the
// write and leaves no object and no upload behind.
func TestPutWrongSize(t *testing.T) {
	gw := s3test.New(t)
	var logs logBuffer
	c := newConnector(t, testConfig(&logs))
	w, err := c.Open(gwConnection(gw))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		body, put int64
		ras       bool // a bytes.Reader rather than a stream
		words     string
	}{
		{name: "short stream", body: 1000, put: 1001, words: "1000 bytes, not the announced 1001"},
		{name: "long stream", body: 1001, put: 1000, words: "longer than the announced 1000"},
		{name: "short multipart stream", body: 20 << 20, put: 20<<20 + 1, words: "not the announced"},
		{name: "long multipart stream", body: 20<<20 + 1, put: 20 << 20, words: "longer than the announced"},
		{name: "bytes.Reader of another size", body: 10, put: 11, ras: true, words: "holds 10 bytes, not the announced 11"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := w.Key("wrong-size-" + strings.ReplaceAll(tt.name, " ", "-"))
			body := randomStream(uint64(i), tt.body)
			if tt.ras {
				body = bytes.NewReader(randomBytes(uint64(i), int(tt.body)))
			}
			err := w.Put(context.Background(), key, body, tt.put, "image/png")
			wantKind(t, err, storage.ErrWrite, tt.words)
			if keys := gw.Keys(t, gw.Bucket, key); len(keys) != 0 {
				t.Errorf("objects written: %v", keys)
			}
		})
	}
	if ups := gw.MultipartUploads(t, gw.Bucket); len(ups) != 0 {
		t.Errorf("multipart uploads left: %v", ups)
	}
}

func TestPutRejectsBadKeys(t *testing.T) {
	gw := s3test.New(t)
	var logs logBuffer
	w, err := newConnector(t, testConfig(&logs)).Open(gwConnection(gw))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", strings.Repeat("k", 1025), "a\x00b"} {
		err := w.Put(context.Background(), key, strings.NewReader("x"), 1, "text/plain")
		wantKind(t, err, storage.ErrWrite, "object key")
	}
}

// stallingReader gives its first n bytes of a random stream at once, then
// waits until ctx is done before it ends.
type stallingReader struct {
	ctx context.Context
	r   io.Reader
}

func (s *stallingReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		<-s.ctx.Done()
	}
	return n, err
}

// TestPutTimeoutAbortsMultipart: a multipart write that runs out of time
// fails as a timeout and leaves no upload behind, although the manager's
// own abort ran on the expired context.
func TestPutTimeoutAbortsMultipart(t *testing.T) {
	gw := s3test.New(t)
	var logs logBuffer
	w, err := newConnector(t, testConfig(&logs)).Open(gwConnection(gw))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	body := &stallingReader{ctx: ctx, r: randomStream(9, 17<<20)}
	err = w.Put(ctx, w.Key("stalled.pdf"), body, -1, "application/pdf")
	wantKind(t, err, storage.ErrTimeout, "within")
	if ups := gw.MultipartUploads(t, gw.Bucket); len(ups) != 0 {
		t.Errorf("multipart uploads left: %v", ups)
	}
	if keys := gw.Keys(t, gw.Bucket, ""); len(keys) != 0 {
		t.Errorf("objects written: %v", keys)
	}
}

// TestConcurrentWriters hammers Open and Put from many goroutines (run
// with -race).
func TestConcurrentWriters(t *testing.T) {
	gw := s3test.New(t)
	var logs logBuffer
	c := newConnector(t, testConfig(&logs))
	const goroutines, each = 16, 8
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := gwConnection(gw)
			conn.KeyPrefix = fmt.Sprintf("p%d", g%4) // four destinations
			for i := range each {
				w, err := c.Open(conn)
				if err != nil {
					errs <- err
					return
				}
				body := randomBytes(uint64(g*each+i), 1000+i)
				if err := w.Put(context.Background(), w.Key(fmt.Sprintf("%d-%d.png", g, i)), bytes.NewReader(body), int64(len(body)), "image/png"); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if keys := gw.Keys(t, gw.Bucket, ""); len(keys) != goroutines*each {
		t.Errorf("%d objects, want %d", len(keys), goroutines*each)
	}
}
