package purgelog_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pictorhq/pictor/edge/origins"
	"github.com/pictorhq/pictor/edge/purgelog"
	"github.com/pictorhq/pictor/origin/contract"
)

// The edge may not import the origin's hub (TestImportsOnlyTheContract):
// these tests speak the purge channel of package contract with an origin
// of their own, over loopback.

const (
	token = "edge-token-0123456789abcdef"
	// wait bounds every wait for something that must happen.
	wait = 10 * time.Second
)

// origin serves the purge channel; each stream it accepts is handed to the
// test, which writes its frames and reads its acknowledgements.
type origin struct {
	url    string
	conns  chan *stream
	tries  atomic.Int32 // streams asked for
	refuse atomic.Int32 // answer this many more streams with 503
	// admit decides whether the try-th stream's Authorization opens it
	// (the edge token by default).
	admit func(auth string, try int32) bool

	mu      sync.Mutex
	streams []*stream
}

// stream is one accepted connection of an edge.
type stream struct {
	auth, since, name string
	frames            chan string // lines to send
	acks              chan uint64 // acknowledgements received
	end               chan struct{}
	endOnce           sync.Once
}

// newOrigin starts an origin. Make it before the subscriber's run, so that
// the subscriber is stopped before the origin ends its streams (rather
// than reconnecting to an origin that is gone).
func newOrigin(t *testing.T) *origin {
	t.Helper()
	o := &origin{conns: make(chan *stream, 64), admit: func(auth string, _ int32) bool { return auth == "Bearer "+token }}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+contract.StreamPath, o.serve)
	srv := httptest.NewServer(mux)
	o.url = srv.URL
	t.Cleanup(func() {
		o.mu.Lock()
		for _, s := range o.streams {
			s.close()
		}
		o.mu.Unlock()
		srv.Close()
	})
	return o
}

