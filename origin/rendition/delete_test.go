package rendition

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDeleteFailurePurgesWhatWasDeleted: when a delete fails part of the
// way (here the files of the second image cannot be removed: its folder's
// parent in the blob store is a file), the images it did delete, the
// failing one included (its record is gone), are still purged from the
// edges before the error is answered: a retry skips them as unknown and
// would never purge them.
func TestDeleteFailurePurgesWhatWasDeleted(t *testing.T) {
	e := newEnv(t)
	var purged []string
	e.svc.cfg.OnDelete = func(_ context.Context, ids []string) error {
		purged = append(purged, ids...)
		return nil
	}
	o := e.newOrg("pro")
	a := e.create(o, Item{Params: html("a")}).ID
	e.ready(a, testPNG(t, 4, 4, 0))
	var b string
	for b == "" || b[len(b)-2:] == a[len(a)-2:] { // folders of their own
		b = e.create(o, Item{Params: html("b")}).ID
	}
	c := e.create(o, Item{Params: html("c")}).ID
	if err := os.WriteFile(filepath.Join(e.dir, "images", b[len(b)-2:]), []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}

	n, err := e.svc.Delete(context.Background(), o.ID, []string{a, b, c})
	if err == nil {
		t.Fatal("the delete did not fail")
	}
	for _, id := range []string{a, b} {
		if _, err := e.svc.Get(t.Context(), id); err == nil {
			t.Fatalf("image %s is still there", id)
		}
	}
	if n != 2 || !slices.Equal(purged, []string{a, b}) {
		t.Fatalf("deleted %d, purged %v; want 2: %v", n, purged, []string{a, b})
	}
	// A retry deletes the rest and purges it.
	purged = nil
	if n, err := e.svc.Delete(context.Background(), o.ID, []string{a, b, c}); n != 1 || err != nil || !slices.Equal(purged, []string{c}) {
		t.Fatalf("retry: deleted %d (%v), purged %v", n, err, purged)
	}
}
