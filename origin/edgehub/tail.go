package edgehub

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/contract"
)

// tail hands the streams every event of the log, in order, once each,
// whichever hub appended it: it reads the log past what it delivered when
// this hub appends (kick) and, when the store is shared, every
// PollInterval. It ends with Close.
func (h *Hub) tail() {
	defer h.running.Done()
	var poll <-chan time.Time
	if h.opts.Shared {
		t := time.NewTicker(h.opts.PollInterval)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-h.kick:
		case <-poll:
		case <-h.closing:
			return
		}
		if err := h.deliver(h.life); err != nil {
			slog.Warn("could not read the edge event log; retrying", "after", h.delivered, "error", err)
		}
	}
}

// stored is an event as the log keeps it: with the instance of the hub
// that appended it, so that a hub tells its own events from the others'.
// Streams send the Event alone.
type stored struct {
	contract.Event
	Hub string `json:"hub,omitempty"`
}

// deliver reads the events past h.delivered and pushes each to every
// stream. Only the tailer calls it.
func (h *Hub) deliver(ctx context.Context) error {
	it := h.store.Iterate(ctx, []byte(prefix), kv.IterOptions{After: eventKey(h.delivered)})
	defer it.Close()
	for it.Next() {
		if len(it.Key()) != len(prefix)+8 {
			continue
		}
		seq := binary.BigEndian.Uint64(it.Key()[len(prefix):])
		var rec stored
		ok := json.Unmarshal(it.Value(), &rec) == nil && rec.Seq == seq
		ev := rec.Event
		if !ok {
			slog.Error("unreadable edge event skipped", "seq", seq)
		}
		h.mu.Lock()
		if seq != h.delivered+1 {
			// Events fell off the log before this hub read them (it was
			// further behind than Retention): its edges reconnect, and
			// replay or reset.
			slog.Warn("edge event log skipped past this origin's position; its edges reconnect", "after", h.delivered, "next", seq)
			for e := range h.edges {
				e.drop()
			}
		}
		if ok {
			for e := range h.edges {
				e.push(ev)
			}
		}
		h.delivered = seq
		h.mu.Unlock()
		if ok && rec.Hub != h.instance && h.opts.Apply != nil {
			h.opts.Apply(ev)
		}
		select {
		case <-h.closing:
			return nil
		default:
		}
	}
	return it.Err()
}
