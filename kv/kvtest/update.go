package kvtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/pictorhq/pictor/kv"
)

// handles opens a store and a second handle on it (the same handle
// without SecondHandle); both are closed when the case ends.
func handles(t *testing.T, open opener) (kv.Store, kv.Store) {
	t.Helper()
	s := newStore(t, open)
	if open.second == nil {
		return s, s
	}
	other := open.second(t, s)
	t.Cleanup(func() {
		if err := other.Close(); err != nil {
			t.Errorf("close second handle: %v", err)
		}
	})
	return s, other
}

// testUpdateCommit: an Update's writes are invisible to the store, its
// snapshots and other handles until fn returns nil, and visible after.
func testUpdateCommit(t *testing.T, open opener) {
	s, other := handles(t, open)
	mustPut(t, s, "u/old", "1")
	mustPut(t, s, "u/doomed", "1")
	// Another goroutine reads while fn waits, as another caller or
	// process would.
	written := make(chan struct{})
	checked := make(chan error, 1)
	go func() {
		<-written
		checked <- func() error {
			for _, r := range []kv.Store{s, other} {
				if v, err := r.Get(t.Context(), []byte("u/new")); !errors.Is(err, kv.ErrNotFound) {
					return fmt.Errorf("uncommitted u/new = %q, %v", v, err)
				}
				if err := sameAs(t.Context(), r, "u/", map[string]string{"u/doomed": "1", "u/old": "1"}); err != nil {
					return fmt.Errorf("store during the update: %w", err)
				}
				snap := r.Snapshot()
				err := sameAs(t.Context(), snap, "u/", map[string]string{"u/doomed": "1", "u/old": "1"})
				snap.Close()
				if err != nil {
					return fmt.Errorf("snapshot during the update: %w", err)
				}
			}
			return nil
		}()
	}()
	err := s.Update(context.Background(), "u", func(txn kv.Txn) error {
		mustPut(t, txn, "u/new", "1")
		mustPut(t, txn, "u/old", "2")
		mustDelete(t, txn, "u/doomed")
		close(written)
		return <-checked
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	after := []pair{{"u/new", "1"}, {"u/old", "2"}}
	for _, r := range []kv.Store{s, other} {
		wantPairs(t, "after commit", collect(t, r, []byte("u/"), kv.IterOptions{}), after)
	}

	// An Update that writes nothing commits nothing, and is no error.
	if err := s.Update(context.Background(), "u", func(txn kv.Txn) error {
		_, err := txn.Get(t.Context(), []byte("u/new"))
		return err
	}); err != nil {
		t.Fatalf("read-only update: %v", err)
	}
	wantPairs(t, "after a read-only update", collect(t, s, []byte("u/"), kv.IterOptions{}), after)
}

// testUpdateAllOrNothing: when fn fails, none of its writes stay, and
// Update returns fn's error itself.
func testUpdateAllOrNothing(t *testing.T, open opener) {
	s := newStore(t, open)
	mustPut(t, s, "a/keep", "old")
	mustPut(t, s, "a/gone", "old")
	boom := errors.New("kvtest: fn failed")
	err := s.Update(context.Background(), "a", func(txn kv.Txn) error {
		mustPut(t, txn, "a/keep", "new")
		mustDelete(t, txn, "a/gone")
		mustPut(t, txn, "a/new", "1")
		wantValue(t, txn, "a/keep", "new")
		return boom
	})
	// As is: not wrapped, not replaced.
	if err != boom {
		t.Fatalf("update = %v, want fn's error %v", err, boom)
	}
	wantPairs(t, "after a failed update", collect(t, s, []byte("a/"), kv.IterOptions{}), []pair{{"a/gone", "old"}, {"a/keep", "old"}})
	wantMissing(t, s, "a/new")

	// The lock was released: the next Update on it commits.
	if err := s.Update(context.Background(), "a", func(txn kv.Txn) error {
		wantValue(t, txn, "a/keep", "old")
		return txn.Put([]byte("a/keep"), []byte("newer"))
	}); err != nil {
		t.Fatalf("update after a failed one: %v", err)
	}
	wantValue(t, s, "a/keep", "newer")
}

// testUpdateReadsOwnWrites: Get and Iterate in fn see the committed data
// with fn's writes over it, deletes included, in both directions.
func testUpdateReadsOwnWrites(t *testing.T, open opener) {
	s := newStore(t, open)
	for _, k := range []string{"r/1", "r/2", "r/3", "r/5", "s/1"} {
		mustPut(t, s, k, "v"+k)
	}
	final := []pair{{"r/1", "new"}, {"r/2", "again"}, {"r/3", "vr/3"}, {"r/5", "vr/5"}, {"r/6", ""}}
	err := s.Update(context.Background(), "r", func(txn kv.Txn) error {
		wantValue(t, txn, "r/1", "vr/1")
		mustPut(t, txn, "r/4", "four")
		mustPut(t, txn, "r/1", "new")
		mustDelete(t, txn, "r/2")
		if err := txn.Put([]byte("r/6"), nil); err != nil {
			t.Fatalf("put an empty value: %v", err)
		}
		wantValue(t, txn, "r/1", "new")
		wantMissing(t, txn, "r/2")
		wantValue(t, txn, "r/4", "four")
		wantValue(t, txn, "r/6", "")

		all := []pair{{"r/1", "new"}, {"r/3", "vr/3"}, {"r/4", "four"}, {"r/5", "vr/5"}, {"r/6", ""}}
		for _, opts := range []kv.IterOptions{
			{},
			{Reverse: true},
			{After: []byte("r/2")},
			{After: []byte("r/4"), Reverse: true},
		} {
			wantPairs(t, fmt.Sprintf("iterate in the update %+v", opts), collect(t, txn, []byte("r/"), opts), expect(all, []byte("r/"), opts))
		}
		// Reads and writes in the middle of a walk.
		it := txn.Iterate(t.Context(), []byte("r/"), kv.IterOptions{})
		var seen []string
		for it.Next() {
			k := string(it.Key())
			seen = append(seen, k)
			if _, err := txn.Get(t.Context(), it.Key()); err != nil {
				t.Fatalf("get %s during the walk: %v", k, err)
			}
			mustPut(t, txn, "s/"+k, "copied")
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		if len(seen) != len(all) {
			t.Fatalf("walk with writes saw %q", seen)
		}
		wantValue(t, txn, "s/r/6", "copied")

		// fn's own write undone, and a deleted key written again.
		mustDelete(t, txn, "r/4")
		mustPut(t, txn, "r/2", "again")
		wantPairs(t, "iterate at the end of the update", collect(t, txn, []byte("r/"), kv.IterOptions{}), final)
		return nil
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	wantPairs(t, "after commit", collect(t, s, []byte("r/"), kv.IterOptions{}), final)
	if n := len(collect(t, s, []byte("s/"), kv.IterOptions{})); n != 6 {
		t.Fatalf("%d keys under s/, want 6", n)
	}
}

// testUpdateExclusive: increments of counters under their locks, from many
// goroutines of one handle, lose nothing; two lock names do not block
// each other.
func testUpdateExclusive(t *testing.T, open opener) {
	s := newStore(t, open)
	hammer(t, []kv.Store{s}, []string{"c/a", "c/b"})
}

// testUpdateExclusiveAcrossHandles: the same with the goroutines split over
// two handles of the store, as two processes sharing it: the lock holds
// across them.
func testUpdateExclusiveAcrossHandles(t *testing.T, open opener) {
	s, other := handles(t, open)
	hammer(t, []kv.Store{s, other}, []string{"c/a"})
}

// hammer has workers goroutines per counter, spread over stores, each
// increment a counter `each` times under the counter's lock, and checks
// the totals.
func hammer(t *testing.T, stores []kv.Store, counters []string) {
	t.Helper()
	const workers, each = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers*len(counters))
	for _, name := range counters {
		for w := range workers {
			s := stores[w%len(stores)]
			wg.Go(func() {
				for i := range each {
					if err := s.Update(context.Background(), name, func(txn kv.Txn) error {
						return increment(t.Context(), txn, name, fmt.Sprintf("%s/log/%d/%02d", name, w, i))
					}); err != nil {
						errs <- fmt.Errorf("%s worker %d increment %d: %w", name, w, i, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, name := range counters {
		for i, s := range stores {
			wantValue(t, s, name, strconv.Itoa(workers*each))
			if n := len(collect(t, s, []byte(name+"/log/"), kv.IterOptions{})); n != workers*each {
				t.Fatalf("handle %d: %d log records of %s, want %d", i, n, name, workers*each)
			}
		}
	}
}

// increment adds one to the counter under key, read and written in txn,
// and records the increment under logKey; reading the log between the read
// and the write of the counter widens the window a broken lock would show.
func increment(ctx context.Context, txn kv.Txn, key, logKey string) error {
	n := 0
	v, err := txn.Get(ctx, []byte(key))
	switch {
	case errors.Is(err, kv.ErrNotFound):
	case err != nil:
		return err
	default:
		if n, err = strconv.Atoi(string(v)); err != nil {
			return fmt.Errorf("counter holds %q", v)
		}
	}
	if _, err := txn.Get(ctx, []byte(logKey)); !errors.Is(err, kv.ErrNotFound) {
		return fmt.Errorf("log record %s exists already: %v", logKey, err)
	}
	if err := txn.Put([]byte(logKey), []byte(strconv.Itoa(n))); err != nil {
		return err
	}
	return txn.Put([]byte(key), []byte(strconv.Itoa(n+1)))
}

// testUpdateCancelled: an Update whose ctx is already done, or ends while
// it waits for a lock another handle holds, returns ctx's error and writes
// nothing; the wait it gave up leaves the lock working.
func testUpdateCancelled(t *testing.T, open opener) {
	s, other := handles(t, open)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	// Several times: a lock free at once must not win over a done ctx.
	for i := range 20 {
		err := s.Update(done, "x", func(txn kv.Txn) error {
			return txn.Put([]byte("x/early"), []byte("1"))
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("update %d with a cancelled ctx: err = %v, want context.Canceled", i, err)
		}
	}
	wantMissing(t, s, "x/early")

	holding := make(chan struct{})
	release := make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- s.Update(context.Background(), "x", func(txn kv.Txn) error {
			if err := txn.Put([]byte("x/holder"), []byte("1")); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	ctx, stop := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	ran := make(chan struct{}, 1)
	go func() {
		waited <- other.Update(ctx, "x", func(txn kv.Txn) error {
			ran <- struct{}{}
			return txn.Put([]byte("x/waiter"), []byte("1"))
		})
	}()
	stop()
	// The holder keeps the lock until the waiter returned, so the waiter
	// can only give up.
	err := <-waited
	close(release)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("update cancelled while it waited: err = %v, want context.Canceled", err)
	}
	if err := <-held; err != nil {
		t.Fatalf("holder: %v", err)
	}
	select {
	case <-ran:
		t.Fatal("fn ran while another handle held the lock")
	default:
	}
	wantValue(t, s, "x/holder", "1")
	wantMissing(t, s, "x/waiter")
	for _, h := range []kv.Store{s, other} {
		if err := h.Update(context.Background(), "x", func(txn kv.Txn) error {
			return txn.Put([]byte("x/after"), []byte("1"))
		}); err != nil {
			t.Fatalf("update after a cancelled wait: %v", err)
		}
	}
	wantValue(t, other, "x/after", "1")
}

// testUpdateTxnAfterReturn: a txn kept past fn answers kv.ErrClosed and
// writes nothing, whether the Update committed or failed.
func testUpdateTxnAfterReturn(t *testing.T, open opener) {
	s := newStore(t, open)
	mustPut(t, s, "t/0", "v")
	boom := errors.New("kvtest: fn failed")
	for _, fail := range []bool{false, true} {
		var kept kv.Txn
		err := s.Update(context.Background(), "t", func(txn kv.Txn) error {
			kept = txn
			if err := txn.Put([]byte("t/1"), []byte("v")); err != nil {
				return err
			}
			if fail {
				return boom
			}
			return nil
		})
		if fail && err != boom || !fail && err != nil {
			t.Fatalf("update (failing %v): %v", fail, err)
		}
		wantClosed := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, kv.ErrClosed) {
				t.Errorf("%s after fn returned (failing %v): err = %v, want kv.ErrClosed", what, fail, err)
			}
		}
		_, err = kept.Get(t.Context(), []byte("t/0"))
		wantClosed("Get", err)
		wantClosed("Put", kept.Put([]byte("t/2"), []byte("v")))
		wantClosed("Delete", kept.Delete([]byte("t/0")))
		it := kept.Iterate(t.Context(), []byte("t/"), kv.IterOptions{})
		if it.Next() {
			t.Errorf("Iterate after fn returned yielded %q", it.Key())
		}
		wantClosed("Iterate", it.Err())
		it.Close()
		wantValue(t, s, "t/0", "v")
		wantMissing(t, s, "t/2")
	}
	wantValue(t, s, "t/1", "v")
}
