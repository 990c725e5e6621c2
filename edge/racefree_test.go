package edge

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRaceFreePassRunsEveryRaceFreeTest: the tests built only without the
// race detector (a `//go:build !race` test file) run nowhere but in `make
// test`'s race-free pass, which runs the Makefile's RACE_FREE_RUN pattern
// over its RACE_FREE_PKGS. Every such test must match the pattern and its
// package be listed, or it would never run; and every listed package must
// have one, or the pass links it for nothing.
func TestRaceFreePassRunsEveryRaceFreeTest(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	vars := makeVariables(t, filepath.Join(root, "Makefile"))
	pattern, err := regexp.Compile(vars["RACE_FREE_RUN"])
	if err != nil || vars["RACE_FREE_RUN"] == "" {
		t.Fatalf("the Makefile's RACE_FREE_RUN %q is no pattern: %v", vars["RACE_FREE_RUN"], err)
	}
	listed := strings.Fields(vars["RACE_FREE_PKGS"])
	if len(listed) == 0 {
		t.Fatal("the Makefile lists no RACE_FREE_PKGS")
	}

	// The go command decides which files a build takes: a race-free test
	// file is one it lists without -race and not with it.
	plain, raced := testFiles(t, root), testFiles(t, root, "-race")
	found := map[string][]string{} // package directory (as ./dir) → its race-free tests
	for file, dir := range plain {
		if _, ok := raced[file]; !ok {
			found[dir] = append(found[dir], testFuncs(t, file)...)
		}
	}
	if len(found["./edge"]) == 0 {
		t.Fatal("found no race-free test in the edge, which has some: the listing no longer sees them")
	}
	for dir, tests := range found {
		if !slices.Contains(listed, dir) {
			t.Errorf("%s has race-free tests %v, but the Makefile's RACE_FREE_PKGS %v does not list it: they never run", dir, tests, listed)
		}
		for _, name := range tests {
			if !pattern.MatchString(name) {
				t.Errorf("%s's race-free %s does not match RACE_FREE_RUN %q: it never runs", dir, name, pattern)
			}
		}
	}
	for _, dir := range listed {
		if len(found[dir]) == 0 {
			t.Errorf("RACE_FREE_PKGS lists %s, which has no race-free test", dir)
		}
	}
}

// makeVariables reads the simple `NAME := value` assignments of a Makefile.
func makeVariables(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	assignment := regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*:=\s*(.*)$`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := assignment.FindStringSubmatch(sc.Text()); m != nil {
			vars[m[1]] = strings.TrimSpace(m[2])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vars
}

// testFiles lists the module's test files (by path) that a build with
// flags takes, each with its package directory (as ./dir).
func testFiles(t *testing.T, root string, flags ...string) map[string]string {
	t.Helper()
	args := append(append([]string{"list"}, flags...), "-f", `{{$d := .Dir}}{{range .TestGoFiles}}{{$d}} {{.}}
{{end}}{{range .XTestGoFiles}}{{$d}} {{.}}
{{end}}`, "./...")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(flags, " "), err)
	}
	files := map[string]string{}
	for line := range strings.Lines(string(out)) {
		dir, name, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Join(dir, name)] = "./" + filepath.ToSlash(rel)
	}
	if len(files) == 0 {
		t.Fatalf("go list %s named no test files", strings.Join(flags, " "))
	}
	return files
}

// testFuncs returns the Test functions a test file declares.
func testFuncs(t *testing.T, path string) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var tests []string
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
			tests = append(tests, fn.Name.Name)
		}
	}
	return tests
}
