package bench

import "errors"

// ErrUnknownScenario reports a --scenarios name no scenario has.
var ErrUnknownScenario = errors.New("unknown scenario")
