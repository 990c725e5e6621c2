package pebblekv

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pictorhq/pictor/kv"
)

// TestCheckpoint: a checkpoint holds the writes acknowledged before it and
// none after, opens read-only without the process lock while the store
// stays open, and refuses a directory that exists.
func TestCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "cp")
	if err := s.Checkpoint(cp); err != nil {
		t.Fatal(err)
	}
	if err := s.Put([]byte("b"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(cp); err == nil {
		t.Fatal("a checkpoint into an existing directory succeeded")
	}

	ro, err := Open(cp, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open the checkpoint while the store is open: %v", err)
	}
	defer ro.Close()
	if v, err := ro.Get(t.Context(), []byte("a")); err != nil || string(v) != "1" {
		t.Fatalf("checkpoint a = %q, %v", v, err)
	}
	if _, err := ro.Get(t.Context(), []byte("b")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("a write after the checkpoint is in it: %v", err)
	}
	if err := ro.Put([]byte("c"), nil); err == nil {
		t.Fatal("a read-only store took a write")
	}
	if _, err := os.Stat(filepath.Join(cp, lockFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the read-only open wrote a lock file: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "missing"), Options{ReadOnly: true}); err == nil {
		t.Fatal("a read-only open of a missing store succeeded")
	}

	s.Close()
	if err := s.Checkpoint(filepath.Join(dir, "late")); !errors.Is(err, kv.ErrClosed) {
		t.Fatalf("Checkpoint after Close = %v", err)
	}
}
