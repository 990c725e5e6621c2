package edgehub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/pictorhq/pictor/kv"
)

// A shared hub records the position of each of its streams in the store,
// under ackPrefix + <hub instance> + "/" + <stream number>, so that
// Publish on any hub of the store can wait for the edges of every hub.
const ackPrefix = "edge-ack/"

const (
	// ackWriteInterval is the least time between two writes of a stream's
	// record for its acknowledgements; the first one is written at once.
	ackWriteInterval = 100 * time.Millisecond
	// heartbeat is how often a record is written again when nothing
	// changed, to say its hub is alive.
	heartbeat = time.Second
	// liveness is how old a record may be for its edge to count as
	// connected: three missed heartbeats mean its hub is gone (a clean
	// stop or end of stream removes the record at once).
	liveness = 3 * heartbeat
	// ackPoll is how often a Publish waiting for edges of other hubs
	// reads their records.
	ackPoll = 25 * time.Millisecond
	// sweepAge is the age past which any hub removes a record, left by a
	// hub that stopped without removing its own.
	sweepAge = time.Minute
	// sweepInterval and sweepLimit bound the sweep: every interval, it
	// reads at most sweepLimit records, continuing where the last stopped.
	sweepInterval = time.Minute
	sweepLimit    = 1000
)

// ackRecord is what a hub records of one of its streams.
type ackRecord struct {
	Edge string    `json:"edge"` // the stream's name and address, for logs
	Hub  string    `json:"hub"`  // the hub's instance
	Seq  uint64    `json:"seq"`  // the last event the edge acknowledged
	At   time.Time `json:"at"`   // when the hub wrote it, by its clock
}

func (h *Hub) ackKey(e *edge) []byte {
	return strconv.AppendUint(bytes.Clone(h.ownAcks), e.id, 10)
}

// written is what the store holds of one stream's record. at is when, by
// this process's monotonic clock: Options.Now only stamps the records.
type written struct {
	seq uint64
	at  time.Time
}

// recordAcks keeps this hub's records in the store: a stream's record is
// written when it connects, when it acknowledges (at most every
// ackWriteInterval), every heartbeat, and removed when it ends or the hub
// closes. It also sweeps the records other hubs left behind.
func (h *Hub) recordAcks(ctx context.Context) {
	defer h.running.Done()
	state := map[*edge]written{}
	timer := time.NewTimer(0)
	defer timer.Stop()
	sweep := time.NewTicker(sweepInterval)
	defer sweep.Stop()
	cursor := h.sweep(ctx, nil)
	for {
		select {
		case done := <-h.recorded:
			timer.Reset(h.writeAcks(state))
			close(done)
			continue
		case <-h.ackKick:
		case <-timer.C:
		case <-sweep.C:
			cursor = h.sweep(ctx, cursor)
		case <-h.closing:
			h.forget(state)
			return
		}
		timer.Reset(h.writeAcks(state))
	}
}

// writeAcks writes the records that are due and removes those of ended
// streams. It returns when it should run again.
func (h *Hub) writeAcks(state map[*edge]written) time.Duration {
	h.mu.Lock()
	live := make(map[*edge]bool, len(h.edges))
	for e := range h.edges {
		live[e] = true
	}
	h.mu.Unlock()
	now, stamp := time.Now(), h.opts.Now()
	next := heartbeat
	b := h.store.NewBatch()
	defer b.Close()
	var err error
	puts := map[*edge]written{}
	for e := range live {
		seq := e.position()
		w, ok := state[e]
		age := now.Sub(w.at)
		switch {
		case !ok || age >= heartbeat || (seq != w.seq && age >= ackWriteInterval):
			raw, _ := json.Marshal(ackRecord{Edge: e.name, Hub: h.instance, Seq: seq, At: stamp})
			err = errors.Join(err, b.Put(h.ackKey(e), raw))
			puts[e] = written{seq: seq, at: now}
		case seq != w.seq:
			next = min(next, ackWriteInterval-age)
		default:
			next = min(next, heartbeat-age)
		}
	}
	var ended []*edge
	for e := range state {
		if !live[e] {
			err = errors.Join(err, b.Delete(h.ackKey(e)))
			ended = append(ended, e)
		}
	}
	if len(puts)+len(ended) == 0 {
		return next
	}
	if err == nil {
		err = b.Commit()
	}
	if err != nil {
		slog.Warn("could not record edge acknowledgements; retrying", "error", err)
		return ackWriteInterval
	}
	for e, w := range puts {
		state[e] = w
	}
	for _, e := range ended {
		delete(state, e)
	}
	return next
}

