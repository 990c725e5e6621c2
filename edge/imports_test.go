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
