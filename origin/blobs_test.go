package origin_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// TestMastersOnS3 runs an origin whose masters live in a real S3-compatible
// server (--blobs s3://...): a render's master is an object in the bucket,
// nothing of it is in the data directory, GET serves it and its
// renditions, a delete removes the objects, and with the server stopped a GET
// is a 503 with Retry-After, never a 500.
func TestMastersOnS3(t *testing.T) {
	s3 := s3test.New(t)
	o := startOrigin(t, func(c *origin.Config) {
		c.CompactIdle = -1
		c.Blobs.URL = "s3://" + s3.Bucket + "/masters?endpoint=" + s3.URL + "&region=us-east-1&path_style=true"
		c.Blobs.Credentials = credentials.NewStaticCredentialsProvider(s3test.AccessKeyID, s3test.SecretAccessKey, "")
	})
	id, u := o.create(t, o.Owner, map[string]any{"html": redBox, "device_scale": 1})
	r := o.get(t, u)
	apitest.WantSize(t, apitest.DecodeImage(t, r), 400, 200)
	// The first GET may be answered while the master is being stored; a
	// rendition is made from the stored master, so after it both are
	// objects.
	jpg := o.get(t, u+".jpg")
	apitest.WantStatus(t, jpg, 200)
	keys := s3.Keys(t, s3.Bucket, "masters/")
	if n := 0; !slices.ContainsFunc(keys, func(k string) bool {
		if filepath.Base(filepath.Dir(k)) == id {
			n++
		}
		return n == 2
	}) {
		t.Fatalf("want the master and the JPEG rendition of image %s in the bucket: %v", id, keys)
	}
	if f, _ := filepath.Glob(filepath.Join(o.DataDir, "images", "*", id, "*")); len(f) > 0 {
		t.Fatalf("files of the image in the data directory: %v", f)
	}

	other, otherURL := o.create(t, o.Owner, map[string]any{"html": redBox + "<p>two</p>", "device_scale": 1})
	apitest.WantStatus(t, o.get(t, otherURL), 200)
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/" + other, Creds: &o.Owner}), 202)
	for _, k := range s3.Keys(t, s3.Bucket, "masters/") {
		if filepath.Base(filepath.Dir(k)) == other {
			t.Fatalf("object %s of a deleted image is still in the bucket", k)
		}
	}

	s3.Stop()
	down := o.get(t, u)
	m := apitest.WantError(t, down, 503)
	apitest.WantMessage(t, m, "unavailable")
	if down.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
}
