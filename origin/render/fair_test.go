package render

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// queued is a waiter of a tabQueue test, named by its organization and
// its rank in it ("a1").
type queued struct {
	name string
	w    *waiter
}

// enqueueAll puts a waiter per name in q, in order; the organization is
// the name's first letter.
func enqueueAll(t *testing.T, q *tabQueue, names ...string) []queued {
	t.Helper()
	var out []queued
	for _, name := range names {
		w, err := q.enqueue(name[:1])
		if err != nil || w == nil {
			t.Fatalf("enqueue %s: waiter %v, error %v; want a waiter", name, w, err)
		}
		out = append(out, queued{name, w})
	}
	return out
}

// granted returns the names of the waiters that have a slot, and takes
// them out of ws.
func granted(t *testing.T, q *tabQueue, ws *[]queued) []string {
	t.Helper()
	var names []string
	rest := (*ws)[:0]
	for _, x := range *ws {
		select {
		case <-x.w.ready:
			if err := q.await(context.Background(), x.w); err != nil {
				t.Fatalf("%s was handed a slot, then: %v", x.name, err)
			}
			names = append(names, x.name)
		default:
			rest = append(rest, x)
		}
	}
	*ws = rest
	return names
}

// fill takes every slot of q, as renders running.
func fill(t *testing.T, q *tabQueue) {
	t.Helper()
	for i := range cap(q.slots) {
		if w, err := q.enqueue("running"); w != nil || err != nil {
			t.Fatalf("slot %d of an idle queue: waiter %v, error %v", i, w, err)
		}
	}
}

// TestTabQueueOrder: with every slot taken, each slot given back goes to
// exactly one waiter, at once, in round-robin order between organizations
// and in arrival order within one.
func TestTabQueueOrder(t *testing.T) {
	tests := []struct {
		name string
		tabs int
		ops  string // a waiter arrives ("a1": organization a), or "-": a slot is given back
		want string // who got the slots given back, in order
	}{
		{name: "one organization: first come, first served", tabs: 1,
			ops: "a1 a2 a3 - - -", want: "a1 a2 a3"},
		{name: "round-robin between organizations", tabs: 1,
			ops: "a1 a2 a3 a4 b1 c1 b2 - - - - - - -", want: "a1 b1 c1 a2 b2 a3 a4"},
		{name: "a late organization waits for a turn per organization ahead, not for the flood", tabs: 2,
			ops: "a1 a2 a3 a4 a5 a6 - b1 - - - - - -", want: "a1 a2 b1 a3 a4 a5 a6"},
		{name: "an organization served goes to the back", tabs: 1,
			ops: "a1 b1 b2 - a2 - c1 - - -", want: "a1 b1 a2 b2 c1"},
		{name: "an organization whose line emptied comes back at the back", tabs: 1,
			ops: "a1 b1 - - b2 a2 - -", want: "a1 b1 b2 a2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newTabQueue(tc.tabs, 64, make(chan struct{}))
			fill(t, q)
			var waiting []queued
			var got []string
			for _, op := range strings.Fields(tc.ops) {
				if op != "-" {
					waiting = append(waiting, enqueueAll(t, q, op)...)
					continue
				}
				q.release()
				g := granted(t, q, &waiting)
				if len(g) != 1 {
					t.Fatalf("the slot given back after %v went to %v, want one waiter", got, g)
				}
				got = append(got, g...)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Fatalf("slots went to %s, want %s", g, tc.want)
			}
			if n := len(q.slots); n != tc.tabs {
				t.Fatalf("%d slots taken, want all %d", n, tc.tabs)
			}
			for range tc.tabs {
				q.release()
			}
			assertIdle(t, q)
		})
	}
}

// assertIdle fails unless q has no slot taken and nobody waiting.
func assertIdle(t *testing.T, q *tabQueue) {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.slots); n != 0 || len(q.ring) != 0 || len(q.waiting) != 0 {
		t.Fatalf("%d slots taken, ring %v, lines %v; want none", n, q.ring, q.waiting)
	}
}

