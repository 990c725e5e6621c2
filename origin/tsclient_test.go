package origin_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestOfficialTypeScriptClient drives @html-css-to-image/client 0.9.0 (npm,
// pinned in testdata/tsclient; `make test` installs it) against this server:
// createImage, createImageBatch, generateCreateAndRenderUrl, deleteImage and
// deleteImageBatch.
func TestOfficialTypeScriptClient(t *testing.T) {
	if _, err := os.Stat("testdata/tsclient/node_modules/@html-css-to-image/client/package.json"); err != nil {
		t.Fatalf("the client is not installed (make test-deps runs npm ci in origin/testdata/tsclient): %v", err)
	}
	o := startOrigin(t)
	site := newSite(t, map[string]string{"/": doc(`<div style="height:150px;background:rgb(0,0,255)"></div>`)})
	cmd := exec.Command("node", "run.mjs")
	cmd.Dir = "testdata/tsclient"
	cmd.Env = append(os.Environ(), "PICTOR_BASE="+o.URL, "PICTOR_API_ID="+o.Owner.APIID, "PICTOR_API_KEY="+o.Owner.APIKey, "PICTOR_SITE="+site.URL+"/")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var res struct {
		Create struct {
			Success bool
			URL, ID string
		}
		Batch struct {
			Success bool
			Images  []struct{ URL, ID string }
		}
		SignedURL string `json:"signedUrl"`
		Signed    struct {
			Status int
			Type   string
			Bytes  string
		}
		DeleteOne, DeleteBatch, DeleteMissing struct {
			Success    bool
			StatusCode int
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("client output: %v\n%s", err, out)
	}
	if !res.Create.Success || res.Create.URL != o.URL+"/v1/image/"+res.Create.ID {
		t.Fatalf("createImage: %+v", res.Create)
	}
	if !res.Batch.Success || len(res.Batch.Images) != 2 {
		t.Fatalf("createImageBatch: %+v", res.Batch)
	}
	if !strings.HasPrefix(res.SignedURL, o.URL+"/v1/image/create-and-render/"+o.Owner.APIID+"/") {
		t.Fatalf("signed URL %s", res.SignedURL)
	}
	raw, _ := base64.StdEncoding.DecodeString(res.Signed.Bytes)
	signed := apitest.DecodeImage(t, &apitest.Response{Status: res.Signed.Status, Header: http.Header{"Content-Type": {res.Signed.Type}}, Body: raw})
	apitest.WantSize(t, signed, 300, 150)
	apitest.WantPixel(t, signed, 150, 75, blue, 3)
	if !res.DeleteOne.Success || !res.DeleteBatch.Success || res.DeleteMissing.Success {
		t.Fatalf("deletes: one %+v batch %+v missing %+v", res.DeleteOne, res.DeleteBatch, res.DeleteMissing)
	}
	// The images the client created render as asked, and are gone after its deletes.
	for _, u := range []string{res.Create.URL, res.Batch.Images[0].URL, res.Batch.Images[1].URL} {
		apitest.WantError(t, o.get(t, u), 404)
	}
}
