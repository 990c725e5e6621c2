package pebblekv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/kvtest"
)

func openMem(t *testing.T, fs vfs.FS) *Store {
	t.Helper()
	s, err := Open("db", Options{FS: fs})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

func collect(t *testing.T, r kv.Reader, prefix string, opts kv.IterOptions) []string {
	t.Helper()
	it := r.Iterate(t.Context(), []byte(prefix), opts)
	defer it.Close()
	var keys []string
	for it.Next() {
		keys = append(keys, string(it.Key())+"="+string(it.Value()))
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate: %v", err)
	}
	return keys
}

// TestConformance runs the suite every kv.Store passes, on an in-memory
// file system.
func TestConformance(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kv.Store { return openMem(t, vfs.NewMem()) })
}

// TestAcknowledgedWritesSurviveCrash drops everything that was not synced
// and checks that every acknowledged write is still there.
func TestAcknowledgedWritesSurviveCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	for i := range 50 {
		if err := s.Put([]byte(fmt.Sprintf("p/%03d", i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	b := s.NewBatch()
	b.Put([]byte("b/1"), []byte("v"))
	b.Delete([]byte("p/000"))
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	s.Close()

	r := openMem(t, crashed)
	defer r.Close()
	if got := collect(t, r, "p/", kv.IterOptions{}); len(got) != 49 {
		t.Fatalf("after crash: %d of 49 puts survived", len(got))
	}
	if _, err := r.Get(t.Context(), []byte("b/1")); err != nil {
		t.Fatalf("batch write lost: %v", err)
	}
}

func TestSecondOpenIsLocked(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, kv.ErrLocked) {
		t.Fatalf("second open in process: err = %v, want ErrLocked", err)
	}
	// A second process sees the same clear error.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOpen$")
	cmd.Env = append(os.Environ(), "PICTOR_KV_HELPER_DIR="+dir)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "in use by another process") {
		t.Fatalf("second process output: %s", out)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	s2.Close()
	if _, err := os.Stat(filepath.Join(dir, lockFile)); err != nil {
		t.Fatalf("lock file: %v", err)
	}
}

// TestHelperOpen runs in a child process for TestSecondOpenIsLocked.
func TestHelperOpen(t *testing.T) {
	dir := os.Getenv("PICTOR_KV_HELPER_DIR")
	if dir == "" {
		return
	}
	_, err := Open(dir, Options{})
	fmt.Println(err)
}
