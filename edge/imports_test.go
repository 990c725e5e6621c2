package edge

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyTheContract keeps the tiers apart: the edge, its packages
// and their tests may import of the origin only what lies under
// origin/contract/ (see that package's documentation).
func TestImportsOnlyTheContract(t *testing.T) {
	const module = "github.com/pictorhq/pictor/"
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list named no packages")
	}
	var contract int
	for _, p := range deps {
		rest, ok := strings.CutPrefix(p, module+"origin")
		if !ok || (rest != "" && rest[0] != '/') {
			continue
		}
		if rest == "/contract" || strings.HasPrefix(rest, "/contract/") {
			contract++
			continue
		}
		t.Errorf("the edge depends on %s, outside origin/contract/", p)
	}
	if contract == 0 {
		t.Fatal("the edge imports nothing of origin/contract: the test no longer sees the edge's imports")
	}
}

// TestOriginImportsNoEdge is the reverse rule: no package under origin/,
// nor its in-package tests, depends on anything under edge/; what both
// tiers share lives in origin/contract/. The origin's external test
// packages (origin_test) may start a real edge to test the two end to end.
func TestOriginImportsNoEdge(t *testing.T) {
	const module = "github.com/pictorhq/pictor/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}} {{join .TestImports " "}}`, module+"origin/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		t.Fatalf("go list named %d packages under origin/", len(lines))
	}
	var contract int
	for _, line := range lines {
		pkg, deps, _ := strings.Cut(line, " ")
		for _, p := range strings.Fields(deps) {
			if strings.HasPrefix(p, module+"origin/contract/") {
				contract++
			}
			if p == module+"edge" || strings.HasPrefix(p, module+"edge/") {
				t.Errorf("%s depends on %s, under edge/", pkg, p)
			}
		}
	}
	if contract == 0 {
		t.Fatal("the origin depends on nothing of origin/contract: the test no longer sees the origin's imports")
	}
}
