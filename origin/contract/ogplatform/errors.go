package ogplatform

import (
	"errors"
	"fmt"
)

// ErrBadPath is a path NormalizePath refuses.
var ErrBadPath = errors.New("malformed page path")

// ErrPathTooLong is a path NormalizePath refuses for its length once
// escaped again; it is an ErrBadPath.
var ErrPathTooLong = fmt.Errorf("%w: longer than 2 KiB once percent-encoded", ErrBadPath)
