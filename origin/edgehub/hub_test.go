package edgehub_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/origin/api"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apierr"
	"github.com/pictorhq/pictor/origin/edgehub"
)

const (
	token = "edge-token-0123456789abcdef"
	// wait bounds every wait for something that must happen.
	wait = 10 * time.Second
)

// origin is a hub over a real pebble store, served over loopback.
type origin struct {
	hub   *edgehub.Hub
	url   string
	store kv.Store
	stop  func()
}

// openStore opens a pebble store in dir.
func openStore(t *testing.T, dir string) kv.Store {
	t.Helper()
	s, err := pebblekv.Open(dir, pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// serve opens the hub over the store in dir and serves it. stop (also run
// when the test ends) closes the hub, the server and the store, in that
// order, so that dir can be opened again.
func serve(t *testing.T, dir string, opts ...edgehub.Options) *origin {
	t.Helper()
	store := openStore(t, dir)
	hub, err := edgehub.New(t.Context(), store, token, opts...)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	srv := httptest.NewServer(hub)
	var once sync.Once
	o := &origin{hub: hub, url: srv.URL, store: store, stop: func() {
		once.Do(func() {
			hub.Close()
			srv.Close()
			if err := store.Close(); err != nil {
				t.Errorf("close store: %v", err)
			}
		})
	}}
	t.Cleanup(o.stop)
	return o
}

// behindRouter serves the hub as the origin does, through its router with
// the default limits on request bodies, and returns the server's URL.
func behindRouter(t *testing.T, hub *edgehub.Hub) string {
	t.Helper()
	rt := api.New(api.Config{Body: &api.BodyRate{Grace: 15 * time.Second, MinRate: 4 << 10}}, []api.Route{
		{Method: http.MethodPost, Pattern: contract.StreamPath, Public: true, Handler: hub.ServeHTTP},
	})
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)
	return srv.URL
}

// stream is one edge connection, read by a goroutine.
type stream struct {
	resp   *http.Response
	frames chan contract.Event // closed when the response ends
	acks   *io.PipeWriter
}

// connect opens the purge channel as an edge at position since ("" sends
// no position).
func connect(t *testing.T, base, since string) *stream {
	t.Helper()
	pr, acks := io.Pipe()
	resp := open(t, base, "Bearer "+token, since, pr)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream answered %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("stream Content-Type = %q", ct)
	}
	s := &stream{resp: resp, frames: make(chan contract.Event, 4096), acks: acks}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.frames)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var ev contract.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("frame %q: %v", sc.Bytes(), err)
				return
			}
			s.frames <- ev
		}
	}()
	t.Cleanup(func() {
		acks.Close()
		resp.Body.Close()
		<-done
	})
	return s
}

// open POSTs body to the channel with the Authorization header auth.
func open(t *testing.T, base, auth, since string, body io.Reader) *http.Response {
	t.Helper()
	q := url.Values{contract.StreamName: {"test-edge"}}
	if since != "" {
		q.Set(contract.StreamSince, since)
	}
	req, err := http.NewRequest(http.MethodPost, base+contract.StreamPath+"?"+q.Encode(), body)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	t.Cleanup(client.CloseIdleConnections)
	resp, err := client.Do(req)
	if err != nil {
		if c, ok := body.(io.Closer); ok {
			c.Close()
		}
		t.Fatal(err)
	}
	return resp
}

// next returns the next frame.
func (s *stream) next(t *testing.T) contract.Event {
	t.Helper()
	select {
	case ev, ok := <-s.frames:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(wait):
		t.Fatalf("no frame within %v", wait)
	}
	panic("unreachable")
}

// until reads frames up to and including the first Ready, which it returns
// with the frames before it.
func (s *stream) until(t *testing.T) (before []contract.Event, ready contract.Event) {
	t.Helper()
	for {
		ev := s.next(t)
		if ev.Kind == contract.Ready {
			return before, ev
		}
		before = append(before, ev)
	}
}

// ack acknowledges seq as an edge does.
func (s *stream) ack(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.acks, line+"\n"); err != nil {
		t.Fatalf("ack %q: %v", line, err)
	}
}

// ended waits for the stream to end.
func (s *stream) ended(t *testing.T) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-s.frames:
			if !ok {
				return
			}
			if ev.Kind != contract.Ready {
				t.Fatalf("unexpected frame %+v before the end", ev)
			}
		case <-deadline:
			t.Fatalf("the stream did not end within %v", wait)
		}
	}
}

