package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Binary is where versitygw is installed, relative to the module root.
const Binary = ".tools/versitygw-v1.8.0/versitygw"

// Root credentials of every server, and its region.
const (
	AccessKeyID     = "PICTORTESTROOTKEY"
	SecretAccessKey = "pictor-test-root-secret-0123456789abcdef"
	Region          = "us-east-1"
)

// DefaultBucket is the bucket New creates.
const DefaultBucket = "pictor-test"

// healthPath is the path versitygw answers 200 on (--health).
const healthPath = "/health"

// Server is a running versitygw.
type Server struct {
	// URL is the S3 endpoint, http://127.0.0.1:<port>.
	URL string
	// Bucket is the bucket created at start.
	Bucket string
	// Dir is the posix backend's root: one directory per bucket.
	Dir string

	t    testing.TB
	bin  string
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	out  *tailBuffer
}

// New starts versitygw over t.TempDir() on a free loopback port, waits
// until it answers, creates DefaultBucket, and stops the server when t
// ends. It fails t (never skips) when the binary is missing.
func New(t testing.TB) *Server {
	t.Helper()
	bin, err := findBinary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Bucket: DefaultBucket, Dir: t.TempDir(), t: t, bin: bin, out: &tailBuffer{max: 64 << 10}}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("versitygw output (last %d bytes):\n%s", s.out.max, s.out.String())
		}
	})
	// A port found free may be taken before versitygw binds it: try a few.
	for attempt := 0; ; attempt++ {
		s.port, err = freePort()
		if err != nil {
			t.Fatalf("s3test: find a free port: %v", err)
		}
		s.URL = "http://127.0.0.1:" + strconv.Itoa(s.port)
		if err = s.start(); err == nil {
			break
		}
		if attempt == 2 {
			t.Fatalf("s3test: %v", err)
		}
	}
	s.CreateBucket(t, s.Bucket)
	return s
}

// Start starts a stopped server again, on the same port and directory
// (its buckets and objects are kept).
func (s *Server) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatalf("s3test: restart: %v", err)
	}
}

// Stop stops the server (SIGTERM, then SIGKILL after 5 s); requests then
// find the port closed. It is safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// start runs versitygw and waits until it answers its health check.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("already running")
	}
	cmd := exec.Command(s.bin,
		"--port", "127.0.0.1:"+strconv.Itoa(s.port),
		"--access", AccessKeyID,
		"--secret", SecretAccessKey,
		"--region", Region,
		"--health", healthPath,
		"posix", s.Dir,
	)
	// The root credentials go by flag, not environment: nothing of the
	// test process's AWS_* settings reaches the server.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.Dir}
	cmd.Stdout = s.out
	cmd.Stderr = s.out
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()

	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := client.Get(s.URL + healthPath)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.cmd, s.done = cmd, done
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("versitygw exited before answering on %s:\n%s", s.URL, s.out.String())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("versitygw did not answer on %s within 30s:\n%s", s.URL, s.out.String())
		}
	}
}

// Client is an S3 client of the server with its root credentials, path
// style, without the SDK's default checksums.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:                     Region,
		BaseEndpoint:               aws.String(s.URL),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// CreateBucket creates bucket.
func (s *Server) CreateBucket(t testing.TB, bucket string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("s3test: create bucket %s: %v", bucket, err)
	}
}

// Object is an object as read back.
type Object struct {
	Body        []byte
	ContentType string
}

// Get reads the object key of bucket, failing t if it cannot.
func (s *Server) Get(t testing.TB, bucket, key string) Object {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := s.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("s3test: get %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("s3test: read %s/%s: %v", bucket, key, err)
	}
	return Object{Body: body, ContentType: aws.ToString(out.ContentType)}
}

// Open opens the object key of bucket for reading, failing t if it
// cannot; the caller closes it.
func (s *Server) Open(t testing.TB, bucket, key string) io.ReadCloser {
	t.Helper()
	out, err := s.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("s3test: get %s/%s: %v", bucket, key, err)
	}
	return out.Body
}

// Keys lists the keys of bucket under prefix.
func (s *Server) Keys(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("s3test: list %s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// MultipartUploads lists the multipart uploads in progress in bucket.
func (s *Server) MultipartUploads(t testing.TB, bucket string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := s.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("s3test: list multipart uploads of %s: %v", bucket, err)
	}
	var ids []string
	for _, u := range out.Uploads {
		ids = append(ids, aws.ToString(u.Key)+" "+aws.ToString(u.UploadId))
	}
	return ids
}

// findBinary finds versitygw under the module root.
func findBinary() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("s3test: %w", err)
	}
	bin := filepath.Join(root, Binary)
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("s3test: versitygw is not installed at %s: `make test-deps` installs it", bin)
	}
	return bin, nil
}

// moduleRoot walks up from the working directory (a test's package
// directory) to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// freePort is a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