func (o *origin) serve(w http.ResponseWriter, r *http.Request) {
	try := o.tries.Add(1)
	// The acknowledgements stay open: an answer that does not read them
	// closes the connection, or net/http would wait for their end.
	if !o.admit(r.Header.Get("Authorization"), try) {
		w.Header().Set("Connection", "close")
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+contract.StreamRealm+`"`)
		http.Error(w, `{"error":"Unauthorized","message":"Invalid edge token","statusCode":401}`, http.StatusUnauthorized)
		return
	}
	if o.refuse.Add(-1) >= 0 {
		w.Header().Set("Connection", "close")
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	s := &stream{auth: r.Header.Get("Authorization"), since: r.URL.Query().Get(contract.StreamSince), name: r.URL.Query().Get(contract.StreamName),
		frames: make(chan string, 1024), acks: make(chan uint64, 1024), end: make(chan struct{})}
	o.mu.Lock()
	o.streams = append(o.streams, s)
	o.mu.Unlock()
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc.Flush()
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			n, err := strconv.ParseUint(sc.Text(), 10, 64)
			if err != nil {
				s.acks <- 1 << 63 // an unreadable acknowledgement fails the test
				continue
			}
			s.acks <- n
		}
	}()
	o.conns <- s
	for {
		select {
		case line := <-s.frames:
			if _, err := fmt.Fprintln(w, line); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		case <-s.end:
			// A plain return, not panic(http.ErrAbortHandler): aborting
			// while the goroutine above is between two reads of the body
			// leaves net/http holding the connection open for good
			// (docs/decisions.md, "A silent purge stream is dropped").
			return
		case <-gone:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// accept returns the next stream an edge opened.
func (o *origin) accept(t *testing.T) *stream {
	t.Helper()
	select {
	case s := <-o.conns:
		return s
	case <-time.After(wait):
		t.Fatalf("the edge did not connect within %v", wait)
	}
	panic("unreachable")
}

// send writes an event frame.
func (s *stream) send(ev contract.Event) {
	raw, _ := json.Marshal(ev)
	s.frames <- string(raw)
}

// ready sends a Ready frame at seq.
func (s *stream) ready(seq uint64) { s.send(contract.Event{Seq: seq, Kind: contract.Ready}) }

// ack waits for the next acknowledgement and checks it.
func (s *stream) ack(t *testing.T, want uint64) {
	t.Helper()
	select {
	case got := <-s.acks:
		if got != want {
			t.Fatalf("acknowledged %d, want %d", got, want)
		}
	case <-time.After(wait):
		t.Fatalf("no acknowledgement of %d within %v", want, wait)
	}
}

// close ends the stream from the origin's side.
func (s *stream) close() { s.endOnce.Do(func() { close(s.end) }) }

// purger records the purges it is asked for, as "image:id", "org:id",
// "tag:id" and "all". A purge of an id in failing fails, once.
type purger struct {
	mu      sync.Mutex
	calls   []string
	failing map[string]bool
}

func (p *purger) record(call string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call)
	if p.failing[call] {
		delete(p.failing, call)
		return errors.New("cache unavailable")
	}
	return nil
}

func (p *purger) PurgeImage(id string) (int, error) { return 1, p.record("image:" + id) }
func (p *purger) PurgeOrg(id string) (int, error)   { return 1, p.record("org:" + id) }
func (p *purger) PurgeTag(tag string) (int, error)  { return 1, p.record("tag:" + tag) }
func (p *purger) PurgeAll() error                   { return p.record("all") }

func (p *purger) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

var _ purgelog.Purger = (*purger)(nil)

// subscribe makes a subscriber of the origin with its state in state.
func subscribe(t *testing.T, o *origin, state string, p purgelog.Purger) *purgelog.Subscriber {
	t.Helper()
	s, err := purgelog.New(purgelog.Config{OriginURL: o.url + "/", Token: token, Name: "edge-1", StateFile: state, Purger: p})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run runs s until the returned stop, which also checks that Run returns
// promptly once its context ends (and runs when the test ends).
func run(t *testing.T, s *purgelog.Subscriber) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(wait):
				t.Errorf("Run did not return within %v of its context's end", wait)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitReady waits for the subscriber's first Ready.
func waitReady(t *testing.T, s *purgelog.Subscriber) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := s.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if !s.Ready() {
		t.Fatal("WaitReady returned but Ready is false")
	}
}

// wantState checks the state file's position.
func wantState(t *testing.T, state string, want uint64) {
	t.Helper()
	raw, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(raw); got != strconv.FormatUint(want, 10)+"\n" {
		t.Fatalf("state file holds %q, want %d", got, want)
	}
}

func TestNewRequiresConfig(t *testing.T) {
	full := purgelog.Config{OriginURL: "http://127.0.0.1:1", Token: token, StateFile: filepath.Join(t.TempDir(), "state"), Purger: &purger{}}
	tests := []struct {
		name string
		edit func(*purgelog.Config)
		ok   bool
	}{
		{"complete", func(*purgelog.Config) {}, true},
		{"no name is fine", func(c *purgelog.Config) { c.Name = "" }, true},
		{"no origin", func(c *purgelog.Config) { c.OriginURL = "" }, false},
		{"no token", func(c *purgelog.Config) { c.Token = "" }, false},
		{"no state file", func(c *purgelog.Config) { c.StateFile = "" }, false},
		{"no purger", func(c *purgelog.Config) { c.Purger = nil }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := full
			tc.edit(&cfg)
			s, err := purgelog.New(cfg)
			if tc.ok != (err == nil) {
				t.Fatalf("New = %v, want ok %v", err, tc.ok)
			}
			if s != nil && (s.Ready() || s.Last() != 0) {
				t.Fatalf("a new subscriber without state: ready %v, last %d", s.Ready(), s.Last())
			}
		})
	}
}