// TestTabQueueCancel: a waiter whose context ends leaves its line, also
// when the slot reached it as its context ended: the slot goes on to the
// next waiter in turn, and none is lost.
func TestTabQueueCancel(t *testing.T) {
	tests := []struct {
		name         string
		grantedFirst bool // the slot is handed to a1 before it sees its context ended
		want         [2]string
	}{
		// a1's leaving is no turn of a's: a stays at the front.
		{name: "while waiting", want: [2]string{"a2", "b1"}},
		// a1 had a's turn: b is next.
		{name: "as its slot arrives", grantedFirst: true, want: [2]string{"b1", "a2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newTabQueue(1, 8, make(chan struct{}))
			fill(t, q)
			ws := enqueueAll(t, q, "a1", "b1", "a2")
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if tc.grantedFirst {
				q.release()
				select {
				case <-ws[0].w.ready:
				default:
					t.Fatal("a1 was not handed the slot")
				}
			}
			if err := q.await(ctx, ws[0].w); !errors.Is(err, context.Canceled) {
				t.Fatalf("a1 canceled: %v, want context.Canceled", err)
			}
			rest := ws[1:]
			if !tc.grantedFirst {
				q.release()
			}
			if g := granted(t, q, &rest); len(g) != 1 || g[0] != tc.want[0] {
				t.Fatalf("the slot went to %v, want %s", g, tc.want[0])
			}
			q.release()
			if g := granted(t, q, &rest); len(g) != 1 || g[0] != tc.want[1] {
				t.Fatalf("the next slot went to %v, want %s", g, tc.want[1])
			}
			q.release()
			assertIdle(t, q)
		})
	}
}

// TestTabQueueStop: stopping fails every waiter with ErrStopped, one
// handed a slot as the engine stopped included, and every later wait; the
// slots given back then are not handed on.
func TestTabQueueStop(t *testing.T) {
	quit := make(chan struct{})
	q := newTabQueue(2, 8, quit)
	fill(t, q)
	ws := enqueueAll(t, q, "a1", "b1", "a2")
	q.release() // to a1, which has not looked yet
	close(quit)
	for _, x := range ws {
		if err := q.await(context.Background(), x.w); !errors.Is(err, ErrStopped) {
			t.Fatalf("%s: %v, want ErrStopped", x.name, err)
		}
	}
	if err := q.wait(context.Background(), "c"); !errors.Is(err, ErrStopped) {
		t.Fatalf("a wait after stopping: %v, want ErrStopped", err)
	}
	if n := len(q.slots); n != 1 {
		t.Fatalf("%d slots taken, want the one still running", n)
	}
	q.release()
	assertIdle(t, q)
}

