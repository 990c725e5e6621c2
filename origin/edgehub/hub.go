package edgehub

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
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

// AckTimeout bounds how long Publish waits for the edges, unless
// Options.AckTimeout says otherwise. A stream whose edge acknowledges
// nothing that long while events are outstanding is ended.
const AckTimeout = 10 * time.Second

// DefaultPollInterval is how often a shared hub reads the log for the
// events other hubs appended.
const DefaultPollInterval = 200 * time.Millisecond

// appendTimeout bounds Publish's append (the wait for the log's lock
// included). The append does not end with the caller's context: what the
// event purges is gone from the store already.
const appendTimeout = 30 * time.Second

// eventLock is the kv.Store.Update lock that numbers the log's events.
const eventLock = "edge-event"

// Options tune a Hub. The zero value is a hub alone on its store (pebble,
// which one process opens).
type Options struct {
	// Shared says other processes serve edges from the same store (a
	// PostgreSQL store): the hub reads the log every PollInterval for their
	// events, records its edges' acknowledgements in the store, and Publish
	// waits for the edges of every hub.
	Shared bool
	// PollInterval is how often a shared hub reads the log; 0 means
	// DefaultPollInterval. A hub alone reads it when it appends.
	PollInterval time.Duration
	// AckTimeout bounds Publish's wait for the edges; 0 means AckTimeout.
	AckTimeout time.Duration
	// Apply, when set, receives every event another process appended to
	// the log, in order, once each, for an edge inside this process (pictor
	// serve), whose purges the caller makes directly for its own events.
	// The tailer waits for it.
	Apply func(contract.Event)
	// Now is the clock of the acknowledgement records; nil means time.Now.
	// The records of every hub are compared with it, so the origins'
	// clocks must agree to well within a second.
	Now func() time.Time
}