// TestAppliesEachKind: every kind of event reaches the Purger as its ids
// say, and is acknowledged only after the position is on disk.
func TestAppliesEachKind(t *testing.T) {
	tests := []struct {
		name string
		ev   contract.Event
		want []string
	}{
		{"images deleted", contract.Event{Seq: 7, Kind: contract.ImagesDeleted, IDs: []string{"img-a", "img-b"}}, []string{"image:img-a", "image:img-b"}},
		{"organization suspended", contract.Event{Seq: 8, Kind: contract.OrgSuspended, IDs: []string{"org-1"}}, []string{"org:org-1"}},
		{"key disabled", contract.Event{Seq: 9, Kind: contract.KeyDisabled, IDs: []string{contract.KeyTag("api-1")}}, []string{"tag:api-1"}},
		{"tags purged", contract.Event{Seq: 10, Kind: contract.TagsPurged, IDs: []string{contract.TemplateTag("t-1"), "k"}}, []string{"tag:tpl:t-1", "tag:k"}},
		{"reset", contract.Event{Seq: 100_000, Kind: contract.Reset}, []string{"all"}},
		{"unknown kind", contract.Event{Seq: 11, Kind: "images.renamed", IDs: []string{"img-a"}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newOrigin(t)
			state := filepath.Join(t.TempDir(), "deeper", "edge.state") // its directory is made
			p := &purger{}
			s := subscribe(t, o, state, p)
			run(t, s)
			c := o.accept(t)
			c.send(tc.ev)
			c.ack(t, tc.ev.Seq)
			if got := p.got(); !slices.Equal(got, tc.want) {
				t.Fatalf("purges %q, want %q", got, tc.want)
			}
			if s.Last() != tc.ev.Seq {
				t.Fatalf("Last = %d, want %d", s.Last(), tc.ev.Seq)
			}
			wantState(t, state, tc.ev.Seq)
			if _, err := os.Stat(state + ".tmp"); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("temporary state file left behind: %v", err)
			}
		})
	}
}

