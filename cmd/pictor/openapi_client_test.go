package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// oapiCodegen is the generator `make test` installs (pinned in the Makefile).
const oapiCodegen = "../../.tools/oapi-codegen-v2.8.2/oapi-codegen"

// TestGeneratedClient runs the generated-client section of docs/clients.md
// against a running Pictor: its shell block fetches the document the edge
// serves and generates a Go client with oapi-codegen (pinned; `make test`
// installs it), and its program creates an image, lists the images and
// deletes it. The client is generated and built by the test, never
// committed; it builds offline, with GOPROXY=off, from the modules its
// committed go.mod names (testdata/openapiclient), which `make test-deps`
// downloads.
func TestGeneratedClient(t *testing.T) {
	gen, err := filepath.Abs(oapiCodegen)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(gen); err != nil {
		t.Fatalf("oapi-codegen is not installed (make test-deps installs it): %v", err)
	}
	const section = "## A client generated from the API description"
	generate := strings.Join(snippets(t, "docs/clients.md", section, "sh"), "\n")
	program := snippets(t, "docs/clients.md", section, "go")
	if len(program) != 1 {
		t.Fatalf("docs/clients.md has %d go blocks under %q, want the one program", len(program), section)
	}
	s := startServe(t, t.TempDir(), nil)

	dir := t.TempDir()
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", []byte(program[0]))
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
	environ := map[string]string{"PICTOR": s.URL, "API_ID": s.Owner.APIID, "API_KEY": s.Owner.APIKey}
	runScript(t, dir, generate, map[string]string{"PICTOR": s.URL, "PATH": filepath.Dir(gen) + ":" + os.Getenv("PATH")})

	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off")
	for k, v := range environ {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, stderr.String())
	}
	var id, url, deleted string
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "created":
			id, url = f[1], f[2]
		case len(f) == 2 && f[0] == "listed":
			listed = append(listed, f[1])
		case len(f) == 2 && f[0] == "deleted":
			deleted = f[1]
		default:
			t.Fatalf("unexpected line %q from the program:\n%s", line, out)
		}
	}
	if id == "" || url != s.URL+"/v1/image/"+id {
		t.Fatalf("create through the generated client: id %q url %q\n%s", id, url, out)
	}
	if len(listed) != 1 || listed[0] != id {
		t.Fatalf("list through the generated client: %v, want [%s]", listed, id)
	}
	if deleted != "202" {
		t.Fatalf("delete through the generated client: status %s", deleted)
	}
	apitest.WantError(t, apitest.Do(t, url, apitest.Request{Method: "GET"}), 404)
}
