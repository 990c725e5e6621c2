package edgehub

// EventKey is the store key of the log's event seq, for tests that lay out
// a log (one far past Retention) without publishing every event of it.
func EventKey(seq uint64) []byte { return eventKey(seq) }

// AckPrefix prefixes the acknowledgement records of shared hubs.
const AckPrefix = ackPrefix

// Sweep runs one sweep of the records other hubs left behind, from the
// first record.
func (h *Hub) Sweep() { h.sweep(nil) }
