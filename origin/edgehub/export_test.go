package edgehub

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pictorhq/pictor/kv"
)

// EventKey is the store key of the log's event seq, for tests that lay out
// a log (one far past Retention) without publishing every event of it.
func EventKey(seq uint64) []byte { return eventKey(seq) }

// AckPrefix prefixes the acknowledgement records of shared hubs.
const AckPrefix = ackPrefix

// Sweep runs one sweep of the records other hubs left behind, from the
// first record.
func (h *Hub) Sweep(ctx context.Context) { h.sweep(ctx, nil) }

// PutAck writes the acknowledgement record of stream of hub, as of at: one
// a hub that stopped uncleanly left behind.
func PutAck(store kv.Store, hub string, stream, seq uint64, at time.Time) error {
	raw, err := json.Marshal(ackRecord{Edge: "edge@" + hub, Hub: hub, Seq: seq, At: at})
	if err != nil {
		return err
	}
	return store.Put(fmt.Appendf(nil, "%s%s/%d", ackPrefix, hub, stream), raw)
}
