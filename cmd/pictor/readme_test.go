package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeListsEveryPackage keeps the README's layout table whole: every
// package of the module has a row naming it, and every package a row names
// exists.
func TestReadmeListsEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/pictorhq/pictor"
	pkgs := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if rel == "" {
			continue
		}
		pkgs[rel] = true
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list named only %d packages", len(pkgs))
	}

	// The rows of the table under "| path | what |".
	text := string(readme)
	start := strings.Index(text, "| path | what |")
	if start < 0 {
		t.Fatal("README has no layout table (| path | what |)")
	}
	table := text[start:]
	if end := strings.Index(table, "\n\n"); end >= 0 {
		table = table[:end]
	}
	named := map[string]bool{}
	cell := regexp.MustCompile("`([a-z0-9/_-]+?)/?`")
	for _, row := range strings.Split(table, "\n")[2:] {
		cols := strings.Split(row, "|")
		if len(cols) < 3 {
			t.Fatalf("malformed row %q", row)
		}
		for _, m := range cell.FindAllStringSubmatch(cols[1], -1) {
			named[m[1]] = true
		}
	}
	for p := range pkgs {
		if !named[p] {
			t.Errorf("package %s has no row in the README's layout table", p)
		}
	}
	for p := range named {
		if pkgs[p] {
			continue
		}
		if fi, err := os.Stat(filepath.Join(root, p)); err != nil || !fi.IsDir() {
			t.Errorf("the README's layout table names %s, which is not a directory of the module", p)
		}
	}
}
