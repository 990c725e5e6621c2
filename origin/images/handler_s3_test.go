package images

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/rendition"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// s3Request is a request the S3 server got: its method, and its Range.
type s3Request struct{ method, rng string }

// countingS3 is a versitygw behind a reverse proxy on loopback that notes
// every request for an object key holding mark.
type countingS3 struct {
	srv  *s3test.Server
	url  string
	mu   sync.Mutex
	seen []s3Request
	mark string
}

func newCountingS3(t *testing.T) *countingS3 {
	t.Helper()
	c := &countingS3{srv: s3test.New(t)}
	target, err := url.Parse(c.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // signed by the client
	}}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		if c.mark != "" && strings.Contains(r.URL.Path, c.mark) {
			c.seen = append(c.seen, s3Request{method: r.Method, rng: r.Header.Get("Range")})
		}
		c.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	c.url = front.URL
	return c
}

// blobs opens the S3 store through the proxy.
func (c *countingS3) blobs(t *testing.T) blob.Blobs {
	t.Helper()
	cfg := blob.DefaultConfig()
	cfg.URL = "s3://" + c.srv.Bucket + "/images?endpoint=" + c.url + "&path_style=true&region=" + s3test.Region
	cfg.Credentials = credentials.NewStaticCredentialsProvider(s3test.AccessKeyID, s3test.SecretAccessKey, "")
	cfg.Timeout = 20 * time.Second
	b, err := blob.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// count starts noting the requests for mark's objects, forgetting those
// noted before.
func (c *countingS3) count(mark string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mark, c.seen = mark, nil
}

func (c *countingS3) requests() []s3Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen)
}

// TestServeS3RequestShapes: over the S3 store, the GET of an image asks
// S3 for what it sends and no more, counted by versitygw's proxy: a HEAD
// and a conditional GET (an existence check, the edge's revalidation)
// send one HeadObject and no GET; a Range of a PDF one HeadObject and one
// GET of that range; a plain GET one GET of the whole object, no
// HeadObject.
func TestServeS3RequestShapes(t *testing.T) {
	s3 := newCountingS3(t)
	b := s3.blobs(t)
	e := newEnv(t, func(c *rendition.Config) { c.Blobs = b })
	base := e.serveHTTP(e.handler())
	o := e.newOrg("pro")
	img := e.create(o, rendition.Item{Params: html("x")})
	master := testPNG(t, 64, 48, 5)
	etag := e.ready(img.ID, master).Renditions["png"].ETag
	pdf := bytes.Repeat([]byte("%PDF-1.4 bytes to serve in ranges\n"), 4000)
	if _, err := e.svc.Keep(context.Background(), img.ID, imageparams.FormatPDF, pdf, nil); err != nil {
		t.Fatal(err)
	}
	path := "/v1/image/" + img.ID

	tests := []struct {
		name   string
		method string
		path   string
		header map[string]string
		status int
		body   []byte
		want   []s3Request
	}{
		{name: "head", method: "HEAD", path: path, status: 200, body: []byte{},
			want: []s3Request{{method: "HEAD"}}},
		{name: "conditional get", method: "GET", path: path, header: map[string]string{"If-None-Match": etag}, status: 304, body: []byte{},
			want: []s3Request{{method: "HEAD"}}},
		{name: "range of a pdf", method: "GET", path: path + ".pdf", header: map[string]string{"Range": "bytes=1000-1099"}, status: 206,
			body: pdf[1000:1100], want: []s3Request{{method: "HEAD"}, {method: "GET", rng: "bytes=1000-1099"}}},
		{name: "suffix range of a pdf", method: "GET", path: path + ".pdf", header: map[string]string{"Range": "bytes=-10"}, status: 206,
			body: pdf[len(pdf)-10:], want: []s3Request{{method: "HEAD"}, {method: "GET", rng: "bytes=" + strconv.Itoa(len(pdf)-10) + "-"}}},
		{name: "head of a pdf", method: "HEAD", path: path + ".pdf", status: 200, body: []byte{},
			want: []s3Request{{method: "HEAD"}}},
		{name: "get", method: "GET", path: path, status: 200, body: master,
			want: []s3Request{{method: "GET"}}},
		{name: "get of a pdf", method: "GET", path: path + ".pdf", status: 200, body: pdf,
			want: []s3Request{{method: "GET"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s3.count(img.ID)
			r := apitest.Do(t, base, apitest.Request{Method: tt.method, Path: tt.path, Header: tt.header})
			apitest.WantStatus(t, r, tt.status)
			if !bytes.Equal(r.Body, tt.body) {
				t.Fatalf("body of %d bytes, want %d", len(r.Body), len(tt.body))
			}
			if got := s3.requests(); !slices.Equal(got, tt.want) {
				t.Fatalf("S3 requests %+v, want %+v", got, tt.want)
			}
		})
	}
}
