package edgehub_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/edgehub"
)

// These tests run two hubs on one store, as two origins sharing a
// PostgreSQL database do: on two connections to one real PostgreSQL
// database, and on one pebble store (two hubs of one process, which take
// the same path through the store).

// shared runs test on each backend, with the two handles of its store.
func shared(t *testing.T, test func(t *testing.T, a, b kv.Store)) {
	for _, bk := range storetest.Backends() {
		t.Run(bk.Name, func(t *testing.T) {
			s := bk.Pair(t)
			test(t, s[0], s[1])
		})
	}
}

// serveShared serves a hub over a shared store; opts.PollInterval is
// short unless set. stop (also run when the test ends) closes the hub and
// its server; the store stays open.
func serveShared(t *testing.T, store kv.Store, opts edgehub.Options) *origin {
	t.Helper()
	opts.Shared = true
	if opts.PollInterval == 0 {
		opts.PollInterval = 20 * time.Millisecond
	}
	hub, err := edgehub.New(t.Context(), store, token, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(hub)
	var once sync.Once
	o := &origin{hub: hub, url: srv.URL, store: store, stop: func() {
		once.Do(func() {
			hub.Close()
			srv.Close()
		})
	}}
	t.Cleanup(o.stop)
	return o
}

// follower is an edge that acknowledges each event as it arrives.
type follower struct {
	mu      sync.Mutex
	got     []contract.Event
	changed chan struct{} // closed and replaced at every event
}

// follow acknowledges every event of s, which has its Ready frame.
func follow(s *stream) *follower {
	f := &follower{changed: make(chan struct{})}
	go func() {
		for ev := range s.frames {
			if ev.Kind == contract.Ready {
				continue
			}
			f.mu.Lock()
			f.got = append(f.got, ev)
			close(f.changed)
			f.changed = make(chan struct{})
			f.mu.Unlock()
			if _, err := fmt.Fprintf(s.acks, "%d\n", ev.Seq); err != nil {
				return
			}
		}
	}()
	return f
}

// upTo waits until the edge has event seq and returns what it got.
func (f *follower) upTo(t *testing.T, seq uint64) []contract.Event {
	t.Helper()
	deadline := time.After(wait)
	for {
		f.mu.Lock()
		got, ch := slices.Clone(f.got), f.changed
		f.mu.Unlock()
		if n := len(got); n > 0 && got[n-1].Seq >= seq {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("the edge did not get event %d within %v; it got %v", seq, wait, seqs(got))
		}
	}
}

// dense fails unless evs are the events 1..n, each once, in order.
func dense(t *testing.T, who string, evs []contract.Event, n int) {
	t.Helper()
	want := make([]uint64, n)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if got := seqs(evs); !slices.Equal(got, want) {
		t.Fatalf("%s got events %v, want 1..%d once each in order", who, got, n)
	}
}

// acks counts the acknowledgement records in store.
func acks(t *testing.T, store kv.Store) int {
	t.Helper()
	it := store.Iterate(t.Context(), []byte(edgehub.AckPrefix), kv.IterOptions{})
	defer it.Close()
	n := 0
	for it.Next() {
		n++
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// returns waits for a publish to return nil within limit.
func returns(t *testing.T, done <-chan error, limit time.Duration, why string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
	case <-time.After(limit):
		t.Fatalf("Publish did not return within %v: %s", limit, why)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	tests := []struct {
		name string
		opts []edgehub.Options
		want string // in the error; "" for none
	}{
		{"none", nil, ""},
		{"zero", []edgehub.Options{{}}, ""},
		{"shared", []edgehub.Options{{Shared: true, PollInterval: time.Second, AckTimeout: time.Second}}, ""},
		{"negative poll interval", []edgehub.Options{{PollInterval: -1}}, "poll interval"},
		{"negative ack timeout", []edgehub.Options{{AckTimeout: -1}}, "ack timeout"},
		{"two", []edgehub.Options{{}, {}}, "more than one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := edgehub.New(t.Context(), store, token, tc.opts...)
			if h != nil {
				h.Close()
			}
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("New = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// TestSharedHubsDeliverEveryEvent: events published on either origin reach
// the edges of both, numbered densely in the order they were published,
// each once.
func TestSharedHubsDeliverEveryEvent(t *testing.T) {
	shared(t, func(t *testing.T, sa, sb kv.Store) {
		a, b := serveShared(t, sa, edgehub.Options{}), serveShared(t, sb, edgehub.Options{})
		ca, cb := connect(t, a.url, "0"), connect(t, b.url, "0")
		ca.until(t)
		cb.until(t)
		fa, fb := follow(ca), follow(cb)
		plan := []struct {
			on *origin
			id string
		}{{a, "a-1"}, {b, "b-1"}, {a, "a-2"}, {a, "a-3"}, {b, "b-2"}, {b, "b-3"}, {a, "a-4"}}
		for _, p := range plan {
			if err := p.on.hub.Publish(context.Background(), contract.ImagesDeleted, []string{p.id}); err != nil {
				t.Fatal(err)
			}
		}
		// One more event: once an edge has it, it has every duplicate the
		// others would have brought.
		if err := b.hub.Publish(context.Background(), contract.OrgSuspended, []string{"org-last"}); err != nil {
			t.Fatal(err)
		}
		n := len(plan) + 1
		for who, f := range map[string]*follower{"the edge on A": fa, "the edge on B": fb} {
			got := f.upTo(t, uint64(n))
			dense(t, who, got, n)
			for i, p := range plan {
				if got[i].Kind != contract.ImagesDeleted || !slices.Equal(got[i].IDs, []string{p.id}) {
					t.Fatalf("%s: event %d is %+v, want %s", who, i+1, got[i], p.id)
				}
			}
		}
		// An edge connecting to either origin replays the same log.
		for _, o := range []*origin{a, b} {
			replayed, ready := connect(t, o.url, "0").until(t)
			dense(t, "a replaying edge", replayed, n)
			if ready.Seq != uint64(n) {
				t.Fatalf("ready at %d, want %d", ready.Seq, n)
			}
		}
	})
}

// TestSharedConcurrentPublishers: events published at once on both
// origins get unique, dense numbers, and every edge of either origin gets
// the same events in the same order, each once.
func TestSharedConcurrentPublishers(t *testing.T) {
	shared(t, func(t *testing.T, sa, sb kv.Store) {
		const publishers, each = 3, 8 // per origin
		const total = 2 * publishers * each
		a, b := serveShared(t, sa, edgehub.Options{}), serveShared(t, sb, edgehub.Options{})
		var fs []*follower
		for _, o := range []*origin{a, b, a, b} {
			s := connect(t, o.url, "0")
			s.until(t)
			fs = append(fs, follow(s))
		}
		var wg sync.WaitGroup
		for _, o := range []*origin{a, b} {
			for p := range publishers {
				wg.Go(func() {
					for i := range each {
						id := fmt.Sprintf("%s-%d-%d", o.url, p, i)
						if err := o.hub.Publish(context.Background(), contract.ImagesDeleted, []string{id}); err != nil {
							t.Error(err)
						}
					}
				})
			}
		}
		wg.Wait()
		first := fs[0].upTo(t, total)
		dense(t, "edge 0", first, total)
		ids := map[string]bool{}
		for _, ev := range first {
			ids[ev.IDs[0]] = true
		}
		if len(ids) != total {
			t.Fatalf("%d distinct events of %d published", len(ids), total)
		}
		for n, f := range fs[1:] {
			got := f.upTo(t, total)
			dense(t, fmt.Sprintf("edge %d", n+1), got, total)
			for i := range got {
				if !slices.Equal(got[i].IDs, first[i].IDs) {
					t.Fatalf("edge %d: event %d is %v, edge 0 got %v", n+1, i+1, got[i].IDs, first[i].IDs)
				}
			}
		}
	})
}

// TestSharedPublishWaitsForAnEdgeOfAnotherOrigin: Publish returns only
// after an edge connected to the other origin acknowledged the event.
func TestSharedPublishWaitsForAnEdgeOfAnotherOrigin(t *testing.T) {
	shared(t, func(t *testing.T, sa, sb kv.Store) {
		a, b := serveShared(t, sa, edgehub.Options{}), serveShared(t, sb, edgehub.Options{})
		held := connect(t, b.url, "0")
		held.until(t)
		var acked atomic.Bool
		done := make(chan bool, 1) // whether the edge had acknowledged when Publish returned
		go func() {
			if err := a.hub.Publish(context.Background(), contract.ImagesDeleted, []string{"img-1"}); err != nil {
				t.Error(err)
			}
			done <- acked.Load()
		}()
		ev := held.next(t)
		if ev.Seq != 1 || ev.Kind != contract.ImagesDeleted || !slices.Equal(ev.IDs, []string{"img-1"}) {
			t.Fatalf("the edge on B got %+v", ev)
		}
		select {
		case <-done:
			t.Fatal("Publish returned before the edge on the other origin acknowledged")
		case <-time.After(100 * time.Millisecond):
		}
		acked.Store(true)
		held.ack(t, "1")
		select {
		case before := <-done:
			if !before {
				t.Fatal("Publish returned before the edge on the other origin acknowledged")
			}
		case <-time.After(wait):
			t.Fatalf("Publish did not return within %v of the acknowledgement", wait)
		}

		// Closing B removes its records: nothing waits for its edges.
		if n := acks(t, sa); n != 1 {
			t.Fatalf("%d acknowledgement records with one edge connected, want 1", n)
		}
		b.stop()
		if n := acks(t, sa); n != 0 {
			t.Fatalf("%d acknowledgement records after the origin closed, want 0", n)
		}
	})
}

// TestSharedSilentEdgeHoldsPublishUntilAckTimeout: an edge of the other
// origin that never acknowledges holds Publish for AckTimeout, not longer,
// and replays the event when it reconnects (to either origin).
func TestSharedSilentEdgeHoldsPublishUntilAckTimeout(t *testing.T) {
	shared(t, func(t *testing.T, sa, sb kv.Store) {
		const ackTimeout = 300 * time.Millisecond
		a, b := serveShared(t, sa, edgehub.Options{AckTimeout: ackTimeout}), serveShared(t, sb, edgehub.Options{})
		silent := connect(t, b.url, "0")
		silent.until(t)
		start := time.Now()
		published(t, publish(context.Background(), a.hub, contract.KeyDisabled, "api-1"))
		if took := time.Since(start); took < ackTimeout {
			t.Fatalf("Publish returned after %v, before AckTimeout %v: it did not wait for the edge", took, ackTimeout)
		}
		if ev := silent.next(t); ev.Seq != 1 || ev.Kind != contract.KeyDisabled {
			t.Fatalf("the silent edge got %+v", ev)
		}
		for _, o := range []*origin{a, b} {
			replayed, ready := connect(t, o.url, "0").until(t)
			if len(replayed) != 1 || replayed[0].Kind != contract.KeyDisabled || ready.Seq != 1 {
				t.Fatalf("the reconnected edge replayed %+v, ready at %d", replayed, ready.Seq)
			}
		}
	})
}

// TestSharedDeadEdgeIsCutOff: an edge of the other origin that
// acknowledges nothing for that origin's AckTimeout is cut off there, and
// its record goes with its stream: a Publish here, whose own AckTimeout is
// far longer, stops waiting for it.
func TestSharedDeadEdgeIsCutOff(t *testing.T) {
	shared(t, func(t *testing.T, sa, sb kv.Store) {
		a, b := serveShared(t, sa, edgehub.Options{}), serveShared(t, sb, edgehub.Options{AckTimeout: 300 * time.Millisecond})
		dead := connect(t, b.url, "0")
		dead.until(t)
		done := publish(context.Background(), a.hub, contract.KeyDisabled, "api-1")
		if ev := dead.next(t); ev.Seq != 1 || ev.Kind != contract.KeyDisabled {
			t.Fatalf("the dead edge got %+v", ev)
		}
		dead.ended(t)
		returns(t, done, edgehub.AckTimeout/2, "once the dead edge was cut off")
		if n := acks(t, sa); n != 0 {
			t.Fatalf("%d acknowledgement records after the only edge was cut off, want 0", n)
		}
	})
}

// TestSharedGoneEdgeIsNotWaitedFor: an edge that leaves the other origin
// before it acknowledges is not waited for, and once it is back (on a new
// connection) only its new connection is.
func TestSharedGoneEdgeIsNotWaitedFor(t *testing.T) {
	shared(t, func(t *testing.T, sa, sb kv.Store) {
		a, b := serveShared(t, sa, edgehub.Options{}), serveShared(t, sb, edgehub.Options{})
		s := connect(t, b.url, "0")
		s.until(t)
		done := publish(context.Background(), a.hub, contract.ImagesDeleted, "img-1")
		if ev := s.next(t); ev.Seq != 1 {
			t.Fatalf("event %+v", ev)
		}
		pending(t, done, "before the edge acknowledged or left")
		s.acks.Close()
		s.resp.Body.Close()
		returns(t, done, edgehub.AckTimeout/2, "it waits for an edge that left")
		// Publish stopped waiting because the edge's record went with it,
		// not because the record grew old.
		if n := acks(t, sa); n != 0 {
			t.Fatalf("%d acknowledgement records after the edge left, want 0", n)
		}

		back := connect(t, b.url, "0")
		if replayed, _ := back.until(t); !slices.Equal(seqs(replayed), []uint64{1}) {
			t.Fatalf("the edge replayed %v, want [1]", seqs(replayed))
		}
		back.ack(t, "1")
		done = publish(context.Background(), a.hub, contract.ImagesDeleted, "img-2")
		if ev := back.next(t); ev.Seq != 2 {
			t.Fatalf("event %+v", ev)
		}
		pending(t, done, "before the reconnected edge acknowledged")
		back.ack(t, "2")
		returns(t, done, edgehub.AckTimeout/2, "it waits for the edge's old connection")
		if n := acks(t, sa); n != 1 {
			t.Fatalf("%d acknowledgement records with one edge connected, want 1", n)
		}
	})
}

// TestSharedStaleRecordsAreIgnoredAndSwept: the record of an edge whose
// origin stopped without removing it (an hour old) holds no Publish, and a
// sweep removes it, but not the record of an edge connected now.
func TestSharedStaleRecordsAreIgnoredAndSwept(t *testing.T) {
	shared(t, func(t *testing.T, sa, sb kv.Store) {
		a, b := serveShared(t, sa, edgehub.Options{}), serveShared(t, sb, edgehub.Options{})
		// Once a hub has recorded an edge, it swept at its start.
		s := connect(t, b.url, "0")
		s.until(t)
		f := follow(s)
		onA := connect(t, a.url, "0")
		onA.until(t)
		follow(onA)
		if err := edgehub.PutAck(sb, "gone-origin", 1, 0, time.Now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		returns(t, publish(context.Background(), a.hub, contract.ImagesDeleted, "img-1"), edgehub.AckTimeout/2,
			"it waits for an edge whose record is an hour old")
		dense(t, "the edge on B", f.upTo(t, 1), 1)
		if n := acks(t, sa); n != 3 {
			t.Fatalf("%d acknowledgement records, want the stale one and the two live ones", n)
		}
		a.hub.Sweep(t.Context())
		if n := acks(t, sa); n != 2 {
			t.Fatalf("%d acknowledgement records after a sweep, want the two live ones", n)
		}
	})
}