// TestConnectsAtItsPosition: the stream is opened with the edge token, the
// edge's name and the position of the state file (0 without a readable
// one).
func TestConnectsAtItsPosition(t *testing.T) {
	tests := []struct {
		name      string
		state     *string // nil: no state file
		wantSince string
		wantLast  uint64
	}{
		{"no state file", nil, "0", 0},
		{"a position", ptr("42\n"), "42", 42},
		{"spaces around it", ptr("  42 \n"), "42", 42},
		{"unreadable", ptr("forty-two"), "0", 0},
		{"empty", ptr(""), "0", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newOrigin(t)
			state := filepath.Join(t.TempDir(), "edge.state")
			if tc.state != nil {
				if err := os.WriteFile(state, []byte(*tc.state), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s := subscribe(t, o, state, &purger{})
			if s.Last() != tc.wantLast {
				t.Fatalf("Last = %d before Run, want %d", s.Last(), tc.wantLast)
			}
			run(t, s)
			c := o.accept(t)
			if c.since != tc.wantSince || c.name != "edge-1" || c.auth != "Bearer "+token {
				t.Fatalf("stream opened with since %q, name %q, auth %q", c.since, c.name, c.auth)
			}
			next := tc.wantLast + 1
			c.send(contract.Event{Seq: next, Kind: contract.ImagesDeleted, IDs: []string{"img"}})
			c.ack(t, next)
			wantState(t, state, next)
		})
	}
}

func ptr(s string) *string { return &s }

// TestReadyAfterReplay: WaitReady returns at the first Ready frame, once
// everything sent before it is applied, and not before.
func TestReadyAfterReplay(t *testing.T) {
	o := newOrigin(t)
	p := &purger{}
	s := subscribe(t, o, filepath.Join(t.TempDir(), "edge.state"), p)
	run(t, s)
	c := o.accept(t)
	for i := uint64(1); i <= 3; i++ {
		c.send(contract.Event{Seq: i, Kind: contract.ImagesDeleted, IDs: []string{fmt.Sprintf("img-%d", i)}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.WaitReady(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady before any Ready frame = %v", err)
	}
	if s.Ready() {
		t.Fatal("ready before any Ready frame")
	}
	c.ready(3)
	waitReady(t, s)
	if got := p.got(); !slices.Equal(got, []string{"image:img-1", "image:img-2", "image:img-3"}) {
		t.Fatalf("ready with purges %q applied", got)
	}
	if s.Last() != 3 {
		t.Fatalf("Last = %d", s.Last())
	}
	// A Ready frame is no event: nothing is acknowledged for it.
	for i := uint64(1); i <= 3; i++ {
		c.ack(t, i)
	}
	select {
	case n := <-c.acks:
		t.Fatalf("acknowledged %d after the Ready frame", n)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestResumesAfterRestart: a new subscriber over the same state file
// starts at the last applied event.
func TestResumesAfterRestart(t *testing.T) {
	o := newOrigin(t)
	state := filepath.Join(t.TempDir(), "edge.state")
	first := subscribe(t, o, state, &purger{})
	stop := run(t, first)
	c := o.accept(t)
	c.send(contract.Event{Seq: 1, Kind: contract.ImagesDeleted, IDs: []string{"img-1"}})
	c.send(contract.Event{Seq: 2, Kind: contract.OrgSuspended, IDs: []string{"org-1"}})
	c.ack(t, 1)
	c.ack(t, 2)
	stop()

	p := &purger{}
	second := subscribe(t, o, state, p)
	if second.Last() != 2 || second.Ready() {
		t.Fatalf("restarted at %d, ready %v; want 2, not ready", second.Last(), second.Ready())
	}
	run(t, second)
	c = o.accept(t)
	if c.since != "2" {
		t.Fatalf("restarted stream since %q, want 2", c.since)
	}
	c.send(contract.Event{Seq: 3, Kind: contract.ImagesDeleted, IDs: []string{"img-3"}})
	c.ready(3)
	waitReady(t, second)
	if got := p.got(); !slices.Equal(got, []string{"image:img-3"}) {
		t.Fatalf("after the restart: purges %q", got)
	}
	c.ack(t, 3)
	wantState(t, state, 3)
}

// TestReconnects: after the stream ends, is refused, or carries a frame
// that does not parse, the subscriber opens a new one at its position and
// stays ready.
func TestReconnects(t *testing.T) {
	tests := []struct {
		name      string
		interrupt func(t *testing.T, o *origin, c *stream)
	}{
		{"stream ended by the origin", func(t *testing.T, o *origin, c *stream) { c.close() }},
		{"stream ended, then refused twice", func(t *testing.T, o *origin, c *stream) {
			o.refuse.Store(2)
			c.close()
		}},
		{"frame that is not JSON", func(t *testing.T, o *origin, c *stream) {
			c.frames <- "{not json"
			c.send(contract.Event{Seq: 3, Kind: contract.ImagesDeleted, IDs: []string{"img-lost"}})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newOrigin(t)
			p := &purger{}
			s := subscribe(t, o, filepath.Join(t.TempDir(), "edge.state"), p)
			run(t, s)
			c := o.accept(t)
			c.send(contract.Event{Seq: 1, Kind: contract.ImagesDeleted, IDs: []string{"img-1"}})
			c.send(contract.Event{Seq: 2, Kind: contract.ImagesDeleted, IDs: []string{"img-2"}})
			c.ready(2)
			waitReady(t, s)
			c.ack(t, 1)
			c.ack(t, 2)

			tc.interrupt(t, o, c)
			again := o.accept(t)
			if again.since != "2" {
				t.Fatalf("reconnected since %q, want 2", again.since)
			}
			if !s.Ready() {
				t.Fatal("not ready while reconnecting")
			}
			again.send(contract.Event{Seq: 3, Kind: contract.ImagesDeleted, IDs: []string{"img-3"}})
			again.ack(t, 3)
			if got := p.got(); !slices.Equal(got, []string{"image:img-1", "image:img-2", "image:img-3"}) {
				t.Fatalf("purges %q", got)
			}
		})
	}
}

// TestFailedPurgeIsRetried: an event the Purger fails on is neither
// acknowledged nor remembered; the subscriber reconnects before it and
// applies it when the origin sends it again.
func TestFailedPurgeIsRetried(t *testing.T) {
	o := newOrigin(t)
	state := filepath.Join(t.TempDir(), "edge.state")
	p := &purger{failing: map[string]bool{"org:org-2": true}}
	s := subscribe(t, o, state, p)
	run(t, s)
	c := o.accept(t)
	c.send(contract.Event{Seq: 1, Kind: contract.OrgSuspended, IDs: []string{"org-1"}})
	// (Acknowledged before the failing event is sent: the subscriber
	// drops the connection at once after a failure, which may cut off an
	// acknowledgement still on its way.)
	c.ack(t, 1)
	c.send(contract.Event{Seq: 2, Kind: contract.OrgSuspended, IDs: []string{"org-2"}})

	again := o.accept(t)
	if again.since != "1" {
		t.Fatalf("reconnected since %q, want 1", again.since)
	}
	select {
	case n := <-c.acks:
		t.Fatalf("the failed event %d was acknowledged", n)
	default:
	}
	wantState(t, state, 1)
	again.send(contract.Event{Seq: 2, Kind: contract.OrgSuspended, IDs: []string{"org-2"}})
	again.ack(t, 2)
	if got := p.got(); !slices.Equal(got, []string{"org:org-1", "org:org-2", "org:org-2"}) {
		t.Fatalf("purges %q", got)
	}
	wantState(t, state, 2)
}

// TestRefusedTokenNeverReady: an edge whose token the origin refuses
// tries again, and is not ready before the origin admits it (here on its
// third try, as if the origin's token had been fixed meanwhile).
func TestRefusedTokenNeverReady(t *testing.T) {
	o := newOrigin(t)
	o.admit = func(_ string, try int32) bool { return try >= 3 }
	p := &purger{}
	s := subscribe(t, o, filepath.Join(t.TempDir(), "edge.state"), p)
	run(t, s)
	c := o.accept(t)
	if n := o.tries.Load(); n != 3 {
		t.Fatalf("admitted on try %d, want 3", n)
	}
	if s.Ready() || s.Last() != 0 || len(p.got()) != 0 {
		t.Fatalf("refused edge: ready %v, last %d, purges %q", s.Ready(), s.Last(), p.got())
	}
	c.send(contract.Event{Seq: 1, Kind: contract.ImagesDeleted, IDs: []string{"img-1"}})
	c.ready(1)
	waitReady(t, s)
	c.ack(t, 1)
}

// TestPositionWrittenAtomically: while events are applied, the state file
// always holds a whole position, never a partial or empty one, and never
// goes back.
func TestPositionWrittenAtomically(t *testing.T) {
	const events = 300
	o := newOrigin(t)
	state := filepath.Join(t.TempDir(), "edge.state")
	s := subscribe(t, o, state, &purger{})
	run(t, s)
	c := o.accept(t)

	stopReading := make(chan struct{})
	readerErr := make(chan error, 1)
	go func() {
		var last uint64
		reads := 0
		for {
			select {
			case <-stopReading:
				if reads == 0 {
					readerErr <- errors.New("the state file was never read")
					return
				}
				readerErr <- nil
				return
			default:
			}
			raw, err := os.ReadFile(state)
			if errors.Is(err, os.ErrNotExist) && last == 0 {
				continue
			}
			reads++
			if err != nil {
				readerErr <- err
				return
			}
			n, err := strconv.ParseUint(strings.TrimSuffix(string(raw), "\n"), 10, 64)
			if err != nil || !strings.HasSuffix(string(raw), "\n") {
				readerErr <- fmt.Errorf("state file holds %q", raw)
				return
			}
			if n < last {
				readerErr <- fmt.Errorf("state went back from %d to %d", last, n)
				return
			}
			last = n
		}
	}()
	for i := uint64(1); i <= events; i++ {
		c.send(contract.Event{Seq: i, Kind: contract.ImagesDeleted, IDs: []string{"img"}})
	}
	for i := uint64(1); i <= events; i++ {
		c.ack(t, i)
	}
	close(stopReading)
	if err := <-readerErr; err != nil {
		t.Fatal(err)
	}
	wantState(t, state, events)
}

// TestRunReturnsWhileConnecting: Run returns once its context ends, also
// while the stream's request waits for the origin's answer. (net/http
// waits for the goroutine writing the request's body before Do returns,
// golang/go#29246; the body is a pipe that must end with the context, or
// Run, and the edge's Stop with it, would never return.)
func TestRunReturnsWhileConnecting(t *testing.T) {
	entered := make(chan struct{}, 16)
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+contract.StreamPath, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release // an origin that does not answer yet
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)

	s, err := purgelog.New(purgelog.Config{OriginURL: srv.URL, Token: token, StateFile: filepath.Join(t.TempDir(), "s"), Purger: &purger{}})
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, s)
	select {
	case <-entered:
	case <-time.After(wait):
		t.Fatal("no stream request")
	}
	stop() // fails the test unless Run returns
}

// TestGivesUpOnAnOriginThatDoesNotAnswer: a stream's request that gets no
// answer within AnswerTimeout is abandoned, and the subscriber tries
// again (the stream itself has no overall bound).
func TestGivesUpOnAnOriginThatDoesNotAnswer(t *testing.T) {
	o := newOrigin(t)
	release := make(chan struct{})
	mux := http.NewServeMux()
	var tries atomic.Int32
	mux.HandleFunc("POST "+contract.StreamPath, func(w http.ResponseWriter, r *http.Request) {
		if tries.Add(1) == 1 {
			<-release // the first request never gets its answer
			return
		}
		o.serve(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // before srv.Close, which waits for the handler

	s, err := purgelog.New(purgelog.Config{OriginURL: srv.URL, Token: token, Name: "edge-1", StateFile: filepath.Join(t.TempDir(), "s"),
		Purger: &purger{}, AnswerTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s)
	c := o.accept(t)
	c.send(contract.Event{Seq: 1, Kind: contract.ImagesDeleted, IDs: []string{"img"}})
	c.ready(1)
	waitReady(t, s)
	c.ack(t, 1)
	// The first try never gets an answer; a busy machine may make a later
	// one miss the bound too.
	if n := tries.Load(); n < 2 {
		t.Fatalf("answered on try %d, want a later one than the first", n)
	}
}

// subscribeSilence makes a subscriber of the origin that drops a stream
// silent for d.
func subscribeSilence(t *testing.T, o *origin, p purgelog.Purger, d time.Duration) *purgelog.Subscriber {
	t.Helper()
	s, err := purgelog.New(purgelog.Config{OriginURL: o.url + "/", Token: token, Name: "edge-1", StateFile: filepath.Join(t.TempDir(), "s"),
		Purger: p, SilenceTimeout: d})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSilentStreamIsDropped: a stream that stays open but brings nothing,
// not even the origin's heartbeat, for the silence timeout is dropped, and
// the subscriber follows the log again from where it was, through a new
// stream. The origin here never ends the first one.
func TestSilentStreamIsDropped(t *testing.T) {
	o := newOrigin(t)
	p := &purger{}
	s := subscribeSilence(t, o, p, time.Second)
	run(t, s)
	c := o.accept(t)
	c.send(contract.Event{Seq: 1, Kind: contract.ImagesDeleted, IDs: []string{"img-1"}})
	c.ready(1)
	c.ack(t, 1)

	again := o.accept(t)
	if again.since != "1" {
		t.Fatalf("reconnected since %q, want 1", again.since)
	}
	again.send(contract.Event{Seq: 2, Kind: contract.ImagesDeleted, IDs: []string{"img-2"}})
	again.ack(t, 2)
	if got := p.got(); !slices.Equal(got, []string{"image:img-1", "image:img-2"}) {
		t.Fatalf("purges %q", got)
	}
}

// TestHeartbeatsKeepTheStream: frames more often than the silence timeout
// keep a stream, however long it lasts, and a purge that takes longer than
// the timeout does not count as silence.
func TestHeartbeatsKeepTheStream(t *testing.T) {
	const silence = time.Second
	o := newOrigin(t)
	slow := &slowPurger{purger: &purger{}, hold: make(chan struct{})}
	s := subscribeSilence(t, o, slow, silence)
	run(t, s)
	c := o.accept(t)
	c.ready(0)
	waitReady(t, s)

	// A heartbeat every tenth of the timeout, for twice the timeout.
	tick := time.NewTicker(silence / 10)
	defer tick.Stop()
	for end := time.Now().Add(2 * silence); time.Now().Before(end); {
		<-tick.C
		c.ready(0)
	}
	// A purge held for longer than the timeout.
	c.send(contract.Event{Seq: 1, Kind: contract.ImagesDeleted, IDs: []string{"img-1"}})
	time.AfterFunc(silence+silence/2, func() { close(slow.hold) })
	c.ack(t, 1)
	if n := o.tries.Load(); n != 1 {
		t.Fatalf("%d streams, want the first one kept", n)
	}
	if got := slow.got(); !slices.Equal(got, []string{"image:img-1"}) {
		t.Fatalf("purges %q", got)
	}
}

// TestBlockedAcknowledgementIsSilence: an origin that sends events but no
// longer reads the acknowledgements fills the connection until the edge's
// next acknowledgement blocks; the silence timeout covers that wait too,
// and the edge follows again, through a new stream, from the events it
// applied. (The buffers of the connection are made small, so that a few
// hundred acknowledgements fill them.)
func TestBlockedAcknowledgementIsSilence(t *testing.T) {
	const events = 20000
	var tries atomic.Int32
	again := make(chan string, 1)
	// A handler that reads no request body is not told when its client
	// leaves (net/http notices only once the body was read): the streams
	// end with the test.
	ended := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tries.Add(1) > 1 {
			select {
			case again <- r.URL.Query().Get(contract.StreamSince):
			default:
			}
			<-ended
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			t.Error(err)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		for i := 1; i <= events; i++ {
			if _, err := fmt.Fprintf(w, `{"seq":%d,"kind":%q,"ids":["t"]}`+"\n", i, contract.TagsPurged); err != nil {
				return
			}
		}
		rc.Flush()
		<-ended // the acknowledgements are never read
	}))
	srv.Listener = smallReads{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(ended) }) // before srv.Close, which waits for the handlers
	dialer := &net.Dialer{Timeout: time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096) })
		return errors.Join(err, serr)
	}}
	s, err := purgelog.New(purgelog.Config{OriginURL: srv.URL + "/", Token: token, Name: "edge-1", StateFile: filepath.Join(t.TempDir(), "s"),
		Purger: &purger{}, Client: &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: dialer.DialContext}},
		SilenceTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	run(t, s)
	select {
	case since := <-again:
		if n, err := strconv.Atoi(since); err != nil || n == 0 || n >= events {
			t.Fatalf("reconnected since %q; want a position inside the first stream, whose acknowledgements blocked", since)
		}
	case <-time.After(wait):
		t.Fatalf("the edge did not leave a stream whose acknowledgements blocked within %v", wait)
	}
}

// smallReads gives every accepted connection a small receive buffer.
type smallReads struct{ net.Listener }

func (l smallReads) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(2048)
	}
	return c, err
}

