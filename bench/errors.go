package bench

import "errors"

var (
	// ErrAborted reports a run ended early because its requests kept failing.
	ErrAborted = errors.New("run aborted")
	// ErrUnknownScenario reports a --scenarios name no scenario has.
	ErrUnknownScenario = errors.New("unknown scenario")
	// ErrPictorStart reports that `pictor serve` did not come up.
	ErrPictorStart = errors.New("pictor serve did not start")
)
