package pictor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// TestBinary is where Build puts the binary, under the module's root;
// `make test` builds the same file before the tests start.
const TestBinary = "bin/test/pictor"

// Build builds cmd/pictor of the module that holds the working directory
// (a test's package directory) into TestBinary and returns its path. The
// test packages that run pictor as a process call it: the go command
// relinks the file only when a source changed, so a run of `make test`
// links pictor once, not once per package (a link is about 10 s of CPU).
// An advisory lock beside the file keeps two test processes from building
// it at once. The build happens once per process.
func Build() (string, error) { return buildOnce() }

var buildOnce = sync.OnceValues(build)

func build() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("build pictor: %w", err)
	}
	bin := filepath.Join(root, TestBinary)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", fmt.Errorf("build pictor: %w", err)
	}
	lock, err := os.OpenFile(bin+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", fmt.Errorf("build pictor: %w", err)
	}
	defer lock.Close() // and with it the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("build pictor: lock %s: %w", lock.Name(), err)
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/pictor")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/pictor: %w\n%s", err, out)
	}
	return bin, nil
}

// ModuleRoot is the directory of the main module's go.mod, as the go
// command finds it from the working directory (a test's package directory).
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("the working directory is in no module")
	}
	return filepath.Dir(mod), nil
}
