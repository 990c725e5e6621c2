package wasm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuestUpToDate rebuilds the guest with build.sh and fails if the
// embedded guest.wasm differs: run wasm/build.sh after changing
// wasm/guest or what it imports.
func TestGuestUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the guest")
	}
	out := filepath.Join(t.TempDir(), "guest.wasm")
	cmd := exec.Command("bash", "build.sh", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, b)
	}
	built, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, guestWasm) {
		t.Fatalf("wasm/guest.wasm is stale (%d bytes; a fresh build has %d): run wasm/build.sh", len(guestWasm), len(built))
	}
}

// TestGuestImports: the guest imports WASI only, and none of its socket
// functions (wazero gives it no files, sockets, environment or real
// clocks either way; see instanceConfig).
func TestGuestImports(t *testing.T) {
	mod := sharedEngine(t).guest.compiled // the guest as prepared: imports unchanged
	imports := mod.ImportedFunctions()
	if len(imports) == 0 {
		t.Fatal("no imports")
	}
	for _, f := range imports {
		module, name, _ := f.Import()
		if module != "wasi_snapshot_preview1" || strings.HasPrefix(name, "sock_") {
			t.Errorf("guest imports %s.%s", module, name)
		}
	}
	if len(mod.ImportedMemories()) != 0 {
		t.Error("guest imports a memory")
	}
}
