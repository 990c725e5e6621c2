package rendition

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/imageparams"
)

// TestKeyLayout: creating an image writes exactly the keys record.go
// documents: its record, its entry in the organization's list under its
// sort key, and a dedupe entry only when it may be deduplicated; deleting
// it removes every one of them and its files.
func TestKeyLayout(t *testing.T) {
	tests := []struct {
		name   string
		item   func(orgID string) Item
		dedupe bool
		// sortKeyIsID: API images (UUIDv7 ids) are filed under their id.
		sortKeyIsID bool
	}{
		{name: "api image", item: func(string) Item { return Item{Params: html("a")} }, sortKeyIsID: true},
		{name: "api image with dedupe", item: func(string) Item { return Item{Params: html("b"), Dedupe: time.Hour} },
			dedupe: true, sortKeyIsID: true},
		{name: "signed URL image", item: func(orgID string) Item {
			p := html("c")
			return Item{Params: p, ID: ContentID(orgID, &p, "create-and-render")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			o := e.newOrg("pro")
			img := e.create(o, tt.item(o.ID)).Image
			want := map[string]string{
				"img/" + img.ID:                        "",
				"org-list/" + o.ID + "/" + img.SortKey: img.ID,
			}
			if tt.dedupe {
				want["dedupe/"+o.ID+"/"+img.DedupeKey] = img.ID
			} else if img.DedupeKey != "" {
				t.Fatalf("dedupe key %q without dedupe", img.DedupeKey)
			}
			if got := (img.SortKey == img.ID); got != tt.sortKeyIsID {
				t.Fatalf("sort key %s of image %s: is the id = %v, want %v", img.SortKey, img.ID, got, tt.sortKeyIsID)
			}
			got := map[string]string{}
			for _, prefix := range []string{"img/", "org-list/", "dedupe/", legacyPrefix} {
				maps.Copy(got, e.keys(t.Context(), prefix))
			}
			got["img/"+img.ID] = "" // the record's value is its JSON, checked below
			if !maps.Equal(got, want) {
				t.Fatalf("keys:\n got %v\nwant %v", got, want)
			}
			rec := e.get(t.Context(), img.ID)
			if rec.OrgID != o.ID || rec.State != StatePending || rec.SortKey != img.SortKey || rec.Credits != 1 {
				t.Fatalf("stored record %+v", rec)
			}

			e.ready(img.ID, testPNG(t, 8, 8, 0))
			if n, err := e.svc.Delete(context.Background(), o.ID, []string{img.ID}); n != 1 || err != nil {
				t.Fatalf("delete: %d, %v", n, err)
			}
			for _, prefix := range []string{"img/", "org-list/", "dedupe/"} {
				if left := e.keys(t.Context(), prefix); len(left) > 0 {
					t.Fatalf("after delete: %v", sortedKeys(left))
				}
			}
			if _, err := e.blobs.Read(context.Background(), img.ID, fileNames[imageparams.FormatPNG]); err == nil {
				t.Fatal("the master outlived its image")
			}
		})
	}
}

// TestListNewestFirst: an organization's images list newest first,
// whether created through the API or through signed URLs (whose ids are
// in no time order), in pages that each start after the previous page's
// last sort key; has-more is exact at a page boundary, and no other
// organization's image appears.
func TestListNewestFirst(t *testing.T) {
	e := newEnv(t)
	o, other := e.newOrg("pro"), e.newOrg("pro")
	var newestFirst []string
	for i := range 7 {
		it := Item{Params: html(string(rune('a' + i)))}
		if i%2 == 1 {
			it.ID = ContentID(o.ID, &it.Params, "create-and-render")
		}
		newestFirst = append([]string{e.create(o, it).ID}, newestFirst...)
		e.create(other, Item{Params: html(string(rune('a' + i)))})
	}
	if slices.IsSorted(newestFirst) || slices.IsSortedFunc(newestFirst, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Fatal("the ids happen to be in creation order: the test would prove nothing")
	}
	tests := []struct {
		name     string
		pageSize int
	}{
		{name: "one per page", pageSize: 1},
		{name: "a page boundary at the end", pageSize: 7},
		{name: "uneven pages", pageSize: 3},
		{name: "one page", pageSize: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := listAll(t, e.svc, o.ID, tt.pageSize); !slices.Equal(got, newestFirst) {
				t.Fatalf("got %v\nwant %v", got, newestFirst)
			}
		})
	}
	page, more, err := e.svc.List(t.Context(), o.ID, "", 7)
	if err != nil || len(page) != 7 || more {
		t.Fatalf("a page of exactly the 7 images: %d images, more = %v (%v)", len(page), more, err)
	}
	page, more, err = e.svc.List(t.Context(), o.ID, "", 6)
	if err != nil || len(page) != 6 || !more {
		t.Fatalf("a page of 6 of 7 images: %d images, more = %v (%v)", len(page), more, err)
	}
}

// TestGetUnknown: an unknown image is ErrNotFound, for Get and Open alike.
func TestGetUnknown(t *testing.T) {
	e := newEnv(t)
	const id = "0195f0a0-0000-7000-8000-000000000000"
	if _, err := e.svc.Get(t.Context(), id); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get: %v", err)
	}
	if _, err := e.svc.Open(context.Background(), id, imageparams.FormatPNG); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open: %v", err)
	}
}