// Validate reports a negative duration.
func (o Options) Validate() error {
	switch {
	case o.PollInterval < 0:
		return fmt.Errorf("edge hub: poll interval %v is negative", o.PollInterval)
	case o.AckTimeout < 0:
		return fmt.Errorf("edge hub: ack timeout %v is negative", o.AckTimeout)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.AckTimeout == 0 {
		o.AckTimeout = AckTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Hub is the origin's side of the purge channel.
type Hub struct {
	store    kv.Store
	tokens   []string // the edge tokens accepted (ParseTokens)
	opts     Options
	instance string // names this hub in the acknowledgement records
	ownAcks  []byte // the prefix of this hub's acknowledgement records

	mu sync.Mutex
	// delivered is the last event handed to the streams: the tailer's
	// position. Only the tailer advances it, under mu, as it pushes.
	delivered uint64
	edges     map[*edge]struct{}
	conns     uint64 // numbers the streams

	kick    chan struct{} // a local append: the tailer reads the log now
	ackKick chan struct{} // an edge came, acknowledged or left: record it
	// recorded asks the acknowledgement recorder to write the records that
	// are due now, and to close the channel sent once it did.
	recorded chan chan struct{}

	closing   chan struct{}   // closed by Close: streams end so the server can drain
	life      context.Context // canceled by Close: the background reads end
	stop      context.CancelFunc
	closeOnce sync.Once
	running   sync.WaitGroup // the tailer and the acknowledgement recorder
}

// Close ends every edge stream (they reconnect to whoever serves next),
// stops reading the log and removes this hub's acknowledgement records.
func (h *Hub) Close() {
	h.closeOnce.Do(func() { close(h.closing); h.stop() })
	h.running.Wait()
}

type edge struct {
	id      uint64 // the stream's number in this hub
	name    string
	events  chan contract.Event
	lagging chan struct{} // closed (under Hub.mu) when events overflowed: the edge must reconnect and replay
	gone    chan struct{} // closed when the stream ended: nothing waits for the edge any more
	mu      sync.Mutex
	acked   uint64
	ackedCh chan struct{} // closed and replaced at every ack
}

// New opens the hub over the store's event log. token authenticates edges:
// one token, or several separated by commas or line breaks (ParseTokens),
// any of which an edge may present. At most one Options may follow.
func New(ctx context.Context, store kv.Store, token string, opts ...Options) (*Hub, error) {
	tokens, err := ParseTokens(token)
	if err != nil {
		return nil, err
	}
	var o Options
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		return nil, errors.New("edge hub: more than one Options")
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	head, err := lastSeq(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("read the edge event log: %w", err)
	}
	id := make([]byte, 8)
	rand.Read(id)
	h := &Hub{store: store, tokens: tokens, opts: o.withDefaults(), instance: hex.EncodeToString(id),
		delivered: head, edges: map[*edge]struct{}{},
		kick: make(chan struct{}, 1), ackKick: make(chan struct{}, 1), recorded: make(chan chan struct{}),
		closing: make(chan struct{})}
	h.life, h.stop = context.WithCancel(context.Background())
	h.ownAcks = []byte(ackPrefix + h.instance + "/")
	h.running.Add(1)
	go h.tail()
	if h.opts.Shared {
		h.running.Add(1)
		go h.recordAcks(h.life)
	}
	return h, nil
}

const prefix = "edge-event/"

func eventKey(seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte(prefix), seq) }

// lastSeq returns the number of the log's last event, 0 when it is empty.
func lastSeq(ctx context.Context, r kv.Reader) (uint64, error) {
	it := r.Iterate(ctx, []byte(prefix), kv.IterOptions{Reverse: true})
	defer it.Close()
	var seq uint64
	if it.Next() {
		seq = binary.BigEndian.Uint64(it.Key()[len(prefix):])
	}
	return seq, it.Err()
}

// wake signals a goroutine waiting on ch without blocking.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Publish appends an event and waits until every connected edge applied it
// (or left, or AckTimeout or ctx ended: such an edge replays the event when
// it reconnects). Edges connected to other hubs of a shared store count.
func (h *Hub) Publish(ctx context.Context, kind string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ev := contract.Event{Kind: kind, IDs: ids}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), appendTimeout)
	defer cancel()
	// The number is the last one plus one, under the lock every process
	// of the store takes: numbers are dense and unique, and an event
	// commits (becomes visible) after every lower one.
	err := h.store.Update(actx, eventLock, func(txn kv.Txn) error {
		head, err := lastSeq(actx, txn)
		if err != nil {
			return err
		}
		ev.Seq = head + 1
		raw, err := json.Marshal(stored{Event: ev, Hub: h.instance})
		if err != nil {
			return err
		}
		if err := txn.Put(eventKey(ev.Seq), raw); err != nil {
			return err
		}
		if ev.Seq > Retention {
			return txn.Delete(eventKey(ev.Seq - Retention))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("append edge event: %w", err)
	}
	// The tailer hands the event to this hub's streams, as the tailers of
	// the other hubs do to theirs.
	wake(h.kick)

	// The waits share one deadline: each returns as soon as its edge
	// acknowledged or left, so Publish waits for the slowest edge, not for
	// the sum of them. The edges are those connected now; one that
	// connects later replays the event before it is ready.
	ctx, cancel = context.WithTimeout(ctx, h.opts.AckTimeout)
	defer cancel()
	var errs []error
	var remote map[string]ackRecord
	if h.opts.Shared {
		remote, err = h.remoteBehind(ctx, ev.Seq)
		if err != nil {
			errs = append(errs, err)
		}
	}
	h.mu.Lock()
	edges := make([]*edge, 0, len(h.edges))
	for e := range h.edges {
		edges = append(edges, e)
	}
	h.mu.Unlock()
	for _, e := range edges {
		if err := e.wait(ctx, ev.Seq); err != nil {
			errs = append(errs, fmt.Errorf("edge %s: %w", e.name, err))
		}
	}
	errs = append(errs, h.awaitRemote(ctx, ev.Seq, remote)...)
	if len(errs) > 0 {
		slog.WarnContext(ctx, "edges did not confirm a purge; they replay it when they reconnect", "seq", ev.Seq, "error", errors.Join(errs...))
	}
	return nil
}

// push queues ev for the edge's stream without blocking; the caller holds
// Hub.mu. An edge whose queue is full is dropped instead (it replays the
// log when it reconnects), and so is every event after that one.
func (e *edge) push(ev contract.Event) {
	select {
	case <-e.lagging:
		return
	default:
	}
	select {
	case e.events <- ev:
	default:
		close(e.lagging)
	}
}

// drop cuts the edge off; the caller holds Hub.mu.
func (e *edge) drop() {
	select {
	case <-e.lagging:
	default:
		close(e.lagging)
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
		case <-e.lagging:
			return errLagging
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

func (e *edge) position() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.acked
}

// ServeHTTP serves the edge channel at POST contract.StreamPath: the
// request body carries the edge's acknowledgements (one decimal sequence
// number per line) and the response streams events (one JSON object per
// line), starting after the request's contract.StreamSince position. A
// contract.Reset frame tells an edge that fell off the log, or is ahead of
// it, to drop everything and continue from the head. The stream ends with
// the request body: an edge that cannot acknowledge is gone.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token := h.token(r)
	if token == 0 {
		// An edge left on a token that was removed says so here (its
		// name and address, never what it presented).
		slog.WarnContext(r.Context(), "edge refused: a token the purge channel does not accept",
			"edge", r.URL.Query().Get(contract.StreamName)+"@"+r.RemoteAddr)
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
	// Which token it presented (by position, never the token), so that
	// whoever replaces a token sees when no edge uses the old one.
	slog.InfoContext(r.Context(), "edge connected to the purge channel", "edge", e.name, "token", token, "tokens", len(h.tokens))
	// Register before reading the log, so no event falls between the two:
	// the tailer hands the queues every event past head under the lock
	// that registers, and the log holds every event up to head.
	h.mu.Lock()
	h.conns++
	e.id = h.conns
	head := h.delivered
	// An edge ahead of the log has nothing to acknowledge before head+1.
	e.acked = min(since, head)
	h.edges[e] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.edges, e)
		h.mu.Unlock()
		close(e.gone)
		wake(h.ackKick)
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

	// On a shared store, the other hubs learn of the edge before it is
	// ready, so that their Publish waits for it from then on. The edge has
	// its answer meanwhile.
	if h.opts.Shared {
		if rc.Flush() != nil {
			return
		}
		done := make(chan struct{})
		select {
		case h.recorded <- done:
			select {
			case <-done:
			case <-r.Context().Done():
				return
			}
		case <-h.closing:
		case <-r.Context().Done():
			return
		}
	}

	acksEnded := make(chan struct{}) // closed when the edge can acknowledge no more
	go func() {
		defer close(acksEnded)
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			if n, err := strconv.ParseUint(strings.TrimSpace(sc.Text()), 10, 64); err == nil {
				e.ack(n)
				wake(h.ackKick)
			}
		}
	}()

	// Events committed before the edge connected may not have reached
	// this hub's tailer yet (it reads the log after each append, or every
	// PollInterval): the replay goes up to the log's head in the store, so
	// Ready means caught up with every event acknowledged to a publisher;
	// the queue then skips what the replay sent.
	if last, err := lastSeq(r.Context(), h.store); err != nil {
		slog.WarnContext(r.Context(), "could not read the edge event log's head; replaying what this origin delivered", "error", err)
	} else if last > head {
		head = last
	}
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
		it := h.store.Iterate(r.Context(), []byte(prefix), kv.IterOptions{After: eventKey(since)})
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
	ticker := time.NewTicker(contract.HeartbeatInterval)
	defer ticker.Stop()
	// The stream ends when the edge acknowledged nothing for an ack
	// timeout while events were outstanding: connected but dead (its host
	// gone without a FIN), it would hold every Publish, here and on the
	// other origins, until TCP noticed, many minutes later. A live edge
	// reconnects and replays what it missed. The check runs every ack
	// timeout while events are outstanding, so the end comes one to two
	// of them after the last acknowledgement.
	due := time.NewTimer(h.opts.AckTimeout)
	defer due.Stop()
	checked := e.position()
	outstanding := sent > checked
	if !outstanding {
		due.Stop()
	}
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
			if !outstanding {
				outstanding, checked = true, e.position()
				due.Reset(h.opts.AckTimeout)
			}
		case <-due.C:
			acked := e.position()
			switch {
			case acked >= sent:
				outstanding = false
			case acked == checked:
				slog.WarnContext(r.Context(), "edge acknowledged nothing within the ack timeout; its stream ends", "edge", e.name,
					"acked", acked, "sent", sent, "ack_timeout", h.opts.AckTimeout)
				return
			default:
				checked = acked
				due.Reset(h.opts.AckTimeout)
			}
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
