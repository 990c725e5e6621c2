package render

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// tabQueue admits renders and hands the tabs' slots out fairly between
// organizations.
//
// Admission: at most limit renders are inside the engine at once, and at
// most orgLimit of one organization (Tabs + ⌈Queue/2⌉): an organization
// flooding the engine is refused with ErrQueueFull while at least half the
// queue is still free for the others. Both are refused at once, never
// waited for.
//
// Slots: a render waiting for one waits in its organization's line (first
// come, first served within it). A slot that frees goes straight to the
// first waiter of the organization at the front of a ring of the
// organizations with waiters, which then moves to the back of the ring (or
// leaves it, with nobody left waiting). So a render of an organization that
// just arrived waits for at most one slot per organization ahead of it, not
// behind every render another organization queued first.
//
// slots holds a token per slot taken: the handover keeps the token in it,
// and only a slot freed with nobody waiting is taken out. Everything that
// touches slots does so under mu, except a test's quiesce, which may fill
// and empty it while no render waits.
type tabQueue struct {
	slots    chan struct{}
	quit     <-chan struct{} // closed when the engine stops: waiters give up
	limit    int             // renders inside at once (Tabs+Queue)
	orgLimit int             // of them, of one organization

	mu      sync.Mutex
	inside  int                  // admitted, until leave
	perOrg  map[string]int       // admitted per organization, none at 0
	waiting map[string][]*waiter // per organization with waiters, in arrival order
	ring    []string             // the organizations of waiting, next served first
}

// errOrgShare marks an ErrQueueFull that refused an organization holding
// its whole share of the engine.
var errOrgShare = errors.New("the organization's share of the queue is taken")

// waiter is a render of org waiting for a slot; granted is set, and ready
// closed, when a slot is handed to it.
type waiter struct {
	org     string
	ready   chan struct{}
	granted bool
}

// newTabQueue returns the queue of an engine with tabs slots and room for
// queue renders waiting; quit is closed when the engine stops.
func newTabQueue(tabs, queue int, quit <-chan struct{}) *tabQueue {
	return &tabQueue{
		slots:    make(chan struct{}, tabs),
		quit:     quit,
		limit:    tabs + queue,
		orgLimit: orgAdmissions(tabs, queue),
		perOrg:   map[string]int{},
		waiting:  map[string][]*waiter{},
	}
}

// orgAdmissions is how many renders of one organization may be inside the
// engine at once: every tab and half the queue (rounded up, so that a queue
// of one reserves nothing).
func orgAdmissions(tabs, queue int) int {
	return tabs + (queue+1)/2
}

// admit lets a render of org in, or fails with ErrQueueFull when the
// engine or the organization's share of it is full. A render let in must
// call leave once done.
func (q *tabQueue) admit(org string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.inside >= q.limit {
		return ErrQueueFull
	}
	if n := q.perOrg[org]; n >= q.orgLimit {
		return fmt.Errorf("%w (%w: %d renders running or waiting)", ErrQueueFull, errOrgShare, n)
	}
	q.inside++
	q.perOrg[org]++
	return nil
}

// leave ends an admission of org.
func (q *tabQueue) leave(org string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inside--
	if q.perOrg[org]--; q.perOrg[org] <= 0 {
		delete(q.perOrg, org)
	}
}

// busy reports whether any render is inside.
func (q *tabQueue) busy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inside > 0
}

// wait takes a slot for a render of org, waiting for its turn while ctx
// lasts and the engine runs. A slot taken must be given back with release.
func (q *tabQueue) wait(ctx context.Context, org string) error {
	w, err := q.enqueue(org)
	if w == nil {
		return err
	}
	return q.await(ctx, w)
}

// enqueue takes a slot for a render of org when one is free and nobody
// waits (nil, nil), or puts a waiter at the end of org's line.
func (q *tabQueue) enqueue(org string) (*waiter, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopping() {
		return nil, ErrStopped
	}
	if len(q.ring) == 0 {
		select {
		case q.slots <- struct{}{}:
			return nil, nil
		default:
		}
	}
	w := &waiter{org: org, ready: make(chan struct{})}
	if len(q.waiting[org]) == 0 {
		q.ring = append(q.ring, org)
	}
	q.waiting[org] = append(q.waiting[org], w)
	return w, nil
}

// await waits until w has its slot, its context ends or the engine stops.
// A slot that reaches w as it gives up goes on to the next waiter.
func (q *tabQueue) await(ctx context.Context, w *waiter) error {
	var err error
	select {
	case <-w.ready:
	case <-ctx.Done():
	case <-q.quit:
	}
	// Stopping wins over a slot, and so does an ended context: a caller
	// gone takes no tab.
	switch {
	case q.stopping():
		err = ErrStopped
	case ctx.Err() != nil:
		err = fmt.Errorf("wait for a tab: %w", ctx.Err())
	default:
		return nil // ready
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if w.granted {
		q.releaseLocked()
	} else {
		q.removeLocked(w)
	}
	return err
}

// release gives a slot back: to the next waiter in turn, or to the pool.
func (q *tabQueue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.releaseLocked()
}

func (q *tabQueue) releaseLocked() {
	if len(q.ring) == 0 || q.stopping() {
		// Waiters left while stopping take their leave through quit.
		<-q.slots
		return
	}
	org := q.ring[0]
	q.ring = q.ring[1:]
	line := q.waiting[org]
	w := line[0]
	line[0] = nil
	if line = line[1:]; len(line) > 0 {
		q.waiting[org] = line
		q.ring = append(q.ring, org)
	} else {
		delete(q.waiting, org)
	}
	w.granted = true
	close(w.ready)
}

// removeLocked takes w, which was not granted a slot, out of its line.
func (q *tabQueue) removeLocked(w *waiter) {
	org := w.org
	line := slices.DeleteFunc(q.waiting[org], func(x *waiter) bool { return x == w })
	if len(line) > 0 {
		q.waiting[org] = line
		return
	}
	delete(q.waiting, org)
	q.ring = slices.DeleteFunc(q.ring, func(o string) bool { return o == org })
}

// stopping reports whether the engine is stopping.
func (q *tabQueue) stopping() bool {
	select {
	case <-q.quit:
		return true
	default:
		return false
	}
}