// publish runs Publish in a goroutine; its result arrives on the channel.
func publish(ctx context.Context, h *edgehub.Hub, kind string, ids ...string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.Publish(ctx, kind, ids) }()
	return done
}

// published waits for a publish to return nil.
func published(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
	case <-time.After(wait):
		t.Fatalf("Publish did not return within %v", wait)
	}
}

// pending fails when a publish already returned.
func pending(t *testing.T, done <-chan error, why string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("Publish returned (%v) %s", err, why)
	case <-time.After(50 * time.Millisecond):
	}
}

// publishN publishes images.deleted events "img-1" ... "img-n" with no
// edge connected.
func publishN(t *testing.T, h *edgehub.Hub, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := h.Publish(context.Background(), contract.ImagesDeleted, []string{fmt.Sprintf("img-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

func seqs(evs []contract.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Seq
	}
	return out
}

func TestNewRefusesShortToken(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	tests := []struct {
		name  string
		token string
		ok    bool
	}{
		{"empty", "", false},
		{"one short", strings.Repeat("x", contract.MinEdgeToken-1), false},
		{"shortest", strings.Repeat("x", contract.MinEdgeToken), true},
		{"long", strings.Repeat("x", 64), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := edgehub.New(t.Context(), store, tc.token)
			if tc.ok != (err == nil) {
				t.Fatalf("New(%d characters) = %v, want ok %v", len(tc.token), err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), strconv.Itoa(contract.MinEdgeToken)) {
				t.Fatalf("error %q does not name the minimum", err)
			}
			if h != nil {
				h.Close()
			}
		})
	}
}

// TestWrongTokenIs401WithChallenge: only "Bearer <the token>" opens the
// channel; anything else is a 401 carrying the challenge of the realm and
// the standard error body, as application/json like every other error of
// the origin's port. (The requests carry a finished, empty body; an open
// one is TestWrongTokenAnswersAnOpenBody.)
func TestWrongTokenIs401WithChallenge(t *testing.T) {
	o := serve(t, t.TempDir())
	tests := []struct {
		name, auth string
	}{
		{"no credentials", ""},
		{"basic scheme", "Basic " + token},
		{"lowercase scheme", "bearer " + token},
		{"wrong token", "Bearer " + strings.Repeat("w", len(token))},
		{"token prefix", "Bearer " + token[:len(token)-1]},
		{"token with a suffix", "Bearer " + token + "x"},
		{"bare token", token},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := open(t, o.url, tc.auth, "0", strings.NewReader(""))
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", resp.StatusCode)
			}
			if got, want := resp.Header.Get("WWW-Authenticate"), `Bearer realm="`+contract.StreamRealm+`"`; got != want {
				t.Fatalf("WWW-Authenticate = %q, want %q", got, want)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type = %q, want application/json", ct)
			}
			var body apierr.Body
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error != "Unauthorized" || body.StatusCode != 401 || body.Message == "" {
				t.Fatalf("body %+v (%v)", body, err)
			}
		})
	}
	// The right token still works after all those.
	s := connect(t, o.url, "0")
	if _, ready := s.until(t); ready.Seq != 0 {
		t.Fatalf("ready at %d on an empty log", ready.Seq)
	}
}

// TestWrongTokenAnswersAnOpenBody: an edge with a wrong token gets its 401
// at once, although its request body (the acknowledgements) stays open as
// long as the edge runs: the hub must not wait for the body to end (net/http
// drains an unread body before answering, to keep the connection), neither
// served alone nor behind the origin's router, where the wait would last
// the body grace.
func TestWrongTokenAnswersAnOpenBody(t *testing.T) {
	o := serve(t, t.TempDir())
	tests := []struct {
		name, url string
	}{
		{"the hub", o.url},
		{"behind the router", behindRouter(t, o.hub)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			defer pw.Close()
			req, err := http.NewRequest(http.MethodPost, tc.url+contract.StreamPath+"?since=0", pr)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer wrong-token-wrong-token")
			client := &http.Client{Transport: &http.Transport{Proxy: nil}}
			defer client.CloseIdleConnections()
			answered := make(chan error, 1)
			go func() {
				resp, err := client.Do(req)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusUnauthorized {
						err = fmt.Errorf("status %d, want 401", resp.StatusCode)
					}
				}
				answered <- err
			}()
			// Well within the body grace and the hub's AckTimeout.
			select {
			case err := <-answered:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(edgehub.AckTimeout / 2):
				t.Fatal("no answer to a wrong token while the request body is open")
			}
		})
	}
}