// forget removes every record this hub wrote.
func (h *Hub) forget(state map[*edge]written) {
	if len(state) == 0 {
		return
	}
	b := h.store.NewBatch()
	defer b.Close()
	var err error
	for e := range state {
		err = errors.Join(err, b.Delete(h.ackKey(e)))
	}
	if err == nil {
		err = b.Commit()
	}
	if err != nil {
		slog.Warn("could not remove edge acknowledgement records; other origins ignore them shortly", "error", err)
	}
}

// sweep removes the records of other hubs older than sweepAge (or
// unreadable), reading at most sweepLimit records after the key after. It
// returns where the next sweep starts: nil once it reached the end.
func (h *Hub) sweep(ctx context.Context, after []byte) []byte {
	now := h.opts.Now()
	b := h.store.NewBatch()
	defer b.Close()
	it := h.store.Iterate(ctx, []byte(ackPrefix), kv.IterOptions{After: after})
	var last []byte
	var err error
	n, stale := 0, 0
	for n < sweepLimit && it.Next() {
		n++
		last = bytes.Clone(it.Key())
		if bytes.HasPrefix(last, h.ownAcks) {
			continue
		}
		var r ackRecord
		if json.Unmarshal(it.Value(), &r) != nil || now.Sub(r.At) > sweepAge {
			err = errors.Join(err, b.Delete(last))
			stale++
		}
	}
	err = errors.Join(err, it.Err())
	it.Close()
	if stale > 0 && err == nil {
		err = b.Commit()
	}
	if err != nil {
		slog.Warn("could not sweep stale edge acknowledgement records", "error", err)
	}
	if n < sweepLimit {
		return nil
	}
	return last
}

// live reports whether the record's hub wrote it recently enough for its
// edge to count as connected.
func (h *Hub) live(r ackRecord, now time.Time) bool { return now.Sub(r.At) <= liveness }

// readAcks returns the records of the other hubs' streams.
func (h *Hub) readAcks(ctx context.Context) (map[string]ackRecord, error) {
	recs := map[string]ackRecord{}
	it := h.store.Iterate(ctx, []byte(ackPrefix), kv.IterOptions{})
	defer it.Close()
	for it.Next() {
		if bytes.HasPrefix(it.Key(), h.ownAcks) {
			continue
		}
		var r ackRecord
		if json.Unmarshal(it.Value(), &r) == nil {
			recs[string(it.Key())] = r
		}
	}
	return recs, it.Err()
}

// remoteBehind returns the edges of other hubs, connected now, that have
// not acknowledged seq.
func (h *Hub) remoteBehind(ctx context.Context, seq uint64) (map[string]ackRecord, error) {
	recs, err := h.readAcks(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the edges' acknowledgements: %w", err)
	}
	now := h.opts.Now()
	for k, r := range recs {
		if r.Seq >= seq || !h.live(r, now) {
			delete(recs, k)
		}
	}
	return recs, nil
}

// awaitRemote waits until every edge of pending acknowledged seq, left, or
// its hub stopped reporting, or ctx ends, reading the records every
// ackPoll. It returns why it stopped waiting for some.
func (h *Hub) awaitRemote(ctx context.Context, seq uint64, pending map[string]ackRecord) []error {
	if len(pending) == 0 {
		return nil
	}
	var errs []error
	stopped := func(r ackRecord, err error) {
		errs = append(errs, fmt.Errorf("edge %s on origin %s: %w", r.Edge, r.Hub, err))
	}
	poll := time.NewTicker(ackPoll)
	defer poll.Stop()
	var readErr error
	for len(pending) > 0 {
		select {
		case <-poll.C:
		case <-ctx.Done():
			for _, r := range pending {
				stopped(r, ctx.Err())
			}
			if readErr != nil {
				errs = append(errs, readErr)
			}
			return errs
		}
		recs, err := h.readAcks(ctx)
		if err != nil {
			readErr = fmt.Errorf("read the edges' acknowledgements: %w", err)
			continue
		}
		now := h.opts.Now()
		for k, p := range pending {
			// An edge whose stream ended (its record is removed) or whose
			// hub stopped writing replays the event when it reconnects.
			r, ok := recs[k]
			switch {
			case !ok:
				stopped(p, errGone)
			case !h.live(r, now):
				stopped(p, errStale)
			case r.Seq < seq:
				continue
			}
			delete(pending, k)
		}
	}
	return errs
}
