package pgkv

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
)

// hangLimit is how long a call may take before a test calls it hung: far
// beyond every timeout of the stores under test.
const hangLimit = 2 * time.Minute

// within waits for the result of a call running in another goroutine.
func within(t *testing.T, what string, result <-chan error) error {
	t.Helper()
	select {
	case err := <-result:
		return err
	case <-time.After(hangLimit):
		t.Fatalf("%s did not return in %v", what, hangLimit)
		return nil
	}
}

// observer is a connection of the test's own to url, to watch pg_locks.
func observer(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatalf("observer: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// lockWaiters counts the sessions of conn's database waiting for an
// advisory lock.
func lockWaiters(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var n int
	err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
		WHERE locktype = 'advisory' AND NOT granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
	if err != nil {
		t.Fatalf("read pg_locks: %v", err)
	}
	return n
}

// awaitLockWaiters returns once n sessions wait for an advisory lock: the
// condition is polled, each poll one round trip.
func awaitLockWaiters(t *testing.T, conn *pgx.Conn, n int) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for lockWaiters(t, conn) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions do not wait for an advisory lock after %v", n, hangLimit)
		}
	}
}

// holdLock runs an Update on s that holds lock until release is closed,
// after writing key; it returns once fn holds the lock, and the Update's
// result arrives on the channel.
func holdLock(s *Store, lock, key string, release <-chan struct{}) <-chan error {
	holding := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- s.Update(context.Background(), lock, func(txn kv.Txn) error {
			if err := txn.Put([]byte(key), []byte("1")); err != nil {
				close(holding)
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	return result
}

// TestUpdateWaitEnds: an Update waiting for a lock that another handle
// holds stops waiting, in this process and on the server, when its ctx is
// cancelled, when OpTimeout or StatementTimeout pass, and when its store
// is closed.
func TestUpdateWaitEnds(t *testing.T) {
	url := pgtest.Shared(t).Database(t)
	holder := open(t, url, Options{})
	obs := observer(t, url)
	release := make(chan struct{})
	held := holdLock(holder, "k", "k/holder", release)

	tests := []struct {
		name string
		opts Options
		// end, when set, ends the wait once the Update waits on the server.
		end  func(s *Store, cancel context.CancelFunc) error
		want func(error) bool
	}{
		{
			name: "ctx cancelled",
			end:  func(_ *Store, cancel context.CancelFunc) error { cancel(); return nil },
			want: func(err error) bool { return err == context.Canceled },
		},
		{
			name: "OpTimeout",
			opts: Options{OpTimeout: time.Second},
			want: func(err error) bool {
				return errors.Is(err, ErrUnavailable) && !errors.Is(err, context.Canceled)
			},
		},
		{
			name: "StatementTimeout",
			opts: Options{StatementTimeout: time.Second},
			want: func(err error) bool {
				return errors.Is(err, ErrUnavailable) && strings.Contains(err.Error(), "statement timeout")
			},
		},
		{
			name: "store closed",
			end:  func(s *Store, _ context.CancelFunc) error { return s.Close() },
			want: func(err error) bool { return errors.Is(err, kv.ErrClosed) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, url, tc.opts)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ran atomic.Bool
			result := make(chan error, 1)
			go func() {
				result <- s.Update(ctx, "k", func(kv.Txn) error { ran.Store(true); return nil })
			}()
			ended := make(chan error, 1)
			if tc.end != nil {
				awaitLockWaiters(t, obs, 1)
				// Close returns only once the Update has.
				go func() { ended <- tc.end(s, cancel) }()
			}
			err := within(t, "the waiting update", result)
			if tc.end != nil {
				if err := within(t, "ending the wait", ended); err != nil {
					t.Fatalf("end the wait: %v", err)
				}
			}
			if !tc.want(err) {
				t.Fatalf("update: err = %v", err)
			}
			if ran.Load() {
				t.Fatal("fn ran while another handle held the lock")
			}
			// The server stopped waiting too: nothing is left in the
			// lock's queue.
			if n := lockWaiters(t, obs); n != 0 {
				t.Fatalf("%d sessions still wait for the lock", n)
			}
		})
	}

	close(release)
	if err := within(t, "the holder", held); err != nil {
		t.Fatalf("holder: %v", err)
	}
	// The waits given up left the lock working, for a store that waited.
	s := open(t, url, Options{})
	if err := s.Update(context.Background(), "k", func(txn kv.Txn) error {
		v, err := txn.Get(t.Context(), []byte("k/holder"))
		if err != nil || string(v) != "1" {
			return fmt.Errorf("holder's write: %q, %v", v, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestUpdateHolderDies: when the connection of the process holding a lock
// dies (its socket closed, as when the process is killed), the server
// rolls its transaction back and releases the lock to the next process;
// the dead holder's commit fails with ErrUnavailable and its fn does not
// run again.
func TestUpdateHolderDies(t *testing.T) {
	url := pgtest.Shared(t).Database(t)
	holder, next := open(t, url, Options{}), open(t, url, Options{})
	obs := observer(t, url)
	holding, kill, resume := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	held := make(chan error, 1)
	go func() {
		held <- holder.Update(context.Background(), "k", func(tx kv.Txn) error {
			calls.Add(1)
			if err := tx.Put([]byte("k/holder"), []byte("1")); err != nil {
				close(holding)
				return err
			}
			close(holding)
			<-kill
			// This goroutine is the only user of the connection.
			tx.(*txn).c.Conn().PgConn().Conn().Close()
			<-resume
			return nil
		})
	}()
	<-holding
	waited := make(chan error, 1)
	go func() {
		waited <- next.Update(context.Background(), "k", func(txn kv.Txn) error {
			if v, err := txn.Get(t.Context(), []byte("k/holder")); !errors.Is(err, kv.ErrNotFound) {
				return fmt.Errorf("the dead holder's write is visible: %q, %v", v, err)
			}
			return txn.Put([]byte("k/next"), []byte("1"))
		})
	}()
	awaitLockWaiters(t, obs, 1)
	close(kill)
	// The next process gets the lock while the dead holder's fn still runs.
	if err := within(t, "the next update", waited); err != nil {
		t.Fatalf("update after the holder died: %v", err)
	}
	close(resume)
	if err := within(t, "the dead holder", held); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("dead holder's update: err = %v, want ErrUnavailable", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the dead holder's fn ran %d times", n)
	}
	if _, err := next.Get(t.Context(), []byte("k/holder")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("the dead holder's write: err = %v, want kv.ErrNotFound", err)
	}
	// The holder's store goes on with a new connection.
	if err := holder.Update(context.Background(), "k", func(txn kv.Txn) error {
		return txn.Put([]byte("k/holder"), []byte("2"))
	}); err != nil {
		t.Fatalf("update on the holder's store afterwards: %v", err)
	}
	if v, err := next.Get(t.Context(), []byte("k/holder")); err != nil || string(v) != "2" {
		t.Fatalf("k/holder = %q, %v", v, err)
	}
}

// TestUpdateOutage stops and restarts a private server under Updates of two
// handles: they fail with ErrUnavailable (a waiter, a holder whose commit
// cannot be sent, Updates while the server is down), never hang, never run
// fn twice, and succeed again once the server is back; increments running
// across a restart lose nothing acknowledged.
func TestUpdateOutage(t *testing.T) {
	c := pgtest.New(t)
	url := c.Database(t)
	opts := Options{MaxConns: 4, OpTimeout: 20 * time.Second}
	s1, s2 := open(t, url, opts), open(t, url, opts)
	ctx := context.Background()
	noPassword := func(what string, err error) {
		t.Helper()
		if err != nil && strings.Contains(err.Error(), c.Password()) {
			t.Errorf("%s: error holds the password: %v", what, err)
		}
	}

	// A holder inside fn and a waiter on the server when it stops.
	obs := observer(t, url)
	release := make(chan struct{})
	var holderCalls atomic.Int32
	held := make(chan error, 1)
	holding := make(chan struct{})
	go func() {
		held <- s1.Update(ctx, "k", func(txn kv.Txn) error {
			holderCalls.Add(1)
			err := txn.Put([]byte("k/holder"), []byte("1"))
			close(holding)
			<-release
			return err
		})
	}()
	<-holding
	var waiterRan atomic.Bool
	waited := make(chan error, 1)
	go func() {
		waited <- s2.Update(ctx, "k", func(kv.Txn) error { waiterRan.Store(true); return nil })
	}()
	awaitLockWaiters(t, obs, 1)
	obs.Close(ctx)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	err := within(t, "the waiter", waited)
	if !errors.Is(err, ErrUnavailable) || waiterRan.Load() {
		t.Errorf("waiter when the server stopped: err = %v (fn ran: %v), want ErrUnavailable", err, waiterRan.Load())
	}
	noPassword("waiter", err)
	close(release)
	err = within(t, "the holder", held)
	if !errors.Is(err, ErrUnavailable) || holderCalls.Load() != 1 {
		t.Errorf("holder when the server stopped: err = %v, fn ran %d times; want ErrUnavailable, once", err, holderCalls.Load())
	}
	noPassword("holder", err)
	for i, s := range []*Store{s1, s2} {
		var ran atomic.Bool
		err := s.Update(ctx, "k", func(kv.Txn) error { ran.Store(true); return nil })
		if !errors.Is(err, ErrUnavailable) || ran.Load() {
			t.Errorf("handle %d while the server is down: err = %v (fn ran: %v), want ErrUnavailable", i, err, ran.Load())
		}
		noPassword("update while down", err)
	}

	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*Store{s1, s2} {
		if err := s.Update(ctx, "k", func(txn kv.Txn) error {
			if _, err := txn.Get(ctx, []byte("k/holder")); !errors.Is(err, kv.ErrNotFound) {
				return fmt.Errorf("the holder's uncommitted write: %v", err)
			}
			return txn.Put([]byte("n"), []byte("0"))
		}); err != nil {
			t.Fatalf("handle %d once the server is back: %v", i, err)
		}
	}

	// A restart with idle connections in the pools: the first Update
	// replaces the dead connection, fn runs once.
	fillPool(t, s1)
	fillPool(t, s2)
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	for i, s := range []*Store{s1, s2} {
		calls := 0
		if err := s.Update(ctx, "k", func(txn kv.Txn) error {
			calls++
			_, err := txn.Get(ctx, []byte("n"))
			return err
		}); err != nil || calls != 1 {
			t.Fatalf("handle %d: first update after a restart: %v (fn ran %d times)", i, err, calls)
		}
	}

	// Increments from both handles while the server restarts.
	const workers = 4
	var ok, ambiguous, failed atomic.Int64
	progress := make(chan struct{}, 1)
	restarted := make(chan struct{})
	recovered := make(chan struct{}, workers)
	stop := make(chan struct{})
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		s := []*Store{s1, s2}[w%2]
		wg.Go(func() {
			back := false
			for {
				select {
				case <-stop:
					return
				default:
				}
				after := isClosed(restarted)
				committing := false
				err := s.Update(ctx, "n", func(txn kv.Txn) error {
					v, err := txn.Get(ctx, []byte("n"))
					if err != nil {
						return err
					}
					n, err := strconv.Atoi(string(v))
					if err != nil {
						return fmt.Errorf("counter holds %q", v)
					}
					if err := txn.Put([]byte("n"), []byte(strconv.Itoa(n+1))); err != nil {
						return err
					}
					committing = true
					return nil
				})
				switch {
				case err == nil:
					ok.Add(1)
					select {
					case progress <- struct{}{}:
					default:
					}
					if after && !back {
						back = true
						recovered <- struct{}{}
					}
				case errors.Is(err, ErrUnavailable) && !strings.Contains(err.Error(), c.Password()):
					failed.Add(1)
					if committing {
						ambiguous.Add(1)
					}
				default:
					errs <- fmt.Errorf("worker %d: %w", w, err)
					return
				}
			}
		})
	}
	finished := make(chan error, 1)
	go func() {
		wg.Wait()
		close(errs)
		finished <- nil
	}()
	fail := func(err error) {
		t.Helper()
		close(stop)
		within(t, "the workers", finished)
		t.Fatal(err)
	}
	for range 5 {
		select {
		case <-progress:
		case err := <-errs:
			fail(err)
		}
	}
	if err := c.Restart(); err != nil {
		fail(err)
	}
	close(restarted)
	deadline := time.After(hangLimit)
	for range workers {
		select {
		case <-recovered:
		case err := <-errs:
			fail(err)
		case <-deadline:
			fail(fmt.Errorf("workers did not all succeed in %v after the restart", hangLimit))
		}
	}
	close(stop)
	within(t, "the workers", finished)
	for err := range errs {
		t.Fatal(err)
	}
	v, err := s1.Get(ctx, []byte("n"))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(string(v))
	t.Logf("across the restart: %d increments acknowledged, %d failed, %d of them ambiguous; counter %d", ok.Load(), failed.Load(), ambiguous.Load(), n)
	// Every acknowledged increment is there; an ambiguous one may be.
	if lo, hi := ok.Load(), ok.Load()+ambiguous.Load(); int64(n) < lo || int64(n) > hi {
		t.Fatalf("counter = %d after %d acknowledged and %d ambiguous increments", n, lo, hi-lo)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestUpdateStripes: Updates hold at most as many connections as there are
// stripes, fewer than the pool's, so that other calls keep connections
// while Updates pile up.
func TestUpdateStripes(t *testing.T) {
	url := pgtest.Shared(t).Database(t)
	for _, tc := range []struct {
		url     string
		opts    Options
		stripes int
	}{
		{url: url, opts: Options{}, stripes: 8},
		{url: url, opts: Options{MaxConns: 1}, stripes: 1},
		{url: url, opts: Options{MaxConns: 3}, stripes: 1},
		{url: url, opts: Options{MaxConns: 4}, stripes: 2},
		{url: url, opts: Options{MaxConns: 40}, stripes: 8},
		{url: url + "&pool_max_conns=6", opts: Options{}, stripes: 3},
	} {
		s := open(t, tc.url, tc.opts)
		if n := len(s.locks.stripes); n != tc.stripes {
			t.Errorf("MaxConns %d: %d stripes, want %d", s.pool.Config().MaxConns, n, tc.stripes)
		}
	}
	if DefaultMaxConns <= maxUpdateStripes {
		t.Errorf("DefaultMaxConns %d leaves no connection beside %d Updates", DefaultMaxConns, maxUpdateStripes)
	}

	s := open(t, url, Options{MaxConns: 4, OpTimeout: 5 * time.Second})
	if err := s.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	entered := make(chan struct{}, 16)
	var results []chan error
	for i := range 16 {
		result := make(chan error, 1)
		results = append(results, result)
		go func() {
			result <- s.Update(context.Background(), fmt.Sprintf("lock %d", i), func(kv.Txn) error {
				entered <- struct{}{}
				<-release
				return nil
			})
		}()
	}
	<-entered
	if v, err := s.Get(t.Context(), []byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("get while Updates pile up: %q, %v", v, err)
	}
	if n := s.pool.Stat().AcquiredConns(); n > 2 {
		t.Fatalf("Updates hold %d connections of 4", n)
	}
	close(release)
	for _, r := range results {
		if err := within(t, "an update", r); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLockKey: a name's advisory lock key is the first 8 bytes of the
// SHA-256 of "pictor/kv.Update", a zero byte and the name, read as a
// big-endian int64. Processes of every version sharing a database must
// agree on it, so the test computes it again, in SQL, from that definition.
func TestLockKey(t *testing.T) {
	conn := observer(t, pgtest.Shared(t).Database(t))
	for _, name := range []string{"", "credits/acct_1", "image/ü/\xff", strings.Repeat("long ", 200)} {
		var want int64
		err := conn.QueryRow(context.Background(), `SELECT ('x' || left(encode(sha256(
			convert_to('pictor/kv.Update', 'UTF8') || '\x00'::bytea || $1::bytea), 'hex'), 16))::bit(64)::bigint`,
			[]byte(name)).Scan(&want)
		if err != nil {
			t.Fatal(err)
		}
		if got := lockKey(name); got != want {
			t.Errorf("lockKey(%q) = %d, want %d", name, got, want)
		}
	}
	if lockKey("a") == lockKey("b") || lockKey("a") == migrationLock {
		t.Error("lock keys collide")
	}
}
