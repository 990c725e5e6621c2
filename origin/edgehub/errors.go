package edgehub

import "errors"

// Why Publish stopped waiting for an edge; they only reach the log, since
// such an edge replays the event when it reconnects.
var (
	errGone    = errors.New("disconnected before it acknowledged")
	errLagging = errors.New("dropped: too far behind")
	errStale   = errors.New("its origin stopped reporting its acknowledgements")
)