// TestReplaySince: a connecting edge gets every event after its position,
// in order, then a Ready frame naming the last one.
func TestReplaySince(t *testing.T) {
	o := serve(t, t.TempDir())
	publishN(t, o.hub, 1, 5) // no edge: each returns at once
	tests := []struct {
		name      string
		since     string
		want      []uint64
		wantReady uint64
	}{
		{"from the start", "0", []uint64{1, 2, 3, 4, 5}, 5},
		{"no position", "", []uint64{1, 2, 3, 4, 5}, 5},
		{"unreadable position", "yesterday", []uint64{1, 2, 3, 4, 5}, 5},
		{"midway", "2", []uint64{3, 4, 5}, 5},
		{"one behind", "4", []uint64{5}, 5},
		{"caught up", "5", []uint64{}, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := connect(t, o.url, tc.since)
			got, ready := s.until(t)
			if !slices.Equal(seqs(got), tc.want) {
				t.Fatalf("replayed %v, want %v", seqs(got), tc.want)
			}
			for _, ev := range got {
				if ev.Kind != contract.ImagesDeleted || !slices.Equal(ev.IDs, []string{fmt.Sprintf("img-%d", ev.Seq)}) {
					t.Fatalf("replayed %+v", ev)
				}
			}
			if ready.Seq != tc.wantReady || len(ready.IDs) != 0 {
				t.Fatalf("ready frame %+v, want seq %d", ready, tc.wantReady)
			}
		})
	}
}

// TestLogSurvivesRestart: a hub opened again over the same store replays
// what the last one logged and continues its numbering.
func TestLogSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	first := serve(t, dir)
	publishN(t, first.hub, 1, 3)
	first.stop()

	second := serve(t, dir)
	publishN(t, second.hub, 4, 1)
	got, ready := connect(t, second.url, "1").until(t)
	if !slices.Equal(seqs(got), []uint64{2, 3, 4}) || ready.Seq != 4 {
		t.Fatalf("after a restart: replayed %v, ready at %d; want [2 3 4], 4", seqs(got), ready.Seq)
	}
	if got[2].IDs[0] != "img-4" {
		t.Fatalf("the event after the restart is %+v", got[2])
	}
}

