package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// oapiCodegen is the generator `make test` installs (pinned in the Makefile).
const oapiCodegen = "../../.tools/oapi-codegen-v2.8.2/oapi-codegen"

// clientProgram uses the client generated from the served document: it
// creates an image, lists the images, deletes one, and prints what it saw.
const clientProgram = `package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
)

func main() {
	ctx := context.Background()
	auth := WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.SetBasicAuth(os.Getenv("PICTOR_API_ID"), os.Getenv("PICTOR_API_KEY"))
		return nil
	})
	c, err := NewClientWithResponses(os.Getenv("PICTOR_URL"), auth)
	if err != nil {
		panic(err)
	}
	html, w, h, scale := "<div style=\"width:90px;height:40px;background:rgb(0,0,255)\"></div>", 90, 40, float32(1)
	out := map[string]any{}
	created, err := c.CreateImageWithResponse(ctx, CreateImageJSONRequestBody{Html: &html, ViewportWidth: &w, ViewportHeight: &h, DeviceScale: &scale})
	if err != nil {
		panic(err)
	}
	out["create_status"] = created.StatusCode()
	if created.JSON200 != nil {
		out["id"], out["url"] = created.JSON200.Id.String(), created.JSON200.Url
	}
	count := 50
	list, err := c.ListImagesWithResponse(ctx, &ListImagesParams{Count: &count})
	if err != nil {
		panic(err)
	}
	out["list_status"] = list.StatusCode()
	var ids []string
	if list.JSON200 != nil {
		for _, img := range list.JSON200.Images {
			ids = append(ids, img.Id.String())
		}
	}
	out["listed"] = ids
	if created.JSON200 != nil {
		del, err := c.DeleteImageWithResponse(ctx, created.JSON200.Id.String())
		if err != nil {
			panic(err)
		}
		out["delete_status"] = del.StatusCode()
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
`

// TestGeneratedClient generates a Go client from the document the edge
// serves with oapi-codegen (pinned; `make test` installs it) and uses it
// against a running Pictor: create an image, list the images, delete it.
// The client is generated and built by the test, never committed; it
// builds offline, with GOPROXY=off, from the modules its committed go.mod
// names (testdata/openapiclient), which `make test-deps` downloads.
func TestGeneratedClient(t *testing.T) {
	gen, err := filepath.Abs(oapiCodegen)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gen); err != nil {
		t.Fatalf("oapi-codegen is not installed (make test-deps installs it): %v", err)
	}
	s := startServe(t, t.TempDir(), nil)
	doc := apitest.Do(t, s.URL, apitest.Request{Method: "GET", Path: "/v1/openapi.json"})
	apitest.WantStatus(t, doc, 200)

	dir := t.TempDir()
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("openapi.json", doc.Body)
	write("main.go", []byte(clientProgram))
	// The client's module is committed (testdata/openapiclient): its go.mod
	// and go.sum name exactly what the generated code builds with, and
	// `make test-deps` downloads those modules, so the build needs neither
	// the network nor `go mod tidy` (which also wants the test dependencies
	// of every dependency, which no build needs).
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join("testdata", "openapiclient", name))
		if err != nil {
			t.Fatal(err)
		}
		write(name, b)
	}
	run := func(env []string, name string, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append([]string{"GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off"}, env...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	run(nil, gen, "-generate", "types,client", "-package", "main", "-o", "client.gen.go", "openapi.json")
	out := run([]string{"PICTOR_URL=" + s.URL, "PICTOR_API_ID=" + s.Owner.APIID, "PICTOR_API_KEY=" + s.Owner.APIKey}, "go", "run", ".")

	var res struct {
		CreateStatus int    `json:"create_status"`
		ID           string `json:"id"`
		URL          string `json:"url"`
		ListStatus   int    `json:"list_status"`
		Listed       []string
		DeleteStatus int `json:"delete_status"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("client output %s: %v", out, err)
	}
	if res.CreateStatus != 200 || res.ID == "" || res.URL != s.URL+"/v1/image/"+res.ID {
		t.Fatalf("create through the generated client: %+v", res)
	}
	if res.ListStatus != 200 || len(res.Listed) != 1 || res.Listed[0] != res.ID {
		t.Fatalf("list through the generated client: %+v", res)
	}
	if res.DeleteStatus != 202 {
		t.Fatalf("delete through the generated client: %+v", res)
	}
	apitest.WantError(t, apitest.Do(t, res.URL, apitest.Request{Method: "GET"}), 404)
}
