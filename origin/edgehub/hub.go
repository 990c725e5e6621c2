package edgehub

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
)

// Retention bounds the log: an edge further behind than this many events
// is told to drop its whole cache.
const Retention = 100_000

// AckTimeout bounds how long Publish waits for a connected edge.
const AckTimeout = 10 * time.Second

// Hub is the origin's side of the purge channel.
type Hub struct {
	store kv.Store
	token string

	mu    sync.Mutex
	seq   uint64
	edges map[*edge]struct{}

	closing   chan struct{} // closed by Close: streams end so the server can drain
	closeOnce sync.Once
}

// Close ends every edge stream (they reconnect to whoever serves next).
func (h *Hub) Close() { h.closeOnce.Do(func() { close(h.closing) }) }

type edge struct {
	name    string
	events  chan contract.Event
	lagging chan struct{} // closed (under Hub.mu) when events overflowed: the edge must reconnect and replay
	gone    chan struct{} // closed when the stream ended: nothing waits for the edge any more
	mu      sync.Mutex
	acked   uint64
	ackedCh chan struct{} // closed and replaced at every ack
}

// New opens the hub over the store's event log. token authenticates edges.
func New(store kv.Store, token string) (*Hub, error) {
	if len(token) < contract.MinEdgeToken {
		return nil, fmt.Errorf("edge token must be at least %d characters", contract.MinEdgeToken)
	}
	h := &Hub{store: store, token: token, edges: map[*edge]struct{}{}, closing: make(chan struct{})}
	it := store.Iterate([]byte(prefix), kv.IterOptions{Reverse: true})
	if it.Next() {
		h.seq = binary.BigEndian.Uint64(it.Key()[len(prefix):])
	}
	err := it.Err()
	it.Close()
	return h, err
}

const prefix = "edge-event/"

func eventKey(seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte(prefix), seq) }

// Publish appends an event and waits until every connected edge applied it
// (or left, or AckTimeout or ctx ended: such an edge replays the event when
// it reconnects).
func (h *Hub) Publish(ctx context.Context, kind string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	h.mu.Lock()
	h.seq++
	ev := contract.Event{Seq: h.seq, Kind: kind, IDs: ids}
	raw, _ := json.Marshal(ev)
	b := h.store.NewBatch()
	b.Put(eventKey(ev.Seq), raw)
	if ev.Seq > Retention {
		b.Delete(eventKey(ev.Seq - Retention))
	}
	err := b.Commit()
	b.Close()
	if err != nil {
		h.seq--
		h.mu.Unlock()
		return fmt.Errorf("append edge event: %w", err)
	}
	// Hand the event to every stream before the lock goes, so that each
	// gets the events in the order of their numbers: a stream sends only
	// what is past what it sent.
	edges := make([]*edge, 0, len(h.edges))
	var errs []error
	for e := range h.edges {
		if e.push(ev) {
			edges = append(edges, e)
		} else {
			errs = append(errs, fmt.Errorf("edge %s: %w", e.name, errLagging))
		}
	}
	h.mu.Unlock()

	// Every edge has the event already, and the waits share one deadline:
	// each returns as soon as its edge acknowledged or left, so Publish
	// waits for the slowest edge, not for the sum of them.
	ctx, cancel := context.WithTimeout(ctx, AckTimeout)
	defer cancel()
	for _, e := range edges {
		if err := e.wait(ctx, ev.Seq); err != nil {
			errs = append(errs, fmt.Errorf("edge %s: %w", e.name, err))
		}
	}
	if len(errs) > 0 {
		slog.Warn("edges did not confirm a purge; they replay it when they reconnect", "seq", ev.Seq, "error", errors.Join(errs...))
	}
	return nil
}

// push queues ev for the edge's stream without blocking; the caller holds
// Hub.mu. An edge whose queue is full is dropped instead (it replays the
// log when it reconnects), and so is every event after that one: push
// reports whether the stream will send ev.
func (e *edge) push(ev contract.Event) bool {
	select {
	case <-e.lagging:
		return false
	default:
	}
	select {
	case e.events <- ev:
		return true
	default:
		close(e.lagging)
		return false
	}
}

