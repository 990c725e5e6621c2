package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestListAndSelect(t *testing.T) {
	var out, errs strings.Builder
	if err := run(context.Background(), []string{"--list"}, &out, &errs); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hot-image", "og-hot", "og-first"} {
		if !strings.Contains(out.String(), "\n"+name+" ") && !strings.HasPrefix(out.String(), name+" ") {
			t.Errorf("--list lacks %s:\n%s", name, out.String())
		}
	}
	// Selected, the OG scenarios need the binary: the run stops there,
	// before starting anything.
	dir := t.TempDir()
	err := run(context.Background(), []string{"--scenarios", "og-hot, og-first", "--pictor", filepath.Join(dir, "missing"), "--out", dir}, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("run = %v, want the missing binary named", err)
	}
	err = run(context.Background(), []string{"--scenarios", "og-cold", "--out", dir}, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "og-first") {
		t.Fatalf("run = %v, want the known scenarios listed", err)
	}
}
