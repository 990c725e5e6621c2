package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWritesThenChecks drives the program as `make console-assets`
// and `-check` do: a fresh build passes the check, and after a source
// changes the check fails naming the files that are now stale.
func TestRunWritesThenChecks(t *testing.T) {
	web := t.TempDir()
	dist := filepath.Join(t.TempDir(), "dist")
	if err := os.MkdirAll(filepath.Join(web, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(web, "src", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("console.js", "document.title = 'a';\n")
	write("console.css", "body { margin: 0; }\n")
	args := []string{"-web", web, "-dist", dist}

	var out bytes.Buffer
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatalf("build: %v", err)
	}
	if !strings.Contains(out.String(), "manifest.json") {
		t.Errorf("build printed %q, want the files it wrote", out.String())
	}
	if err := run(context.Background(), append([]string{"-check"}, args...), &out); err != nil {
		t.Fatalf("check right after the build: %v", err)
	}

	write("console.css", "body { margin: 1px; }\n")
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var oldCSS string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".css") {
			oldCSS = e.Name()
		}
	}
	err = run(context.Background(), append([]string{"-check"}, args...), &out)
	if err == nil || !strings.Contains(err.Error(), oldCSS+" is stale") || !strings.Contains(err.Error(), "manifest.json differs") {
		t.Fatalf("check after a source change: %v, want it to name %s and the manifest", err, oldCSS)
	}
	if _, statErr := os.Stat(filepath.Join(dist, oldCSS)); statErr != nil {
		t.Fatalf("-check changed the output directory: %v", statErr)
	}
}
