package og

import (
	"bytes"
	"testing"

	"github.com/pictorhq/pictor/origin/rendition"
)

// closeCount is a file's object that counts its closes.
type closeCount struct {
	*bytes.Reader
	closed *int
}

func (c closeCount) Close() error { *c.closed++; return nil }

func openFile(id string, closed *int) *rendition.File {
	return &rendition.File{Object: closeCount{bytes.NewReader([]byte("png")), closed}, Image: &rendition.Image{ID: id}}
}

// TestHandoff: the file a flight opened reaches the request that started
// it when it is of that request's variant, and is closed exactly once
// otherwise: another variant's, one given after the request stopped
// waiting, one left untaken, a second one.
func TestHandoff(t *testing.T) {
	for _, tc := range []struct {
		name      string
		run       func(h *handoff, f *rendition.File) *rendition.File // the file taken, if any
		wantTaken bool
		wantClose int
	}{
		{"taken", func(h *handoff, f *rendition.File) *rendition.File {
			h.give("twitter", "img", f)
			_, got := h.take()
			return got
		}, true, 0},
		{"another variant", func(h *handoff, f *rendition.File) *rendition.File {
			h.give("facebook", "img", f)
			_, got := h.take()
			return got
		}, false, 1},
		{"left before given", func(h *handoff, f *rendition.File) *rendition.File {
			h.leave()
			h.give("twitter", "img", f)
			return nil
		}, false, 1},
		{"left after given", func(h *handoff, f *rendition.File) *rendition.File {
			h.give("twitter", "img", f)
			h.leave()
			return nil
		}, false, 1},
		{"no handoff", func(_ *handoff, f *rendition.File) *rendition.File {
			var none *handoff
			none.give("twitter", "img", f)
			none.leave()
			_, got := none.take()
			return got
		}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			closed := 0
			f := openFile("img", &closed)
			got := tc.run(&handoff{variant: "twitter"}, f)
			if (got == f) != tc.wantTaken || closed != tc.wantClose {
				t.Fatalf("taken %v, closed %d times; want taken %v, closed %d", got == f, closed, tc.wantTaken, tc.wantClose)
			}
		})
	}
	t.Run("a second file", func(t *testing.T) {
		first, second := 0, 0
		h := &handoff{variant: "twitter"}
		f := openFile("a", &first)
		h.give("twitter", "a", f)
		h.give("twitter", "b", openFile("b", &second))
		id, got := h.take()
		if got != f || id != "a" || first != 0 || second != 1 {
			t.Fatalf("took %q (first %v), closes %d and %d", id, got == f, first, second)
		}
	})
}