// TestResetWhenFurtherBehindThanRetention: an edge whose position is more
// than Retention events behind the head gets one Reset frame at the head
// instead of a replay; one exactly Retention behind is replayed. The log is
// laid out directly (its last event far past Retention) instead of being
// published event by event.
func TestResetWhenFurtherBehindThanRetention(t *testing.T) {
	const head = edgehub.Retention + 5
	// seeded is a store directory whose log's only event is head.
	seeded := func() string {
		dir := t.TempDir()
		store := openStore(t, dir)
		raw, _ := json.Marshal(contract.Event{Seq: head, Kind: contract.TagsPurged, IDs: []string{"tpl:t1"}})
		if err := store.Put(edgehub.EventKey(head), raw); err != nil {
			t.Fatal(err)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	o := serve(t, seeded())

	tests := []struct {
		name  string
		since uint64
		reset bool
	}{
		{"from the start", 0, true},
		{"one past the retention", head - edgehub.Retention - 1, true},
		{"exactly the retention", head - edgehub.Retention, false},
		{"close behind", head - 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := connect(t, o.url, strconv.FormatUint(tc.since, 10))
			got, ready := s.until(t)
			if len(got) != 1 {
				t.Fatalf("frames before ready: %+v, want one", got)
			}
			want := contract.Event{Seq: head, Kind: contract.TagsPurged, IDs: []string{"tpl:t1"}}
			if tc.reset {
				want = contract.Event{Seq: head, Kind: contract.Reset}
			}
			if got[0].Seq != want.Seq || got[0].Kind != want.Kind || !slices.Equal(got[0].IDs, want.IDs) {
				t.Fatalf("frame %+v, want %+v", got[0], want)
			}
			if ready.Seq != head {
				t.Fatalf("ready at %d, want %d", ready.Seq, head)
			}
		})
	}

	// After a Reset, the edge follows live events from the head. (The
	// streams above may not have ended yet: Publish hands them the event,
	// then stops waiting for each as it ends.)
	s := connect(t, o.url, "0")
	if first, _ := s.until(t); first[0].Kind != contract.Reset {
		t.Fatalf("no reset: %+v", first)
	}
	done := publish(context.Background(), o.hub, contract.OrgSuspended, "org-1")
	ev := s.next(t)
	if ev.Seq != head+1 || ev.Kind != contract.OrgSuspended || !slices.Equal(ev.IDs, []string{"org-1"}) {
		t.Fatalf("live event after the reset: %+v", ev)
	}
	s.ack(t, strconv.FormatUint(ev.Seq, 10))
	published(t, done)
}

// TestPublishWaitsForEveryConnectedEdge: Publish returns only once each
// connected edge acknowledged the event. One edge acknowledges what it
// gets at once, the other holds its acknowledgement; Publish waits for it,
// whichever of the two the hub serves first.
func TestPublishWaitsForEveryConnectedEdge(t *testing.T) {
	o := serve(t, t.TempDir())
	prompt, held := connect(t, o.url, "0"), connect(t, o.url, "0")
	// An edge is registered once it has its Ready frame.
	prompt.until(t)
	held.until(t)
	promptGot := make(chan contract.Event, 16)
	go func() { // the prompt edge acknowledges everything at once
		defer close(promptGot)
		for ev := range prompt.frames {
			if _, err := fmt.Fprintf(prompt.acks, "%d\n", ev.Seq); err != nil {
				return
			}
			promptGot <- ev
		}
	}()

	done := publish(context.Background(), o.hub, contract.ImagesDeleted, "img-1", "img-2")
	ev := held.next(t)
	if ev.Seq != 1 || ev.Kind != contract.ImagesDeleted || !slices.Equal(ev.IDs, []string{"img-1", "img-2"}) {
		t.Fatalf("live event %+v", ev)
	}
	pending(t, done, "before the holding edge acknowledged")
	// Lines that are no number are ignored.
	held.ack(t, "not a number")
	pending(t, done, "after an unreadable acknowledgement")
	held.ack(t, "  1  ")
	published(t, done)
	select {
	case ev, ok := <-promptGot:
		if !ok || ev.Seq != 1 {
			t.Fatalf("the prompt edge got %+v (%v)", ev, ok)
		}
	case <-time.After(wait):
		t.Fatal("Publish returned before the prompt edge had the event")
	}

	// A later position acknowledges an earlier event too.
	done = publish(context.Background(), o.hub, contract.KeyDisabled, "api-1")
	if ev := held.next(t); ev.Seq != 2 {
		t.Fatalf("second event %+v", ev)
	}
	pending(t, done, "before the second acknowledgement")
	held.ack(t, "7")
	published(t, done)
}

// TestPublishGivesUpWithItsContext: an edge that never acknowledges holds
// Publish only until its context ends, and without an error (the edge
// replays the event when it reconnects).
func TestPublishGivesUpWithItsContext(t *testing.T) {
	o := serve(t, t.TempDir())
	silent := connect(t, o.url, "0")
	silent.until(t)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	published(t, publish(ctx, o.hub, contract.ImagesDeleted, "img-1"))
	if ev := silent.next(t); ev.Seq != 1 {
		t.Fatalf("live event %+v", ev)
	}
	// The edge is still connected: the next event reaches it.
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	published(t, publish(ctx, o.hub, contract.ImagesDeleted, "img-2"))
	if ev := silent.next(t); ev.Seq != 2 {
		t.Fatalf("live event %+v", ev)
	}
	// The events are in the log all the same.
	got, _ := connect(t, o.url, "0").until(t)
	if !slices.Equal(seqs(got), []uint64{1, 2}) {
		t.Fatalf("replayed %v, want [1 2]", seqs(got))
	}
}

// TestUnacknowledgingEdgeIsCutOff: a stream whose edge acknowledges
// nothing for AckTimeout while an event is outstanding (connected, but
// dead behind its connection) ends, so that the edge holds no other
// Publish; a live one replays the event on its next stream. A Publish that
// gives up with its caller's context ends nothing
// (TestPublishGivesUpWithItsContext).
func TestUnacknowledgingEdgeIsCutOff(t *testing.T) {
	o := serve(t, t.TempDir(), edgehub.Options{AckTimeout: time.Second})
	silent := connect(t, o.url, "0")
	silent.until(t)
	published(t, publish(context.Background(), o.hub, contract.ImagesDeleted, "img-1"))
	if ev := silent.next(t); ev.Seq != 1 {
		t.Fatalf("live event %+v", ev)
	}
	silent.ended(t)

	again := connect(t, o.url, "0")
	if replayed, ready := again.until(t); !slices.Equal(seqs(replayed), []uint64{1}) || ready.Seq != 1 {
		t.Fatalf("replayed %v, ready at %d; want [1] at 1", seqs(replayed), ready.Seq)
	}
	again.ack(t, "1")
	done := publish(context.Background(), o.hub, contract.ImagesDeleted, "img-2")
	if ev := again.next(t); ev.Seq != 2 {
		t.Fatalf("live event %+v", ev)
	}
	again.ack(t, "2")
	published(t, done)
}

// TestSlowEdgeIsKept: an edge that acknowledges slowly, but something
// within every AckTimeout, keeps its stream while it works through more
// events than it acknowledges in one.
func TestSlowEdgeIsKept(t *testing.T) {
	const ackTimeout = 2 * time.Second
	o := serve(t, t.TempDir(), edgehub.Options{AckTimeout: ackTimeout})
	slow := connect(t, o.url, "0")
	slow.until(t)
	done := make([]<-chan error, 4)
	for i := range done {
		done[i] = publish(context.Background(), o.hub, contract.ImagesDeleted, fmt.Sprintf("img-%d", i+1))
		if ev := slow.next(t); ev.Seq != uint64(i+1) {
			t.Fatalf("live event %+v, want %d", ev, i+1)
		}
	}
	// One acknowledgement every 0.3 ack timeouts: the last comes after the first
	// check (at AckTimeout), which sees progress, and before the second.
	tick := time.NewTicker(ackTimeout * 3 / 10)
	defer tick.Stop()
	for i := range done {
		<-tick.C
		slow.ack(t, strconv.Itoa(i+1))
	}
	for _, d := range done {
		published(t, d)
	}
	done = []<-chan error{publish(context.Background(), o.hub, contract.ImagesDeleted, "img-5")}
	if ev := slow.next(t); ev.Seq != 5 {
		t.Fatalf("live event %+v: the stream did not last", ev)
	}
	slow.ack(t, "5")
	published(t, done[0])
}

// TestPublishPushesToEveryEdgeBeforeWaiting: an event reaches every
// connected edge at once, while none has acknowledged it yet, instead of
// one edge after the other as each acknowledges (or AckTimeout passes).
func TestPublishPushesToEveryEdgeBeforeWaiting(t *testing.T) {
	o := serve(t, t.TempDir())
	edges := []*stream{connect(t, o.url, "0"), connect(t, o.url, "0"), connect(t, o.url, "0")}
	for _, s := range edges {
		s.until(t)
	}
	done := publish(context.Background(), o.hub, contract.ImagesDeleted, "img-1")
	for i, s := range edges {
		select {
		case ev := <-s.frames:
			if ev.Seq != 1 {
				t.Fatalf("edge %d got %+v", i, ev)
			}
		case <-time.After(edgehub.AckTimeout / 2):
			t.Fatalf("edge %d did not get the event while the others had not acknowledged it", i)
		}
	}
	for _, s := range edges {
		pending(t, done, "before every edge acknowledged")
		s.ack(t, "1")
	}
	published(t, done)
}

// TestPublishDoesNotWaitForAGoneEdge: an edge that leaves before it
// acknowledges is no longer waited for (it replays the event when it comes
// back), whether it hangs up or only ends its acknowledgements, which ends
// its stream.
func TestPublishDoesNotWaitForAGoneEdge(t *testing.T) {
	tests := []struct {
		name  string
		leave func(*stream)
	}{
		{"hangs up", func(s *stream) { s.acks.Close(); s.resp.Body.Close() }},
		{"ends its acknowledgements", func(s *stream) { s.acks.Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := serve(t, t.TempDir())
			s := connect(t, o.url, "0")
			s.until(t)
			done := publish(context.Background(), o.hub, contract.ImagesDeleted, "img-1")
			if ev := s.next(t); ev.Seq != 1 {
				t.Fatalf("event %+v", ev)
			}
			tc.leave(s)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Publish: %v", err)
				}
			case <-time.After(edgehub.AckTimeout / 2):
				t.Fatal("Publish is still waiting for an edge that left")
			}
			s.ended(t)
		})
	}
}

