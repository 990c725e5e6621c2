package pictor

import "errors"

// ErrStart reports that `pictor serve` did not come up.
var ErrStart = errors.New("pictor serve did not start")

// ErrMetricMissing reports a sample /metrics does not have (a labelled
// one appears at its first observation).
var ErrMetricMissing = errors.New("missing from /metrics")
