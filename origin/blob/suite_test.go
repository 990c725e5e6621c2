package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// harness is a store under test. srv and s3 are set for the S3 store only:
// what the files store cannot do (checksums, outages) is tested of S3.
type harness struct {
	Blobs
	srv *s3test.Server
	s3  *s3Store
	reg *prometheus.Registry
}

var stores = []struct {
	name string
	open func(t *testing.T) harness
}{
	{name: "files", open: openFiles},
	{name: "s3", open: openS3},
}

func openFiles(t *testing.T) harness {
	t.Helper()
	b, err := OpenURL(context.Background(), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return harness{Blobs: b}
}

// openS3 starts a versitygw and opens an S3 store on it under a prefix,
// with quick retries.
func openS3(t *testing.T) harness {
	t.Helper()
	srv := s3test.New(t)
	h := s3Harness(t, srv, "s3://"+srv.Bucket+"/blobs/test?endpoint="+srv.URL+"&path_style=true&region="+s3test.Region)
	h.srv = srv
	return h
}

func s3Harness(t *testing.T, srv *s3test.Server, u string) harness {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.URL = u
	cfg.Credentials = credentials.NewStaticCredentialsProvider(s3test.AccessKeyID, s3test.SecretAccessKey, "")
	cfg.MaxBackoff = 20 * time.Millisecond
	cfg.Timeout = 20 * time.Second
	cfg.Registerer = reg
	b, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return harness{Blobs: b, srv: srv, s3: b.(*s3Store), reg: reg}
}

// newID is a fresh image id.
func newID(t *testing.T) string {
	t.Helper()
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return u.String()
}

// content is n deterministic bytes that differ at every offset's
// neighbourhood (a misplaced range shows).
func content(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// suite is run against every store; s3Only cases against the S3 store.
var suite = []struct {
	name   string
	s3Only bool
	run    func(t *testing.T, h harness)
}{
	{name: "put open read remove", run: testPutOpenReadRemove},
	{name: "missing", run: testMissing},
	{name: "invalid keys", run: testInvalidKeys},
	{name: "ranges through ServeContent", run: testServeContent},
	{name: "large object streams in bounded memory", run: testLargeStream},
	{name: "concurrent readers", run: testConcurrentReaders},
	{name: "partial opens", run: testPartial},
	{name: "corrupt", s3Only: true, run: testCorrupt},
	{name: "no checksum recorded", s3Only: true, run: testNoChecksum},
	{name: "changed while read", s3Only: true, run: testChanged},
	{name: "remove crosses list pages", s3Only: true, run: testRemovePages},
	{name: "key layout and metrics", s3Only: true, run: testLayoutAndMetrics},
	{name: "server stopped", s3Only: true, run: testServerStopped},
}

func TestStores(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			h := st.open(t)
			for _, c := range suite {
				if c.s3Only && h.s3 == nil {
					continue
				}
				t.Run(c.name, func(t *testing.T) { c.run(t, h) })
			}
		})
	}
}