// TestEdgeAheadOfTheLogGetsNewEvents: an edge whose position is past the
// head of the log (the origin's store was restored from a backup, or is a
// new one) gets a Reset frame at the head, since its position means nothing
// against this log, then every event logged from now on, and Publish waits
// for it.
func TestEdgeAheadOfTheLogGetsNewEvents(t *testing.T) {
	tests := []struct {
		name string
		head int
	}{
		{"restored store", 2},
		{"new store", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := serve(t, t.TempDir())
			publishN(t, o.hub, 1, tc.head)
			head := uint64(tc.head)
			s := connect(t, o.url, "50")
			before, ready := s.until(t)
			if len(before) != 1 || before[0].Kind != contract.Reset || before[0].Seq != head || ready.Seq != head {
				t.Fatalf("frames %+v then ready at %d, want a reset at %d", before, ready.Seq, head)
			}
			s.ack(t, strconv.FormatUint(head, 10))

			done := publish(context.Background(), o.hub, contract.ImagesDeleted, "img-new")
			ev := s.next(t)
			if ev.Seq != head+1 || ev.Kind != contract.ImagesDeleted || !slices.Equal(ev.IDs, []string{"img-new"}) {
				t.Fatalf("live event %+v, want img-new at %d", ev, head+1)
			}
			pending(t, done, "before the edge acknowledged")
			s.ack(t, strconv.FormatUint(ev.Seq, 10))
			published(t, done)
		})
	}
}

