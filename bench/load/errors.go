package load

import "errors"

// ErrAborted reports a run ended early because its requests kept failing.
var ErrAborted = errors.New("run aborted")