func testPutOpenReadRemove(t *testing.T, h harness) {
	ctx := context.Background()
	id := newID(t)
	one, two := content(1000, 1), content(3000, 2)
	if err := h.Put(ctx, id, "image.png", one); err != nil {
		t.Fatal(err)
	}
	if err := h.Put(ctx, id, "image.png", two); err != nil {
		t.Fatal(err)
	}
	if err := h.Put(ctx, id, "document.pdf", one); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Read(ctx, id, "image.png"); err != nil || !bytes.Equal(got, two) {
		t.Fatalf("Read = %d bytes, %v; want the second content", len(got), err)
	}
	o, err := h.Open(ctx, id, "image.png")
	if err != nil {
		t.Fatal(err)
	}
	if size, err := o.Seek(0, io.SeekEnd); err != nil || size != int64(len(two)) {
		t.Fatalf("Seek(0, End) = %d, %v; want %d", size, err, len(two))
	}
	if _, err := o.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(o); err != nil || !bytes.Equal(got, two) {
		t.Fatalf("ReadAll = %d bytes, %v", len(got), err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Put(ctx, id, "empty", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Read(ctx, id, "empty"); err != nil || len(got) != 0 {
		t.Fatalf("Read(empty) = %q, %v", got, err)
	}
	if err := h.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"image.png", "document.pdf", "empty"} {
		if _, err := h.Open(ctx, id, name); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Open(%s) after Remove: %v, want ErrNotFound", name, err)
		}
	}
	if err := h.Remove(ctx, id); err != nil {
		t.Fatalf("Remove of a removed image: %v", err)
	}
}

func testMissing(t *testing.T, h harness) {
	ctx := context.Background()
	id := newID(t)
	if err := h.Put(ctx, id, "image.png", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, k := range [][2]string{{newID(t), "image.png"}, {id, "image.webp"}} {
		if _, err := h.Open(ctx, k[0], k[1]); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnavailable) {
			t.Errorf("Open(%s/%s) = %v, want ErrNotFound", k[0], k[1], err)
		}
		if _, err := h.Read(ctx, k[0], k[1]); !errors.Is(err, ErrNotFound) {
			t.Errorf("Read(%s/%s) = %v, want ErrNotFound", k[0], k[1], err)
		}
	}
	if err := h.Remove(ctx, newID(t)); err != nil {
		t.Errorf("Remove of an unknown image: %v", err)
	}
}

func testInvalidKeys(t *testing.T, h harness) {
	ctx := context.Background()
	for _, k := range [][2]string{{"..", "x"}, {"a/b", "x"}, {"id", "../x"}, {"id", ".hidden"}, {"", "x"}, {"id", ""}, {`a\b`, "x"}} {
		if err := h.Put(ctx, k[0], k[1], nil); err == nil {
			t.Errorf("Put(%q, %q) accepted", k[0], k[1])
		}
		if _, err := h.Open(ctx, k[0], k[1]); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Open(%q, %q) = %v, want an invalid key", k[0], k[1], err)
		}
		if _, err := h.Read(ctx, k[0], k[1]); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Read(%q, %q) = %v, want an invalid key", k[0], k[1], err)
		}
	}
	for _, id := range []string{"", "..", "a/b"} {
		if err := h.Remove(ctx, id); err == nil {
			t.Errorf("Remove(%q) accepted", id)
		}
	}
}

// serve is an HTTP server that serves id/name of h with ServeContent, as
// the origin's GET does.
func serve(t *testing.T, h harness, id, name string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, err := h.Open(r.Context(), id, name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer o.Close()
		http.ServeContent(w, r, "", time.Time{}, o)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func testServeContent(t *testing.T, h harness) {
	ctx := context.Background()
	id := newID(t)
	data := content(100_000, 3)
	if err := h.Put(ctx, id, "document.pdf", data); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, h, id, "document.pdf")
	tests := []struct {
		name   string
		method string
		rng    string
		status int
		want   []byte // the body, or the parts of a multipart answer
		parts  [][]byte
	}{
		{name: "whole", method: http.MethodGet, status: http.StatusOK, want: data},
		{name: "range", method: http.MethodGet, rng: "bytes=10-99", status: http.StatusPartialContent, want: data[10:100]},
		{name: "suffix", method: http.MethodGet, rng: "bytes=-50", status: http.StatusPartialContent, want: data[len(data)-50:]},
		{name: "open end", method: http.MethodGet, rng: "bytes=99990-", status: http.StatusPartialContent, want: data[99990:]},
		{name: "two ranges", method: http.MethodGet, rng: "bytes=0-9,5000-5009", status: http.StatusPartialContent, parts: [][]byte{data[:10], data[5000:5010]}},
		{name: "unsatisfiable", method: http.MethodGet, rng: "bytes=200000-", status: http.StatusRequestedRangeNotSatisfiable},
		{name: "head", method: http.MethodHead, status: http.StatusOK, want: []byte{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL, nil)
			if tt.rng != "" {
				req.Header.Set("Range", tt.rng)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.parts != nil {
				for i, p := range tt.parts {
					if !bytes.Contains(body, p) {
						t.Fatalf("part %d missing from the multipart answer", i)
					}
				}
				return
			}
			if tt.want != nil && !bytes.Equal(body, tt.want) {
				t.Fatalf("body of %d bytes, want %d bytes (%q...)", len(body), len(tt.want), tt.want[:min(8, len(tt.want))])
			}
		})
	}
}

// testLargeStream: a 20 MiB object read through Open allocates a small
// fraction of its size (no whole download into memory).
func testLargeStream(t *testing.T, h harness) {
	ctx := context.Background()
	id := newID(t)
	const size = 20 << 20
	data := content(size, 4)
	want := sha256.Sum256(data)
	if err := h.Put(ctx, id, "image.png", data); err != nil {
		t.Fatal(err)
	}
	data = nil
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	o, err := h.Open(ctx, id, "image.png")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.New()
	n, err := io.CopyBuffer(sum, o, make([]byte, 32<<10))
	o.Close()
	runtime.ReadMemStats(&after)
	if err != nil || n != size || !bytes.Equal(sum.Sum(nil), want[:]) {
		t.Fatalf("streamed %d bytes, %v; or other content", n, err)
	}
	// Loose: the transport's buffers and the SDK's bookkeeping, not 20 MiB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Fatalf("streaming %d bytes allocated %d bytes", size, alloc)
	}
}

