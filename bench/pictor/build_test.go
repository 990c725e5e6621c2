package pictor

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuild: Build puts a working binary at TestBinary under the module's
// root, and building again without a change in the sources does not link
// it again: the packages that call Build share one link.
func TestBuild(t *testing.T) {
	bin, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, TestBinary); bin != want {
		t.Fatalf("Build() = %s, want %s", bin, want)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "pictor ") {
		t.Fatalf("%s version: %v, %q", bin, err, out)
	}
	// The same command again, printing what it runs (-x does not change
	// what the go command considers up to date): no link.
	cmd := exec.Command("go", "build", "-x", "-o", bin, "./cmd/pictor")
	cmd.Dir = root
	trace, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -x: %v\n%s", err, trace)
	}
	for _, line := range strings.Split(string(trace), "\n") {
		f := strings.Fields(line)
		for len(f) > 0 && strings.Contains(f[0], "=") { // GOROOT='...' before the tool
			f = f[1:]
		}
		if len(f) > 0 && filepath.Base(f[0]) == "link" {
			t.Fatalf("a second build with no change linked pictor again:\n%s", line)
		}
	}
}
