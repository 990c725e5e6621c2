package cursor

import (
	"strconv"
	"strings"

	"github.com/pictorhq/pictor/origin/contract/field"
)

// List page sizes of spec §4.3: count is 1 to MaxCount, DefaultCount when
// not sent.
const (
	DefaultCount = 10
	MaxCount     = 100
)

// ParseList validates a list request's count and page_start (a token
// Encode issued for scope; the last value of each counts) and returns the
// page size and the position to list after. The error is a 400 naming
// every invalid parameter.
func (c Codec) ParseList(q map[string][]string, scope string) (count int, after string, err error) {
	var errs field.Errors
	count = DefaultCount
	if vs, ok := q["count"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(vs[len(vs)-1]))
		if err != nil || n < 1 || n > MaxCount {
			errs.Add("count", "must be an integer between 1 and %d", MaxCount)
		} else {
			count = n
		}
	}
	if vs, ok := q["page_start"]; ok && vs[len(vs)-1] != "" {
		pos, err := c.Decode(scope, vs[len(vs)-1])
		if err != nil {
			errs.Add("page_start", "is not a cursor issued by this API")
		}
		after = pos
	}
	return count, after, errs.Err()
}

// Page is the list envelope of spec §2.5: one page of views and the cursor
// of the next, null on the last page.
type Page[V any] struct {
	Data       []V `json:"data"`
	Pagination struct {
		NextPageStart *string `json:"next_page_start"`
	} `json:"pagination"`
}

// NewPage shows one page of items, each as view; when more follow, the
// next page starts after the last item, whose position (as the store lists
// by) is pos of it, encoded for scope.
func NewPage[T, V any](c Codec, scope string, items []T, more bool, view func(T) V, pos func(T) string) Page[V] {
	out := Page[V]{Data: make([]V, len(items))}
	for i, it := range items {
		out.Data[i] = view(it)
	}
	if more && len(items) > 0 {
		next := c.Encode(scope, pos(items[len(items)-1]))
		out.Pagination.NextPageStart = &next
	}
	return out
}