// TestTabQueueAdmission: Tabs+Queue renders are let in, at most
// Tabs+⌈Queue/2⌉ of one organization; the organization over its share is
// refused first, and a render leaving makes room again.
func TestTabQueueAdmission(t *testing.T) {
	tests := []struct {
		name        string
		tabs, queue int
		orgLimit    int
	}{
		{name: "no queue: nothing to share", tabs: 1, queue: 0, orgLimit: 1},
		{name: "a queue of one is not split", tabs: 1, queue: 1, orgLimit: 2},
		{name: "half the queue, rounded up", tabs: 2, queue: 3, orgLimit: 4},
		{name: "defaults of a 2-core machine", tabs: 2, queue: 64, orgLimit: 34},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newTabQueue(tc.tabs, tc.queue, make(chan struct{}))
			for i := range tc.orgLimit {
				if err := q.admit("a"); err != nil {
					t.Fatalf("render %d of a: %v", i+1, err)
				}
			}
			err := q.admit("a")
			if tc.orgLimit == tc.tabs+tc.queue {
				if !errors.Is(err, ErrQueueFull) || errors.Is(err, errOrgShare) {
					t.Fatalf("a render with the engine full: %v, want ErrQueueFull only", err)
				}
			} else if !errors.Is(err, ErrQueueFull) || !errors.Is(err, errOrgShare) {
				t.Fatalf("a render over the organization's share: %v, want ErrQueueFull for the share", err)
			}
			others := tc.tabs + tc.queue - tc.orgLimit
			for i := range others {
				if err := q.admit(fmt.Sprintf("b%d", i%2)); err != nil {
					t.Fatalf("render %d of another organization: %v", i+1, err)
				}
			}
			if err := q.admit("c"); !errors.Is(err, ErrQueueFull) || errors.Is(err, errOrgShare) {
				t.Fatalf("a render with the engine full: %v, want ErrQueueFull, not for the share", err)
			}
			q.leave("a")
			if err := q.admit("c"); err != nil {
				t.Fatalf("a render after one left: %v", err)
			}
			if !q.busy() {
				t.Fatal("not busy with renders inside")
			}
			q.leave("c")
			for range tc.orgLimit - 1 {
				q.leave("a")
			}
			for i := range others {
				q.leave(fmt.Sprintf("b%d", i%2))
			}
			if q.busy() || len(q.perOrg) != 0 {
				t.Fatalf("renders left inside: %d, per organization %v", q.inside, q.perOrg)
			}
		})
	}
}

// TestTabQueueHammer: many renders of a few organizations come and go,
// some giving up while they wait and some when their slot arrives, while
// the engine runs and as it stops; never more than the slots run at once
// and none is lost. Run it with -race.
func TestTabQueueHammer(t *testing.T) {
	for _, stop := range []bool{false, true} {
		t.Run(fmt.Sprintf("stop=%v", stop), func(t *testing.T) {
			const tabs, workers, rounds = 3, 24, 200
			quit := make(chan struct{})
			q := newTabQueue(tabs, workers, quit)
			var running, most atomic.Int32
			var ok, gaveUp, stopped atomic.Int64
			quarter := make(chan struct{}) // closed once a quarter of the renders got a slot
			var wg sync.WaitGroup
			for i := range workers {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(i), 1))
					org := fmt.Sprintf("o%d", i%4)
					for range rounds {
						if err := q.admit(org); err != nil {
							t.Errorf("admit: %v", err) // workers ≤ Tabs+Queue and ≤ the share
							return
						}
						ctx, cancel := context.WithCancel(context.Background())
						if r.IntN(4) == 0 {
							// Another goroutine gives up for it, at some point of its wait.
							go cancel()
						}
						err := q.wait(ctx, org)
						cancel()
						switch {
						case err == nil:
							n := running.Add(1)
							for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
							}
							if ok.Add(1) == workers*rounds/4 {
								close(quarter)
							}
							running.Add(-1)
							q.release()
						case errors.Is(err, context.Canceled):
							gaveUp.Add(1)
						case errors.Is(err, ErrStopped):
							stopped.Add(1)
						default:
							t.Errorf("wait: %v", err)
						}
						q.leave(org)
					}
				})
			}
			if stop {
				select {
				case <-quarter:
				case <-time.After(patience):
					t.Fatal("a quarter of the renders never got a slot")
				}
				close(quit)
			}
			wg.Wait()
			if m := most.Load(); m > tabs || m < 1 {
				t.Fatalf("at most %d renders held a slot at once, want 1 to %d", m, tabs)
			}
			if stop && stopped.Load() == 0 {
				t.Fatal("no wait failed with ErrStopped after the stop")
			}
			if !stop && (stopped.Load() != 0 || ok.Load()+gaveUp.Load() != workers*rounds) {
				t.Fatalf("%d slots, %d gave up, %d stopped; want %d in all, none stopped", ok.Load(), gaveUp.Load(), stopped.Load(), workers*rounds)
			}
			t.Logf("%d slots, %d gave up, %d stopped", ok.Load(), gaveUp.Load(), stopped.Load())
			assertIdle(t, q)
			if q.busy() {
				t.Fatalf("%d renders still admitted", q.inside)
			}
		})
	}
}

