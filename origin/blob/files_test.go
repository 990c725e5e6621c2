package blob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestPutOpenRemove(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id := "01a200a2-2585-7706-ab1e-4006e28d9bff"
	if err := s.Put(ctx, id, "master.png", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, id, "master.png", []byte("two")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(ctx, id, "master.png")
	if err != nil || string(got) != "two" {
		t.Fatalf("read = %q, %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(must(s.Path(id, "master.png"))))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	if err := s.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ctx, id, "master.png"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after remove: %v", err)
	}
}

func TestRejectsEscapes(t *testing.T) {
	s, _ := Open(t.TempDir())
	for _, k := range [][2]string{{"..", "x"}, {"a/b", "x"}, {"id", "../x"}, {"id", ".hidden"}, {"", "x"}, {"id", ""}} {
		if err := s.Put(context.Background(), k[0], k[1], nil); err == nil {
			t.Errorf("Put(%q, %q) accepted", k[0], k[1])
		}
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}
