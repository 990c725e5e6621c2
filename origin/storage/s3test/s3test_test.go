package s3test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestMissingBinaryFailsClearly: without the binary the harness says how
// to install it (it fails the test; it never skips).
func TestMissingBinaryFailsClearly(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	_, err := findBinary()
	if err == nil || !strings.Contains(err.Error(), "make test-deps") || !strings.Contains(err.Error(), filepath.Join(dir, Binary)) {
		t.Fatalf("findBinary() = %v, want an error naming %s and make test-deps", err, filepath.Join(dir, Binary))
	}
}

func TestStopAndStartKeepObjects(t *testing.T) {
	s := New(t)
	s.CreateBucket(t, "second")
	if _, err := s.Client().PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String("second"), Key: aws.String("k"), Body: strings.NewReader("kept"), ContentType: aws.String("text/plain"),
	}); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	s.Stop() // twice is fine
	if _, err := s.Client().ListBuckets(context.Background(), &s3.ListBucketsInput{}); err == nil {
		t.Fatal("the stopped server answered")
	}
	s.Start()
	if got := s.Get(t, "second", "k"); string(got.Body) != "kept" || got.ContentType != "text/plain" {
		t.Fatalf("after restart: %q %q", got.Body, got.ContentType)
	}
}