// floodSite is a loopback site for the fairness tests. /hold answers one
// request each time the test lets one through; /quick answers at once and
// notes how many /hold requests had been let through by then.
type floodSite struct {
	url      string
	arrived  chan struct{} // a value per /hold request that arrived
	let      chan struct{} // a value lets one /hold request answer
	lets     atomic.Int32  // values sent on let
	quickAt  chan int32    // lets when a /quick request arrived
	shutdown chan struct{}
}

func newFloodSite(t *testing.T) *floodSite {
	t.Helper()
	s := &floodSite{arrived: make(chan struct{}, 64), let: make(chan struct{}), quickAt: make(chan int32, 8), shutdown: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Cache-Control", "no-store")
		switch r.URL.Path {
		case "/hold":
			s.arrived <- struct{}{}
			select {
			case <-s.let:
			case <-s.shutdown:
			case <-r.Context().Done():
			}
		case "/quick":
			s.quickAt <- s.lets.Load()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(s.shutdown) }) // runs first: Close waits for held requests
	s.url = srv.URL
	return s
}

// page is a render of org whose page fetches path and is captured once
// the fetch ended.
func (s *floodSite) page(org, path string) *Request {
	return &Request{OrgID: org, HTML: fmt.Sprintf(`<div style="width:40px;height:20px;background:#00f"></div>`+
		`<script>fetch(%q, {mode: "no-cors", cache: "no-store"}).finally(() => ScreenshotReady())</script>`, s.url+path),
		WhenReady: true, MaxWait: 45 * time.Second, MaxWidth: 16384, MaxHeight: 16384}
}

// waitArrival waits for a /hold request to arrive: a render got a tab.
func (s *floodSite) waitArrival(t *testing.T) {
	t.Helper()
	select {
	case <-s.arrived:
	case <-time.After(patience):
		t.Fatal("no render reached the site")
	}
}

// letOne lets one held request answer.
func (s *floodSite) letOne(t *testing.T) {
	t.Helper()
	s.lets.Add(1)
	select {
	case s.let <- struct{}{}:
	case <-time.After(patience):
		t.Fatal("no request was held")
	}
}

// renderRefused renders r, which should be refused at once: a render let
// in instead gives up after patience.
func renderRefused(e *Engine, r *Request) error {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, err := e.Render(ctx, r)
	return err
}

