package pictor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// ModuleRoot walks up from the working directory (a test's package
// directory) to the directory that holds go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
