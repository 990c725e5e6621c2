package storage_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/storage"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// TestSecretsNeverLogged runs writes and tests that succeed and fail,
// with debug logs captured, and looks for every secret in the logs, the
// errors and their descriptions.
func TestSecretsNeverLogged(t *testing.T) {
	gw := s3test.New(t)
	const token = "FwoGZXIvYXdzSESSIONTOKENSECRET"
	sts := newFakeSTS(t, s3test.AccessKeyID, s3test.SecretAccessKey, "")
	html := newStub(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte("<html>no</html>"))
	})
	secrets := []string{s3test.SecretAccessKey, serviceSecret, token, "stub-secret-access-key", testExternal}

	var logs logBuffer
	c := newConnector(t, testConfig(&logs))
	ca := newConnector(t, awsConfig(&logs, sts, gw)) // aws_s3, its S3 requests to gw
	var errs []error
	record := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	ctx := context.Background()
	conn := gwConnection(gw)
	record(c.Test(ctx, conn))
	w, err := c.Open(conn)
	if err != nil {
		t.Fatal(err)
	}
	record(w.Put(ctx, w.Key("a.png"), bytes.NewReader([]byte("x")), 1, "image/png"))

	bad := conn
	bad.SecretAccessKey = "wrong-" + s3test.SecretAccessKey
	record(c.Test(ctx, bad))
	bw, err := c.Open(bad)
	if err != nil {
		t.Fatal(err)
	}
	record(bw.Put(ctx, bw.Key("b.png"), strings.NewReader("xyz"), 3, "image/png"))

	record(ca.Test(ctx, awsConnection(gw.Bucket)))
	wrongExt := awsConnection(gw.Bucket)
	wrongExt.ExternalID = "pictor-someone-else"
	record(ca.Test(ctx, wrongExt))
	sts.token = token
	record(ca.Test(ctx, awsConnection(gw.Bucket)))

	record(c.Test(ctx, stubConnection(html.URL)))

	gw.Stop() // retries, logged
	record(c.Test(ctx, conn))

	if len(errs) < 5 {
		t.Fatalf("only %d failures: the scenarios did not fail as planned: %v", len(errs), errs)
	}
	text := logs.String()
	if !strings.Contains(text, "storage connection test failed") || !strings.Contains(text, "retrying request") || !strings.Contains(text, "storage write") {
		t.Fatalf("debug logs missing, the check would prove nothing:\n%s", text)
	}
	for _, err := range errs {
		text += "\n" + err.Error() + "\n" + storage.Describe(err)
	}
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("secret %q appears in logs or errors:\n%s", s, text)
		}
	}
}
