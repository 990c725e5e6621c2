package pictor

import "errors"

// ErrStart reports that `pictor serve` did not come up.
var ErrStart = errors.New("pictor serve did not start")