// slowPurger purges an image once hold is closed.
type slowPurger struct {
	*purger
	hold chan struct{}
}

func (p *slowPurger) PurgeImage(id string) (int, error) {
	<-p.hold
	return p.purger.PurgeImage(id)
}

// TestBackoffStartsOverAfterAHealthyStream: the wait before reconnecting
// doubles at every stream lost, and starts over after a stream that caught
// up with the log (its Ready frame), so that an edge whose streams drop
// now and then over days does not wait the longest backoff to follow
// purges again. The waits are observed, not waited out.
func TestBackoffStartsOverAfterAHealthyStream(t *testing.T) {
	o := newOrigin(t)
	s := subscribe(t, o, filepath.Join(t.TempDir(), "edge.state"), &purger{})
	waits := make(chan time.Duration, 64)
	s.SetAfter(func(d time.Duration) <-chan time.Time {
		waits <- d
		now := make(chan time.Time, 1)
		now <- time.Now()
		return now
	})
	// healthy catches up at seq and ends: the event after the Ready frame
	// is acknowledged only once the Ready frame is read.
	healthy := func(c *stream, seq uint64) {
		c.ready(seq)
		c.send(contract.Event{Seq: seq + 1, Kind: contract.ImagesDeleted, IDs: []string{"img"}})
		c.ack(t, seq+1)
		c.close()
	}
	o.refuse.Store(3)
	stop := run(t, s)
	healthy(o.accept(t), 0) // after three refusals
	o.refuse.Store(1)
	// Refused once, then a stream that ends before it caught up.
	c := o.accept(t)
	c.send(contract.Event{Seq: 2, Kind: contract.ImagesDeleted, IDs: []string{"img"}})
	c.ack(t, 2)
	c.close()
	healthy(o.accept(t), 2)
	o.accept(t)
	stop()

	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 100 * ms, 200 * ms, 400 * ms, 100 * ms}
	close(waits)
	var got []time.Duration
	for d := range waits {
		got = append(got, d)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("waited %v before reconnecting, want %v", got, want)
	}
}