func testConcurrentReaders(t *testing.T, h harness) {
	ctx := context.Background()
	id := newID(t)
	data := content(1<<20, 5)
	if err := h.Put(ctx, id, "image.png", data); err != nil {
		t.Fatal(err)
	}
	const readers = 8
	var wg sync.WaitGroup
	errs := make(chan error, 3*readers)
	for i := range readers {
		wg.Go(func() {
			got, err := h.Read(ctx, id, "image.png")
			if err != nil || !bytes.Equal(got, data) {
				errs <- fmt.Errorf("reader %d: Read: %d bytes, %v", i, len(got), err)
			}
		})
		wg.Go(func() {
			o, err := h.Open(ctx, id, "image.png")
			if err != nil {
				errs <- err
				return
			}
			defer o.Close()
			if got, err := io.ReadAll(o); err != nil || !bytes.Equal(got, data) {
				errs <- fmt.Errorf("reader %d: whole: %d bytes, %v", i, len(got), err)
			}
		})
		wg.Go(func() {
			o, err := h.Open(ctx, id, "image.png")
			if err != nil {
				errs <- err
				return
			}
			defer o.Close()
			off := int64(i * 1000)
			if _, err := o.Seek(off, io.SeekStart); err != nil {
				errs <- err
				return
			}
			got := make([]byte, 5000)
			if _, err := io.ReadFull(o, got); err != nil || !bytes.Equal(got, data[off:off+5000]) {
				errs <- fmt.Errorf("reader %d: range at %d: %v", i, off, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// overwrite replaces an object's bytes on the server behind the store's
// back, keeping the recorded SHA-256 (meta nil: no metadata at all).
func overwrite(t *testing.T, h harness, id, name string, body []byte, meta map[string]string) {
	t.Helper()
	key, err := h.s3.key(id, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.srv.Client().PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(h.srv.Bucket), Key: aws.String(key), Body: bytes.NewReader(body), Metadata: meta,
	}); err != nil {
		t.Fatal(err)
	}
}

func metadata(t *testing.T, h harness, id, name string) map[string]string {
	t.Helper()
	key, _ := h.s3.key(id, name)
	out, err := h.srv.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(h.srv.Bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Metadata
}

func testCorrupt(t *testing.T, h harness) {
	ctx := context.Background()
	id := newID(t)
	data := content(200_000, 6)
	if err := h.Put(ctx, id, "document.pdf", data); err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(data)
	bad[150_000] ^= 1 // one bit flipped, same size
	overwrite(t, h, id, "document.pdf", bad, metadata(t, h, id, "document.pdf"))
	before := counter(t, h.reg, "pictor_blob_checksum_failures_total", nil)

	if _, err := h.Read(ctx, id, "document.pdf"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read = %v, want ErrCorrupt", err)
	}
	o, err := h.Open(ctx, id, "document.pdf")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(o)
	o.Close()
	if !errors.Is(err, ErrCorrupt) || len(got) >= len(bad) {
		t.Fatalf("ReadAll = %d of %d bytes, %v; want ErrCorrupt before the end", len(got), len(bad), err)
	}

	// Through ServeContent the answer ends short of its Content-Length:
	// the client sees an error, never a complete corrupt file.
	srv := serve(t, h, id, "document.pdf")
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || len(body) >= len(bad) {
		t.Fatalf("GET gave %d of %d bytes, error %v; want a short answer", len(body), len(bad), err)
	}
	// A range cannot be verified: it is served as stored.
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Range", "bytes=149990-150009")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusPartialContent || !bytes.Equal(body, bad[149990:150010]) {
		t.Fatalf("range: %d %v, %d bytes", resp.StatusCode, err, len(body))
	}
	if n := counter(t, h.reg, "pictor_blob_checksum_failures_total", nil) - before; n != 3 {
		t.Fatalf("%v checksum failures counted, want 3", n)
	}
}

func testNoChecksum(t *testing.T, h harness) {
	ctx := context.Background()
	id := newID(t)
	overwrite(t, h, id, "image.png", []byte("written by someone else"), nil)
	if _, err := h.Read(ctx, id, "image.png"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read = %v, want ErrCorrupt", err)
	}
	if _, err := h.Open(ctx, id, "image.png"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
	overwrite(t, h, id, "image.png", []byte("x"), map[string]string{metaSHA256: "not hex"})
	if _, err := h.Read(ctx, id, "image.png"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Read with a malformed checksum = %v, want ErrCorrupt", err)
	}
}

// testChanged: an object replaced while open is not spliced: the read
// from another offset (a new GET) fails with ErrChanged.
func testChanged(t *testing.T, h harness) {
	ctx := context.Background()
	id := newID(t)
	if err := h.Put(ctx, id, "image.png", content(100_000, 7)); err != nil {
		t.Fatal(err)
	}
	o, err := h.Open(ctx, id, "image.png")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := io.ReadFull(o, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if err := h.Put(ctx, id, "image.png", content(100_000, 8)); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Seek(50_000, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Read(make([]byte, 100)); !errors.Is(err, ErrChanged) {
		t.Fatalf("read after the object was replaced: %v, want ErrChanged", err)
	}
	// Removed while open: the same.
	o2, err := h.Open(ctx, id, "image.png")
	if err != nil {
		t.Fatal(err)
	}
	defer o2.Close()
	if err := h.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	o2.Seek(10, io.SeekStart)
	if _, err := o2.Read(make([]byte, 10)); !errors.Is(err, ErrChanged) {
		t.Fatalf("read after the object was removed: %v, want ErrChanged", err)
	}
}

func testRemovePages(t *testing.T, h harness) {
	ctx := context.Background()
	page := h.s3.listPage
	h.s3.listPage = 2
	defer func() { h.s3.listPage = page }()
	id, other := newID(t), newID(t)
	for i := range 5 {
		if err := h.Put(ctx, id, fmt.Sprintf("f%d", i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Put(ctx, other, "image.png", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	lists := counter(t, h.reg, "pictor_blob_s3_requests_total", map[string]string{"operation": "ListObjectsV2", "result": "ok"})
	if err := h.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n := counter(t, h.reg, "pictor_blob_s3_requests_total", map[string]string{"operation": "ListObjectsV2", "result": "ok"}) - lists; n < 3 {
		t.Fatalf("%v list pages, want 3", n)
	}
	dir, _ := h.s3.key(id, "x")
	if keys := h.srv.Keys(t, h.srv.Bucket, strings.TrimSuffix(dir, "x")); len(keys) != 0 {
		t.Fatalf("left after Remove: %v", keys)
	}
	if got, err := h.Read(ctx, other, "image.png"); err != nil || string(got) != "kept" {
		t.Fatalf("the other image: %q, %v", got, err)
	}
}

func testLayoutAndMetrics(t *testing.T, h harness) {
	ctx := context.Background()
	id := "01a200a2-2585-7706-ab1e-4006e28d9bff"
	ok := map[string]string{"operation": "PutObject", "result": "ok"}
	before := counter(t, h.reg, "pictor_blob_s3_requests_total", ok)
	if err := h.Put(ctx, id, "image.png", []byte("png")); err != nil {
		t.Fatal(err)
	}
	keys := h.srv.Keys(t, h.srv.Bucket, "blobs/")
	want := "blobs/test/ff/" + id + "/image.png"
	found := false
	for _, k := range keys {
		found = found || k == want
	}
	if !found {
		t.Fatalf("keys %v, want %s among them", keys, want)
	}
	if got := h.srv.Get(t, h.srv.Bucket, want); string(got.Body) != "png" {
		t.Fatalf("object %q", got.Body)
	}
	// The SHA-256 is in the metadata and was given to the server, which
	// checked it and keeps it.
	sum := sha256.Sum256([]byte("png"))
	head, err := h.srv.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(h.srv.Bucket), Key: aws.String(want), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	if got := head.Metadata[metaSHA256]; got != hex.EncodeToString(sum[:]) {
		t.Fatalf("metadata sha256 %q", got)
	}
	if got := aws.ToString(head.ChecksumSHA256); got != base64.StdEncoding.EncodeToString(sum[:]) {
		t.Fatalf("x-amz-checksum-sha256 %q", got)
	}
	if n := counter(t, h.reg, "pictor_blob_s3_requests_total", ok) - before; n != 1 {
		t.Fatalf("%v PutObject counted, want 1", n)
	}
	if n := counter(t, h.reg, "pictor_blob_s3_request_attempts_total", map[string]string{"operation": "PutObject", "status": "2xx"}); n < 1 {
		t.Fatalf("%v PutObject attempts counted", n)
	}
	if _, err := h.Read(ctx, newID(t), "image.png"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if n := counter(t, h.reg, "pictor_blob_s3_requests_total", map[string]string{"operation": "GetObject", "result": "not_found"}); n < 1 {
		t.Fatalf("%v GetObject not_found counted", n)
	}
}

// testServerStopped: with the server down, every operation is
// ErrUnavailable (an open object's next GET too), never ErrNotFound; once
// it is back the same store works again.
func testServerStopped(t *testing.T, h harness) {
	ctx := context.Background()
	id := newID(t)
	data := content(10_000, 9)
	if err := h.Put(ctx, id, "image.png", data); err != nil {
		t.Fatal(err)
	}
	o, err := h.Open(ctx, id, "image.png")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := io.ReadAll(o); err != nil { // its GET is over before the server stops
		t.Fatal(err)
	}
	h.srv.Stop()
	ops := []struct {
		name string
		do   func() error
	}{
		{"put", func() error { return h.Put(ctx, id, "image.png", data) }},
		{"read", func() error { _, err := h.Read(ctx, id, "image.png"); return err }},
		{"open", func() error { _, err := h.Open(ctx, id, "image.png"); return err }},
		{"partial open", func() error { _, err := h.Open(Partial(ctx), id, "image.png"); return err }},
		{"remove", func() error { return h.Remove(ctx, id) }},
		{"read of an open object", func() error {
			if _, err := o.Seek(100, io.SeekStart); err != nil {
				return err
			}
			_, err := o.Read(make([]byte, 10))
			return err
		}},
	}
	for _, op := range ops {
		if err := op.do(); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNotFound) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with the server stopped: %v, want ErrUnavailable", op.name, err)
		}
	}
	if n := counter(t, h.reg, "pictor_blob_s3_requests_total", map[string]string{"operation": "GetObject", "result": "unavailable"}); n < 3 {
		t.Errorf("%v unavailable GETs counted, want 3", n)
	}
	h.srv.Start()
	if got, err := h.Read(ctx, id, "image.png"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Read after restart: %v", err)
	}
	if _, err := o.Read(make([]byte, 10)); err != nil {
		t.Fatalf("the open object after restart: %v", err)
	}
}

// counter is the value of a counter of reg with labels (nil: none).
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestFilesOpenIsAnOSFile: the files store's Object is the *os.File
// itself, so that copies of it to a connection may use sendfile.
func TestFilesOpenIsAnOSFile(t *testing.T) {
	h := openFiles(t)
	ctx := context.Background()
	id := newID(t)
	if err := h.Put(ctx, id, "image.png", []byte("png")); err != nil {
		t.Fatal(err)
	}
	o, err := h.Open(ctx, id, "image.png")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, ok := o.(*os.File); !ok {
		t.Fatalf("Open gave a %T", o)
	}
}

// testPartial: an Object opened Partial reads as any other (its size
// without a read, every offset, a Limit and the reads past it, a whole
// read verified), and a missing file is ErrNotFound at Open. Of the S3
// store: the Open is one HeadObject and no GET, a Limit bounds the GET
// of the next read, a corrupt object still fails its whole read, and an
// object replaced between the HeadObject and the first read is
// ErrChanged.
func testPartial(t *testing.T, h harness) {
	ctx := Partial(context.Background())
	id := newID(t)
	data := content(100_000, 9)
	if err := h.Put(ctx, id, "document.pdf", data); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Open(ctx, id, "other.pdf"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of a missing file: %v, want ErrNotFound", err)
	}
	requests := func(op string) float64 {
		if h.reg == nil {
			return 0
		}
		return counter(t, h.reg, "pictor_blob_s3_requests_total", map[string]string{"operation": op, "result": "ok"})
	}
	heads, gets := requests("HeadObject"), requests("GetObject")
	o, err := h.Open(ctx, id, "document.pdf")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if size, err := o.Seek(0, io.SeekEnd); err != nil || size != int64(len(data)) {
		t.Fatalf("Seek(0, End) = %d, %v", size, err)
	}
	if h.s3 != nil && (requests("HeadObject")-heads != 1 || requests("GetObject") != gets) {
		t.Fatalf("Open sent %v HeadObject and %v GetObject, want 1 and 0", requests("HeadObject")-heads, requests("GetObject")-gets)
	}
	// A Limit of 100 bytes at 1000, then reads past it: the bytes are the
	// same, the second GET starts where the first ended.
	if _, err := o.Seek(1000, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	Limit(o, 100)
	got := make([]byte, 300)
	if _, err := io.ReadFull(o, got); err != nil || !bytes.Equal(got, data[1000:1300]) {
		t.Fatalf("read across the limit: %v, or other bytes", err)
	}
	if h.s3 != nil && requests("GetObject")-gets != 2 {
		t.Fatalf("%v GETs for a limited read and the rest, want 2", requests("GetObject")-gets)
	}
	if _, err := o.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if all, err := io.ReadAll(o); err != nil || !bytes.Equal(all, data) {
		t.Fatalf("ReadAll = %d bytes, %v", len(all), err)
	}
	if h.s3 == nil {
		return
	}

	bad := bytes.Clone(data)
	bad[50_000] ^= 1
	overwrite(t, h, id, "document.pdf", bad, metadata(t, h, id, "document.pdf"))
	c, err := h.Open(ctx, id, "document.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if all, err := io.ReadAll(c); !errors.Is(err, ErrCorrupt) || len(all) >= len(bad) {
		t.Fatalf("ReadAll of a corrupt object = %d bytes, %v; want ErrCorrupt", len(all), err)
	}
	c.Close()

	if err := h.Put(ctx, id, "document.pdf", data); err != nil {
		t.Fatal(err)
	}
	r, err := h.Open(ctx, id, "document.pdf")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := h.Put(ctx, id, "document.pdf", content(100_000, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(make([]byte, 10)); !errors.Is(err, ErrChanged) {
		t.Fatalf("first read of an object replaced since its HeadObject: %v, want ErrChanged", err)
	}
}