func (e *edge) wait(ctx context.Context, seq uint64) error {
	for {
		e.mu.Lock()
		acked, ch := e.acked, e.ackedCh
		e.mu.Unlock()
		if acked >= seq {
			return nil
		}
		select {
		case <-ch:
		case <-e.gone:
			return errGone
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (e *edge) ack(seq uint64) {
	e.mu.Lock()
	if seq > e.acked {
		e.acked = seq
		close(e.ackedCh)
		e.ackedCh = make(chan struct{})
	}
	e.mu.Unlock()
}

func (h *Hub) authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(tok), []byte(h.token)) == 1
}

// ServeHTTP serves the edge channel at POST contract.StreamPath: the
// request body carries the edge's acknowledgements (one decimal sequence
// number per line) and the response streams events (one JSON object per
// line), starting after the request's contract.StreamSince position. A
// contract.Reset frame tells an edge that fell off the log, or is ahead of
// it, to drop everything and continue from the head. The stream ends with
// the request body: an edge that cannot acknowledge is gone.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		// Connection: close answers at once: net/http would otherwise
		// drain the body first to keep the connection, and an edge's body
		// (its acknowledgements) stays open as long as the edge runs.
		apierr.Write(w, r, apierr.New(http.StatusUnauthorized, "Invalid edge token").
			WithHeader("WWW-Authenticate", `Bearer realm="`+contract.StreamRealm+`"`).
			WithHeader("Connection", "close"))
		return
	}
	since, err := strconv.ParseUint(r.URL.Query().Get(contract.StreamSince), 10, 64)
	if err != nil {
		since = 0
	}
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil {
		apierr.Write(w, r, apierr.Internal(fmt.Errorf("purge channel: enable full duplex: %w", err)).WithHeader("Connection", "close"))
		return
	}
	e := &edge{name: r.URL.Query().Get(contract.StreamName) + "@" + r.RemoteAddr, events: make(chan contract.Event, 1024),
		lagging: make(chan struct{}), gone: make(chan struct{}), ackedCh: make(chan struct{})}
	// Register before reading the log, so no event falls between the two:
	// the log holds the events up to head, the queue those after it.
	h.mu.Lock()
	head := h.seq
	// An edge ahead of the log has nothing to acknowledge before head+1.
	e.acked = min(since, head)
	h.edges[e] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.edges, e)
		h.mu.Unlock()
		close(e.gone)
	}()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	send := func(ev contract.Event) error {
		if err := enc.Encode(ev); err != nil {
			return err
		}
		return rc.Flush()
	}

	acksEnded := make(chan struct{}) // closed when the edge can acknowledge no more
	go func() {
		defer close(acksEnded)
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			if n, err := strconv.ParseUint(strings.TrimSpace(sc.Text()), 10, 64); err == nil {
				e.ack(n)
			}
		}
	}()

	sent := since
	switch {
	case since > head || head-since > Retention:
		// Further behind than the log keeps, or ahead of it (the store was
		// restored from a backup, or is a new one): the edge's position
		// means nothing against this log.
		if send(contract.Event{Seq: head, Kind: contract.Reset}) != nil {
			return
		}
		sent = head
	case since < head:
		it := h.store.Iterate([]byte(prefix), kv.IterOptions{After: eventKey(since)})
		for it.Next() {
			var ev contract.Event
			if json.Unmarshal(it.Value(), &ev) != nil || ev.Seq > head {
				continue
			}
			if send(ev) != nil {
				it.Close()
				return
			}
			sent = ev.Seq
		}
		it.Close()
	}
	// A heartbeat tells the edge it is caught up (and keeps proxies open).
	if send(contract.Event{Seq: sent, Kind: contract.Ready}) != nil {
		return
	}
	ticker := time.NewTicker(15 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case ev := <-e.events:
			// The queue holds no event past one that overflowed (push),
			// so the edge never acknowledges past a gap.
			if ev.Seq <= sent {
				continue
			}
			if send(ev) != nil {
				return
			}
			sent = ev.Seq
		case <-ticker.C:
			if send(contract.Event{Seq: sent, Kind: contract.Ready}) != nil {
				return
			}
		case <-e.lagging:
			return
		case <-acksEnded:
			return
		case <-h.closing:
			return
		case <-r.Context().Done():
			return
		}
	}
}
