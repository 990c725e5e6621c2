package origin_test

import (
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// TestStorageDestinations drives the destination API through the whole
// origin against a real S3-compatible server (versitygw): a create runs
// the connection test and leaves its object in the bucket; a missing
// bucket or a wrong secret is a 400 in words and nothing is saved; the
// secret never comes back; a plan without delivery options is refused.
func TestStorageDestinations(t *testing.T) {
	s3 := s3test.New(t)
	o := startOrigin(t)
	conn := func(bucket, secret string) map[string]any {
		return map[string]any{"provider": "other_s3_compatible", "endpoint": s3.URL, "bucket": bucket, "key_prefix": "renders",
			"access_key_id": s3test.AccessKeyID, "secret_access_key": secret}
	}
	r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/storage-destinations", Creds: &o.Owner,
		JSON: map[string]any{"name": "bucket", "connection_info": conn(s3.Bucket, s3test.SecretAccessKey)}})
	apitest.WantStatus(t, r, 200)
	if strings.Contains(string(r.Body), s3test.SecretAccessKey) {
		t.Fatal("the answer holds the secret")
	}
	var d struct {
		ID                string
		LastTestSucceeded bool `json:"last_test_succeeded"`
	}
	r.Decode(t, &d)
	if !d.LastTestSucceeded {
		t.Fatalf("created %s", r.Body)
	}
	keys := s3.Keys(t, s3.Bucket, "renders/.hcti/connection-tests/")
	if len(keys) == 0 {
		t.Fatal("the connection test wrote nothing under renders/.hcti/connection-tests/")
	}

	for _, tc := range []struct {
		name, bucket, secret, want string
	}{
		{"missing bucket", "no-such-bucket", s3test.SecretAccessKey, "bucket"},
		{"wrong secret", s3.Bucket, "not-the-secret-0000", "secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/storage-destinations", Creds: &o.Owner,
				JSON: map[string]any{"name": tc.name, "connection_info": conn(tc.bucket, tc.secret)}})
			m := apitest.WantError(t, r, 400)
			apitest.WantMessage(t, m, tc.want)
			if strings.Contains(string(r.Body), tc.secret) {
				t.Fatal("the refusal holds the secret")
			}
		})
	}
	r = o.do(t, apitest.Request{Method: "GET", Path: "/v1/storage-destinations", Creds: &o.Owner})
	apitest.WantStatus(t, r, 200)
	var list struct{ Data []map[string]any }
	r.Decode(t, &list)
	if len(list.Data) != 1 {
		t.Fatalf("%d destinations listed, want only the one that passed its test", len(list.Data))
	}

	// The external id is stable.
	first := o.do(t, apitest.Request{Method: "GET", Path: "/v1/storage-destinations/aws-external-id", Creds: &o.Owner})
	apitest.WantStatus(t, first, 200)
	if again := o.do(t, apitest.Request{Method: "GET", Path: "/v1/storage-destinations/aws-external-id", Creds: &o.Owner}); string(again.Body) != string(first.Body) {
		t.Fatalf("external id changed: %s then %s", first.Body, again.Body)
	}
	_, free := o.newOrg(t.Context(), t, "basic")
	apitest.WantMessage(t, apitest.WantError(t, o.do(t, apitest.Request{Method: "GET", Path: "/v1/storage-destinations", Creds: &free}), 403), "pro plan")
}