// TestFairTabsBetweenOrganizations: organization a floods the engine (two
// tabs) with slow renders, as many as its share of the queue lets in (one
// more is refused); organization b then asks for one quick render. b's
// render gets a tab as soon as the second of a's renders ends, instead of
// behind all of a's queued renders, and it is done before most of them.
func TestFairTabsBetweenOrganizations(t *testing.T) {
	t.Parallel()
	const tabs, queue = 2, 16
	reg := prometheus.NewRegistry()
	e := newEngine(t, metered(reg, func(c *Config) { c.Tabs, c.Queue = tabs, queue }))
	site := newFloodSite(t)
	ctx := context.Background()

	flood := orgAdmissions(tabs, queue) // 10: 2 running, 8 queued
	var aDone atomic.Int32
	aOut := make(chan error, flood)
	for i := range flood {
		go func() {
			_, err := e.Render(ctx, site.page("a", "/hold"))
			aDone.Add(1)
			aOut <- err
		}()
		if i < tabs {
			site.waitArrival(t)
		}
	}
	eventually(t, "a's renders are queued", func() bool { return metric(t, reg, "pictor_render_queued") == float64(flood-tabs) })
	if err := renderRefused(e, quick("a")); !errors.Is(err, errOrgShare) {
		t.Fatalf("a render of a beyond its share: %v, want ErrQueueFull for a's share", err)
	}

	aDoneAtB := make(chan int32, 1)
	bOut := make(chan error, 1)
	go func() {
		_, err := e.Render(ctx, site.page("b", "/quick"))
		aDoneAtB <- aDone.Load()
		bOut <- err
	}()
	eventually(t, "b's render is queued", func() bool { return metric(t, reg, "pictor_render_queued") == float64(flood-tabs+1) })

	// Let a's renders end one by one; after each, while a's queue lasts, one
	// of its queued renders gets a tab and reaches the site (b's, if it got
	// the tab, first ends, since the other tab is held).
	for i := range flood {
		site.letOne(t)
		if i < flood-tabs {
			site.waitArrival(t)
		}
	}
	for range flood {
		select {
		case err := <-aOut:
			if err != nil {
				t.Fatalf("a's render: %v", err)
			}
		case <-time.After(patience):
			t.Fatal("a's render did not return")
		}
	}
	select {
	case err := <-bOut:
		if err != nil {
			t.Fatalf("b's render: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("b's render did not return")
	}
	// b's turn came with the second tab freed: a was in line first and
	// had its turn with the first. In line behind a's queue, b would have
	// had to wait for 8 of a's renders to end.
	select {
	case let := <-site.quickAt:
		if let > tabs {
			t.Errorf("b's render reached the site after %d of a's renders were let end, want at most %d", let, tabs)
		}
	default:
		t.Error("b's page never reached the site")
	}
	if n := <-aDoneAtB; flood-int(n) < flood/2+1 {
		t.Errorf("b's render ended after %d of a's %d, want at most %d", n, flood, flood/2-1)
	}
	if got := metric(t, reg, "pictor_render_queued"); got != 0 {
		t.Fatalf("queued gauge %v after the queue emptied", got)
	}
}

// TestOrganizationShareOfTheQueue: an organization filling its share of
// the queue (Tabs+⌈Queue/2⌉ renders) is refused with ErrQueueFull, while
// another organization still gets in, until the whole queue is full.
func TestOrganizationShareOfTheQueue(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEngine(t, metered(reg, func(c *Config) { c.Tabs, c.Queue = 1, 2 }))
	site := newFloodSite(t)
	ctx := context.Background()

	held := start(e, ctx, site.page("a", "/hold"))
	site.waitArrival(t)
	queuedA := start(e, ctx, quick("a"))
	eventually(t, "a's second render is queued", func() bool { return metric(t, reg, "pictor_render_queued") == 1 })
	if err := renderRefused(e, quick("a")); !errors.Is(err, errOrgShare) || !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a's third render: %v, want ErrQueueFull for a's share (1 tab + 1 of 2 queued)", err)
	}
	queuedB := start(e, ctx, quick("b"))
	eventually(t, "b's render is queued", func() bool { return metric(t, reg, "pictor_render_queued") == 2 })
	if err := renderRefused(e, quick("c")); !errors.Is(err, ErrQueueFull) || errors.Is(err, errOrgShare) {
		t.Fatalf("c's render with the queue full: %v, want ErrQueueFull, not for c's share", err)
	}
	if got := metric(t, reg, "pictor_render_total"); got != 2 {
		t.Fatalf("%v renders counted, want the 2 refused", got)
	}
	// The queue's saturation: one tab of one busy, both places of the
	// queue taken.
	for _, m := range []struct {
		name string
		want float64
	}{
		{"pictor_render_tabs_busy", 1},
		{"pictor_render_tabs_capacity", 1},
		{"pictor_render_queued", 2},
		{"pictor_render_queue_capacity", 2},
	} {
		if got := metric(t, reg, m.name); got != m.want {
			t.Errorf("%s = %v with the queue full, want %v", m.name, got, m.want)
		}
	}
	site.letOne(t)
	for _, ch := range []<-chan outcomeOf{held, queuedA, queuedB} {
		if o := wait(t, ch); o.err != nil {
			t.Fatalf("render: %v", o.err)
		}
	}
}
