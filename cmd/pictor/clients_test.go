package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// tsClient is the official TypeScript client fixture (npm, pinned; `make
// test` installs it).
const tsClient = "../../origin/testdata/tsclient"

// TestClientsDocTypeScript runs the TypeScript example of docs/clients.md
// with the official client against `pictor serve`: the image it creates,
// the template it renders and both signed URLs it prints are Pictor's and
// serve the images asked for.
func TestClientsDocTypeScript(t *testing.T) {
	modules, err := filepath.Abs(filepath.Join(tsClient, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "@html-css-to-image/client/package.json")); err != nil {
		t.Fatalf("the client is not installed (make test-deps runs npm ci in origin/testdata/tsclient): %v", err)
	}
	example := snippets(t, "docs/clients.md", "## The official TypeScript client", "js")
	if len(example) != 1 {
		t.Fatalf("docs/clients.md has %d js blocks for the TypeScript client, want one program", len(example))
	}
	s := startServe(t, t.TempDir(), nil)
	// The page the signed create-and-render URL shows: a green band.
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<!doctype html><body style="margin:0"><div style="height:315px;background:rgb(0,160,0)"></div>`)
	}))
	t.Cleanup(page.Close)
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/template", Creds: &s.Owner, JSON: map[string]any{
		"name": "Blog card",
		"html": `<div class="card"><h1>{{title}}</h1><p>by {{author}}</p></div>`,
		"css":  ".card { width: 600px; height: 315px; padding: 40px; box-sizing: border-box; background: rgb(15, 23, 42); color: white }",
	}})
	apitest.WantStatus(t, r, 201)
	templateID, _ := r.Object(t)["template_id"].(string)

	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "example.mjs"), []byte(example[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "example.mjs")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "PICTOR=" + s.URL,
		"API_ID=" + s.Owner.APIID, "API_KEY=" + s.Owner.APIKey, "TEMPLATE=" + templateID, "PAGE_URL=" + page.URL + "/"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node example.mjs: %v\n%s", err, stderr.String())
	}
	urls := strings.Fields(string(out))
	if len(urls) != 4 {
		t.Fatalf("the example printed %q, want four URLs", out)
	}
	for _, u := range urls {
		if !strings.HasPrefix(u, s.URL+"/v1/image/") {
			t.Fatalf("the example printed %s, not a URL of this Pictor (%s)", u, s.URL)
		}
	}
	if !strings.HasPrefix(urls[3], s.URL+"/v1/image/create-and-render/"+s.Owner.APIID+"/") {
		t.Fatalf("create-and-render URL %s", urls[3])
	}
	get := func(u string) *apitest.Response { return apitest.Do(t, u, apitest.Request{Method: "GET"}) }

	card := apitest.DecodeImage(t, get(urls[0]))
	apitest.WantSize(t, card, 1200, 630)
	apitest.WantPixel(t, card, 10, 10, color.NRGBA{0x4f, 0x46, 0xe5, 0xff}, 2)

	// The rendered template and its signed URL: one card, the same pixels.
	navy := color.NRGBA{15, 23, 42, 255}
	rendered := get(urls[1])
	for _, res := range []*apitest.Response{rendered, get(urls[2])} {
		img := apitest.DecodeImage(t, res)
		apitest.WantSize(t, img, 1200, 630)
		apitest.WantPixel(t, img, 1190, 620, navy, 2)
		if !hasLight(img, 0, 0, 1200, 200) {
			t.Error("the template's title is not drawn")
		}
	}
	if signed := get(urls[2]); !bytes.Equal(signed.Body, rendered.Body) {
		t.Error("the signed template URL and createImage with the same values differ")
	}

	// A URL render: the 600×315 viewport at scale 1, URL renders' default.
	shot := apitest.DecodeImage(t, get(urls[3]))
	apitest.WantSize(t, shot, 600, 315)
	apitest.WantPixel(t, shot, 300, 150, color.NRGBA{0, 160, 0, 255}, 2)
}

// docMCPURL is the MCP endpoint of docs/clients.md's configuration, with
// base in place of its example host.
func docMCPURL(t *testing.T, base string) string {
	t.Helper()
	blocks := snippets(t, "docs/clients.md", "## AI assistants (MCP)", "json")
	var cfg struct {
		MCPServers map[string]struct {
			URL string `json:"url"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(blocks[0]), &cfg); err != nil {
		t.Fatalf("docs/clients.md's MCP configuration: %v", err)
	}
	server, ok := cfg.MCPServers["pictor"]
	const host = "https://img.example.com"
	if !ok || !strings.HasPrefix(server.URL, host+"/") {
		t.Fatalf("docs/clients.md's MCP configuration %+v: want a pictor server at %s/...", cfg, host)
	}
	return base + strings.TrimPrefix(server.URL, host)
}
