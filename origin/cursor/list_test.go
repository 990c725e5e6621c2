package cursor

import (
	"errors"
	"strconv"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

func TestParseList(t *testing.T) {
	c := New([]byte("0123456789abcdef0123456789abcdef"))
	tok := c.Encode("things/org-a", "pos-7")
	for _, tc := range []struct {
		name      string
		q         map[string][]string
		count     int
		after     string
		badFields []string
	}{
		{"defaults", nil, DefaultCount, "", nil},
		{"count", map[string][]string{"count": {"25"}}, 25, "", nil},
		{"last value counts", map[string][]string{"count": {"5", "7"}}, 7, "", nil},
		{"count too large", map[string][]string{"count": {"101"}}, 0, "", []string{"count"}},
		{"count zero", map[string][]string{"count": {"0"}}, 0, "", []string{"count"}},
		{"count not a number", map[string][]string{"count": {"ten"}}, 0, "", []string{"count"}},
		{"page_start", map[string][]string{"page_start": {tok}}, DefaultCount, "pos-7", nil},
		{"empty page_start", map[string][]string{"page_start": {""}}, DefaultCount, "", nil},
		{"another scope's cursor", map[string][]string{"page_start": {c.Encode("things/org-b", "pos-7")}}, 0, "", []string{"page_start"}},
		{"both bad", map[string][]string{"count": {"-1"}, "page_start": {"junk"}}, 0, "", []string{"count", "page_start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			count, after, err := c.ParseList(tc.q, "things/org-a")
			if len(tc.badFields) > 0 {
				var ae *apierr.Error
				if !errors.As(err, &ae) || ae.Status != 400 || len(ae.Fields) != len(tc.badFields) {
					t.Fatalf("err = %v, want a 400 naming %v", err, tc.badFields)
				}
				for i, f := range ae.Fields {
					if f.Path != tc.badFields[i] {
						t.Fatalf("field %d is %q, want %q", i, f.Path, tc.badFields[i])
					}
				}
				return
			}
			if err != nil || count != tc.count || after != tc.after {
				t.Fatalf("ParseList = %d, %q, %v; want %d, %q", count, after, err, tc.count, tc.after)
			}
		})
	}
}

func TestNewPage(t *testing.T) {
	c := New([]byte("0123456789abcdef0123456789abcdef"))
	items := []int{3, 2, 1}
	view := func(n int) string { return strconv.Itoa(n) }
	pos := func(n int) string { return "id" + strconv.Itoa(n) }
	p := NewPage(c, "things/org", items, true, view, pos)
	if len(p.Data) != 3 || p.Data[0] != "3" || p.Data[2] != "1" || p.Pagination.NextPageStart == nil {
		t.Fatalf("page %+v", p)
	}
	if after, err := c.Decode("things/org", *p.Pagination.NextPageStart); err != nil || after != "id1" {
		t.Fatalf("next page starts after %q (%v), want id1", after, err)
	}
	if _, err := c.Decode("other/org", *p.Pagination.NextPageStart); err == nil {
		t.Fatal("the cursor is valid in another scope")
	}
	last := NewPage(c, "things/org", items, false, view, pos)
	if last.Pagination.NextPageStart != nil {
		t.Fatal("the last page names a next one")
	}
	empty := NewPage(c, "things/org", []int{}, true, view, pos)
	if empty.Data == nil || len(empty.Data) != 0 || empty.Pagination.NextPageStart != nil {
		t.Fatalf("empty page %+v: want [] and no cursor", empty)
	}
}
