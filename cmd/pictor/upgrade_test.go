package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/kv/migrate"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin"
)

// TestStoreVersionIsRecorded: a first start records the store's data
// version; a store a newer Pictor migrated is refused at start, with a
// message that says what to do, and left as it was (docs/operations.md,
// Upgrades and rollbacks).
func TestStoreVersionIsRecorded(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, dir, nil)
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	store, err := pebblekv.Open(filepath.Join(dir, origin.StoreDir), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := migrate.Read(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version < 1 || len(rec.Applied) != rec.Version || rec.Applied[0].Name != "baseline" {
		t.Fatalf("the first start recorded %+v", rec)
	}
	// A newer binary's record: one version beyond what this one knows.
	newer := rec
	newer.Version++
	newer.Applied = append(newer.Applied, migrate.Applied{Version: newer.Version, Name: "from the future", By: "next"})
	b, err := json.Marshal(newer)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put([]byte(migrate.Key), b); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{
		{"serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--origin-addr", "127.0.0.1:0"},
		{"admin", "org", "suspend", "--data-dir", dir, "--org", "01a2258e-0a96-7023-978d-0667d1b5185e"},
	} {
		_, err := runCmd(t, nil, args...)
		if !errors.Is(err, migrate.ErrTooNew) || !strings.Contains(err.Error(), "restore the backup") {
			t.Fatalf("pictor %s on a store of a newer version: %v, want ErrTooNew saying what to do", args[0], err)
		}
	}
	store, err = pebblekv.Open(filepath.Join(dir, origin.StoreDir), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if after, err := migrate.Read(t.Context(), store); err != nil || after.Version != newer.Version {
		t.Fatalf("the refused start changed the record: %+v, %v", after, err)
	}
}
