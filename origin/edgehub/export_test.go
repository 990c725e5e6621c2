package edgehub

// EventKey is the store key of the log's event seq, for tests that lay out
// a log (one far past Retention) without publishing every event of it.
func EventKey(seq uint64) []byte { return eventKey(seq) }