// TestConcurrentPublishersLoseNoEvent: events published from many
// goroutines reach every connected edge once each, in the order of their
// numbers. (Were an event handed to a stream after a later one, the stream
// would skip it as already sent, and the edge's acknowledgement of the
// later one would release its Publish too: a purge lost for an edge that
// already stored a later position.)
func TestConcurrentPublishersLoseNoEvent(t *testing.T) {
	const publishers, each, edges = 16, 100, 3
	const total = publishers * each
	o := serve(t, t.TempDir())

	// received is what one edge got, in order; all is closed once it has
	// the last event.
	type received struct {
		mu  sync.Mutex
		got []uint64
		all chan struct{}
	}
	var recs []*received
	for range edges {
		s := connect(t, o.url, "0")
		s.until(t)
		rec := &received{all: make(chan struct{})}
		recs = append(recs, rec)
		go func() { // the edge: acknowledge everything as it arrives
			for ev := range s.frames {
				if ev.Kind == contract.Ready {
					continue
				}
				rec.mu.Lock()
				rec.got = append(rec.got, ev.Seq)
				rec.mu.Unlock()
				if _, err := fmt.Fprintf(s.acks, "%d\n", ev.Seq); err != nil {
					return
				}
				if ev.Seq == total {
					close(rec.all)
				}
			}
		}()
	}

	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				if err := o.hub.Publish(context.Background(), contract.ImagesDeleted, []string{fmt.Sprintf("p%d-%d", p, i)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for n, rec := range recs {
		select {
		case <-rec.all:
		case <-time.After(wait):
			t.Fatalf("edge %d did not get event %d", n, total)
		}
		rec.mu.Lock()
		var last uint64
		for _, seq := range rec.got {
			if seq != last+1 {
				t.Errorf("edge %d: event %d arrived after %d: event %d never did", n, seq, last, last+1)
				break
			}
			last = seq
		}
		if len(rec.got) != total {
			t.Errorf("edge %d got %d events, want %d", n, len(rec.got), total)
		}
		rec.mu.Unlock()
	}
}

// TestPublishOfNothing appends no event.
func TestPublishOfNothing(t *testing.T) {
	o := serve(t, t.TempDir())
	s := connect(t, o.url, "0")
	s.until(t)
	published(t, publish(context.Background(), o.hub, contract.ImagesDeleted))
	done := publish(context.Background(), o.hub, contract.ImagesDeleted, "img-1")
	if ev := s.next(t); ev.Seq != 1 {
		t.Fatalf("the first event is %d, want 1: an empty publish took a number", ev.Seq)
	}
	s.ack(t, "1")
	published(t, done)
}

// TestCloseEndsStreams: Close ends every open stream, and a stream opened
// afterwards ends right after its Ready frame instead of staying open.
func TestCloseEndsStreams(t *testing.T) {
	o := serve(t, t.TempDir())
	publishN(t, o.hub, 1, 2)
	streams := []*stream{connect(t, o.url, "0"), connect(t, o.url, "2")}
	for _, s := range streams {
		s.until(t)
	}
	o.hub.Close()
	o.hub.Close() // twice is harmless
	for _, s := range streams {
		s.ended(t)
	}
	late := connect(t, o.url, "0")
	if got, ready := late.until(t); len(got) != 2 || ready.Seq != 2 {
		t.Fatalf("after Close: replayed %v, ready at %d", seqs(got), ready.Seq)
	}
	late.ended(t)
}
