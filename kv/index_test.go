package kv_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
)

// TestListIndex pages an index newest first, loading each record, and
// stays inside its prefix.
func TestListIndex(t *testing.T) {
	s, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 5 {
		id := fmt.Sprintf("id%d", i)
		s.Put([]byte("rec/"+id), []byte("value of "+id))
		s.Put([]byte("idx/a/"+id), nil)
	}
	s.Put([]byte("idx/ab/x"), nil) // a neighbouring index, outside the prefix
	load := func(r kv.Reader, id string) (string, error) {
		v, err := r.Get(t.Context(), []byte("rec/"+id))
		return string(v), err
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		page, more, err := kv.ListIndex(t.Context(), s, []byte("idx/a/"), after, 2, load)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if !more {
			break
		}
		if pages > 5 {
			t.Fatal("the pages never end")
		}
		after = page[len(page)-1][len("value of "):]
	}
	want := []string{"value of id4", "value of id3", "value of id2", "value of id1", "value of id0"}
	if !slices.Equal(got, want) {
		t.Fatalf("pages %q, want %q", got, want)
	}
	if _, _, err := kv.ListIndex(t.Context(), s, []byte("idx/b/"), "", 2, load); err != nil {
		t.Fatal(err)
	}
	s.Put([]byte("idx/a/missing"), nil)
	if _, _, err := kv.ListIndex(t.Context(), s, []byte("idx/a/"), "", 10, load); err == nil {
		t.Fatal("a record that does not load is not reported")
	}
}