// subscribePool makes a subscriber of the origins at urls, with its state
// in state and its reconnection backoff skipped.
func subscribePool(t *testing.T, state string, p purgelog.Purger, urls ...string) (*purgelog.Subscriber, *origins.Pool) {
	t.Helper()
	pc := origins.DefaultConfig()
	pc.URLs = urls
	pool, err := origins.New(pc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := purgelog.New(purgelog.Config{Origins: pool, Token: token, Name: "edge-1", StateFile: state, Purger: p})
	if err != nil {
		t.Fatal(err)
	}
	s.SetAfter(func(time.Duration) <-chan time.Time {
		now := make(chan time.Time, 1)
		now <- time.Now()
		return now
	})
	return s, pool
}

// TestFollowsAnotherOrigin: origins over one store serve the same log.
// When the stream of the origin the subscriber follows breaks, it follows
// the next origin's from its position; an event that origin sends again
// is acknowledged and not applied twice; no event is lost.
func TestFollowsAnotherOrigin(t *testing.T) {
	a, b := newOrigin(t), newOrigin(t)
	state := filepath.Join(t.TempDir(), "edge.state")
	p := &purger{}
	s, _ := subscribePool(t, state, p, a.url, b.url)
	run(t, s)

	c := a.accept(t)
	if c.since != "0" {
		t.Fatalf("first stream since %q", c.since)
	}
	c.send(contract.Event{Seq: 1, Kind: contract.ImagesDeleted, IDs: []string{"img-1"}})
	c.send(contract.Event{Seq: 2, Kind: contract.OrgSuspended, IDs: []string{"org-1"}})
	c.ready(2)
	waitReady(t, s)
	c.ack(t, 1)
	c.ack(t, 2)
	c.close()

	c = b.accept(t)
	if c.since != "2" {
		t.Fatalf("stream on the other origin since %q, want 2", c.since)
	}
	// An origin behind the other sends 2 again, then what was published
	// meanwhile.
	c.send(contract.Event{Seq: 2, Kind: contract.OrgSuspended, IDs: []string{"org-1"}})
	c.send(contract.Event{Seq: 3, Kind: contract.ImagesDeleted, IDs: []string{"img-3"}})
	c.ready(3)
	c.ack(t, 2)
	c.ack(t, 3)
	c.close()

	c = a.accept(t) // around again
	if c.since != "3" {
		t.Fatalf("stream back on the first origin since %q, want 3", c.since)
	}
	c.send(contract.Event{Seq: 4, Kind: contract.ImagesDeleted, IDs: []string{"img-4"}})
	c.ack(t, 4)
	if got, want := p.got(), []string{"image:img-1", "org:org-1", "image:img-3", "image:img-4"}; !slices.Equal(got, want) {
		t.Fatalf("purges %q, want each once: %q", got, want)
	}
	wantState(t, state, 4)
}

// TestSkipsADeadOrigin: an origin the stream cannot connect to is taken
// out at once, and the subscriber keeps to the live one.
func TestSkipsADeadOrigin(t *testing.T) {
	b := newOrigin(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	s, pool := subscribePool(t, filepath.Join(t.TempDir(), "edge.state"), &purger{}, dead, b.url)
	run(t, s)
	c := b.accept(t)
	if pool.Origins()[0].Up() {
		t.Fatal("the dead origin is still up")
	}
	c.ready(0)
	waitReady(t, s)
	c.close()
	b.accept(t) // not the dead one again
	if n := b.tries.Load(); n != 2 {
		t.Fatalf("%d streams asked of the live origin, want 2", n)
	}
}
