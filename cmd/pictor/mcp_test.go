package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// mcpClient is the official MCP TypeScript SDK fixture (npm, pinned;
// `make test` installs it).
const mcpClient = "../../origin/testdata/mcpclient"

// runMCPClient runs the fixture in mode against the MCP endpoint url,
// signing in on the consent page with creds, and decodes what it printed.
func runMCPClient(t *testing.T, mode, url, state string, creds apitest.Creds, out any) {
	t.Helper()
	cmd := exec.Command("node", "run.mjs")
	cmd.Dir = mcpClient
	cmd.Env = append(os.Environ(), "PICTOR_MODE="+mode, "PICTOR_MCP="+url, "PICTOR_STATE="+state,
		"PICTOR_API_ID="+creds.APIID, "PICTOR_API_KEY="+creds.APIKey)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node run.mjs (%s): %v\n%s", mode, err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("fixture output: %v\n%s\n%s", err, stdout, stderr.String())
	}
}

// TestMCPWithTheTypeScriptSDK connects the official MCP TypeScript SDK to
// `pictor serve` through the edge, at the URL docs/clients.md configures,
// as an AI assistant would: it discovers
// the authorization server, registers itself, sends the person to the
// consent page (answered with an API key's credentials, every offered
// permission approved), exchanges the code with PKCE, refreshes its token
// and calls create_image, whose URL then serves a PNG. Disabling the key
// cuts the connection: the next run with the same tokens is sent back to
// the consent page.
func TestMCPWithTheTypeScriptSDK(t *testing.T) {
	if _, err := os.Stat(filepath.Join(mcpClient, "node_modules/@modelcontextprotocol/sdk/package.json")); err != nil {
		t.Fatalf("the MCP SDK is not installed (make test-deps runs npm ci in origin/testdata/mcpclient): %v", err)
	}
	s := startServe(t, t.TempDir(), nil)
	// The endpoint announced is the one docs/clients.md configures.
	if doc := docMCPURL(t, s.URL); s.MCPURL != doc {
		t.Fatalf("announced MCP endpoint %q, docs/clients.md configures %s", s.MCPURL, doc)
	}
	r := s.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &s.Owner, JSON: map[string]any{
		"name": "assistant", "permissions": []string{"images:create", "images:read", "usage:read", "templates:read"}}})
	apitest.WantStatus(t, r, 200)
	var key struct {
		ID     string `json:"id"`
		APIID  string `json:"api_id"`
		APIKey string `json:"api_key"`
	}
	r.Decode(t, &key)
	creds := apitest.Creds{APIID: key.APIID, APIKey: key.APIKey}
	state := filepath.Join(t.TempDir(), "state.json")

	var first struct {
		Authorization map[string]string
		Consent       struct {
			StateEchoed  bool
			RedirectedTo string
		}
		Client struct {
			ID        string
			HasSecret bool
		}
		Tools   []string
		Created struct {
			IsError    bool
			Structured struct{ URL, ID string }
			Text       string
		}
		Refresh struct {
			Result  string
			Rotated bool
		}
		Usage struct {
			IsError    bool
			Structured struct {
				ImagesUsed int `json:"images_used"`
			}
			Text string
		}
	}
	runMCPClient(t, "connect", s.MCPURL, state, creds, &first)
	a := first.Authorization
	if a["code_challenge_method"] != "S256" || a["code_challenge"] == "" || a["resource"] != s.MCPURL || a["response_type"] != "code" {
		t.Fatalf("authorization request %v: want PKCE S256 and the resource %s", a, s.MCPURL)
	}
	if !first.Consent.StateEchoed || first.Consent.RedirectedTo != "http://127.0.0.1:49152/callback" || first.Client.ID == "" || first.Client.HasSecret {
		t.Fatalf("consent and registration: %+v %+v", first.Consent, first.Client)
	}
	for _, tool := range []string{"create_image", "create_url_image", "create_templated_image", "create_batch_images", "check_usage", "list_templates"} {
		if !slices.Contains(first.Tools, tool) {
			t.Errorf("tools/list lacks %s: %v", tool, first.Tools)
		}
	}
	for _, tool := range first.Tools {
		if strings.Contains(tool, "api_key") {
			t.Errorf("an API-key tool is offered: %s", tool)
		}
	}
	c := first.Created
	if c.IsError || c.Structured.ID == "" || c.Structured.URL != s.URL+"/v1/image/"+c.Structured.ID {
		t.Fatalf("create_image: %+v", c)
	}
	img := apitest.DecodeImage(t, apitest.Do(t, c.Structured.URL, apitest.Request{Method: "GET"}))
	apitest.WantSize(t, img, 120, 60)
	if p := apitest.Pixel(img, 60, 30); p.R < 240 || p.G > 15 || p.B > 15 {
		t.Fatalf("the image shows %v, want the red box", p)
	}
	if first.Refresh.Result != "AUTHORIZED" || !first.Refresh.Rotated {
		t.Fatalf("refresh: %+v", first.Refresh)
	}
	if first.Usage.IsError || first.Usage.Structured.ImagesUsed != 1 {
		t.Fatalf("check_usage after the refresh: %+v", first.Usage)
	}

	// Disabling the approving key cuts the connection at once.
	apitest.WantStatus(t, s.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + key.ID, Creds: &s.Owner}), 204)
	var again struct {
		Again struct {
			Connected, Unauthorized, SentToConsent bool
			Message                                string
		}
	}
	runMCPClient(t, "again", s.MCPURL, state, creds, &again)
	if again.Again.Connected || !again.Again.Unauthorized || !again.Again.SentToConsent {
		t.Fatalf("after disabling the key: %+v", again.Again)
	}
}
