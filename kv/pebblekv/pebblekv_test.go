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
	it := r.Iterate([]byte(prefix), opts)
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

func TestGetPutDelete(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	if _, err := s.Get([]byte("a")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("get missing: err = %v, want ErrNotFound", err)
	}
	if err := s.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	v, err := s.Get([]byte("a"))
	if err != nil || string(v) != "1" {
		t.Fatalf("get = %q, %v", v, err)
	}
	if err := s.Delete([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte("a")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("get deleted: err = %v", err)
	}
}

func TestIterate(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	for _, k := range []string{"a/1", "a/2", "a/3", "b/1", "a", "a0"} {
		if err := s.Put([]byte(k), []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		prefix string
		opts   kv.IterOptions
		want   string
	}{
		{name: "forward", prefix: "a/", want: "a/1=va/1 a/2=va/2 a/3=va/3"},
		{name: "reverse", prefix: "a/", opts: kv.IterOptions{Reverse: true}, want: "a/3=va/3 a/2=va/2 a/1=va/1"},
		{name: "after", prefix: "a/", opts: kv.IterOptions{After: []byte("a/1")}, want: "a/2=va/2 a/3=va/3"},
		{name: "reverse after", prefix: "a/", opts: kv.IterOptions{After: []byte("a/3"), Reverse: true}, want: "a/2=va/2 a/1=va/1"},
		{name: "after last", prefix: "a/", opts: kv.IterOptions{After: []byte("a/3")}, want: ""},
		{name: "after outside prefix", prefix: "a/", opts: kv.IterOptions{After: []byte("0")}, want: "a/1=va/1 a/2=va/2 a/3=va/3"},
		{name: "empty prefix", prefix: "c/", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(collect(t, s, tc.prefix, tc.opts), " ")
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBatchIsAtomic(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	b := s.NewBatch()
	b.Put([]byte("x/1"), []byte("1"))
	b.Put([]byte("x/2"), []byte("2"))
	if got := collect(t, s, "x/", kv.IterOptions{}); len(got) != 0 {
		t.Fatalf("uncommitted batch visible: %v", got)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if got := collect(t, s, "x/", kv.IterOptions{}); len(got) != 2 {
		t.Fatalf("after commit: %v", got)
	}
	abandoned := s.NewBatch()
	abandoned.Delete([]byte("x/1"))
	abandoned.Close()
	if got := collect(t, s, "x/", kv.IterOptions{}); len(got) != 2 {
		t.Fatalf("closed batch applied: %v", got)
	}
}

func TestSnapshotIsStable(t *testing.T) {
	s := openMem(t, vfs.NewMem())
	defer s.Close()
	s.Put([]byte("k/1"), []byte("old"))
	snap := s.Snapshot()
	defer snap.Close()
	s.Put([]byte("k/1"), []byte("new"))
	s.Put([]byte("k/2"), []byte("new"))
	v, err := snap.Get([]byte("k/1"))
	if err != nil || string(v) != "old" {
		t.Fatalf("snapshot get = %q, %v", v, err)
	}
	if got := collect(t, snap, "k/", kv.IterOptions{}); len(got) != 1 {
		t.Fatalf("snapshot iterate = %v", got)
	}
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
	if _, err := r.Get([]byte("b/1")); err != nil {
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
