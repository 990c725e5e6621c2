package apitest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// OpenFilesUnder counts this process's open descriptors whose file is
// under dir (read from /proc/self/fd): a test's check that a store keeps
// no file open, or no more than it should.
func OpenFilesUnder(t testing.TB, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, dir) {
			n++
		}
	}
	return n
}
