package ogplatform

import "errors"

// ErrBadPath is a path NormalizePath refuses.
var ErrBadPath = errors.New("malformed page path")
