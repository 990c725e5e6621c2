package edge

import (
	"bufio"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
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

	found := map[string][]string{} // package directory (as ./dir) → its race-free tests
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		tests, raceFree := raceFreeTests(t, path)
		if !raceFree {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir := "./" + filepath.ToSlash(rel)
		found[dir] = append(found[dir], tests...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found["./edge"]) == 0 {
		t.Fatal("found no race-free test in the edge, which has some: the walk no longer sees them")
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

// raceFreeTests reports whether the test file builds only without the race
// detector, and the Test functions it declares.
func raceFreeTests(t *testing.T, path string) ([]string, bool) {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var expr constraint.Expr
	for _, g := range file.Comments {
		if g.Pos() >= file.Package {
			break
		}
		for _, c := range g.List {
			if constraint.IsGoBuild(c.Text) {
				if expr, err = constraint.Parse(c.Text); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
			}
		}
	}
	// Race-free: it builds without the race detector (whatever else it
	// asks of the platform), and not with it.
	if expr == nil || !expr.Eval(func(tag string) bool { return tag != "race" }) || expr.Eval(func(string) bool { return true }) {
		return nil, false
	}
	var tests []string
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
			tests = append(tests, fn.Name.Name)
		}
	}
	return tests, true
}
