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
