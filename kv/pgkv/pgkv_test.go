package pgkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/kvtest"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// open opens a store on url, closed when the test ends.
func open(t *testing.T, url string, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the shared suite on a fresh database per case, with
// the default pages and with pages of two rows, so that every walk crosses
// page boundaries. The second handle of a store, for the cases about
// processes sharing it, is another Open of its database.
func TestConformance(t *testing.T) {
	backends := []struct {
		name string
		opts Options
	}{
		{name: "default", opts: Options{}},
		{name: "pages of 2 rows", opts: Options{PageSize: 2}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			var urls sync.Map // *Store → its database URL
			openURL := func(t *testing.T, url string) kv.Store {
				s, err := Open(context.Background(), url, b.opts)
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				urls.Store(s, url)
				return s
			}
			kvtest.Run(t, func(t *testing.T) kv.Store {
				return openURL(t, pgtest.Shared(t).Database(t))
			}, kvtest.SecondHandle(func(t *testing.T, s kv.Store) kv.Store {
				url, ok := urls.Load(s)
				if !ok {
					t.Fatal("second handle of a store this test did not open")
				}
				return openURL(t, url.(string))
			}))
		})
	}
}

// TestByteaOrder checks in SQL itself that PostgreSQL orders bytea keys as
// bytes.Compare does, on keys full of 0x00 and 0xff.
func TestByteaOrder(t *testing.T) {
	s := open(t, pgtest.Shared(t).Database(t), Options{})
	alphabet := []byte{0x00, 0x01, 'a', 0x7f, 0x80, 0xfe, 0xff}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	var keys [][]byte
	for len(keys) < 400 {
		k := make([]byte, r.IntN(6))
		for i := range k {
			k[i] = alphabet[r.IntN(len(alphabet))]
		}
		if !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	b := s.NewBatch()
	for _, k := range keys {
		b.Put(k, nil)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rows, err := s.pool.Query(ctx, `SELECT k FROM kv ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for rows.Next() {
		var k []byte
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(keys, bytes.Compare)
	if !slices.EqualFunc(got, keys, bytes.Equal) {
		t.Fatalf("ORDER BY k differs from bytes.Compare:\n got %q\nwant %q", got, keys)
	}
	var collation *string
	if err := s.pool.QueryRow(ctx, `SELECT collation_name FROM information_schema.columns WHERE table_name = 'kv' AND column_name = 'k'`).Scan(&collation); err != nil {
		t.Fatal(err)
	}
	if collation != nil {
		t.Fatalf("k has collation %s", *collation)
	}
}

func schemaVersions(t *testing.T, s *Store) map[int]time.Time {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT version, applied_at FROM schema_migrations`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]time.Time{}
	for rows.Next() {
		var v int
		var at time.Time
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		out[v] = at
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMigrations(t *testing.T) {
	ctx := context.Background()
	t.Run("from empty, then idempotent", func(t *testing.T) {
		url := pgtest.Shared(t).Database(t)
		s := open(t, url, Options{})
		first := schemaVersions(t, s)
		if len(first) != len(migrations) {
			t.Fatalf("versions %v, want 1..%d", first, len(migrations))
		}
		var typ string
		if err := s.pool.QueryRow(ctx, `SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'kv'`).Scan(&typ); err != nil {
			t.Fatal(err)
		}
		if typ != "k bytea NO, v bytea NO" {
			t.Fatalf("kv columns: %s", typ)
		}
		again := open(t, url, Options{})
		if second := schemaVersions(t, again); !maps(first, second) {
			t.Fatalf("reopening changed the versions: %v, then %v", first, second)
		}
	})
	t.Run("applies only what is new, atomically", func(t *testing.T) {
		s := open(t, pgtest.Shared(t).Database(t), Options{})
		longer := append(slices.Clone(migrations), `CREATE TABLE extra (id int)`)
		applied, err := migrate(ctx, s.pool, longer)
		if err != nil || !slices.Equal(applied, []int{len(migrations) + 1}) {
			t.Fatalf("applied %v, %v; want only version %d", applied, err, len(migrations)+1)
		}
		if applied, err := migrate(ctx, s.pool, longer); err != nil || len(applied) != 0 {
			t.Fatalf("second run applied %v, %v", applied, err)
		}
		broken := append(slices.Clone(longer), `CREATE TABLE half (id int)`, `SELECT no_such_column FROM extra`)
		if _, err := migrate(ctx, s.pool, broken); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("version %d", len(broken))) {
			t.Fatalf("broken migration: err = %v", err)
		}
		var half bool
		s.pool.QueryRow(ctx, `SELECT to_regclass('half') IS NOT NULL`).Scan(&half)
		if v := schemaVersions(t, s); len(v) != len(longer) || half {
			t.Fatalf("a failed run left versions %v, table half %v", v, half)
		}
	})
	t.Run("newer schema", func(t *testing.T) {
		url := pgtest.Shared(t).Database(t)
		s := open(t, url, Options{})
		if _, err := s.pool.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES (999)`); err != nil {
			t.Fatal(err)
		}
		_, err := Open(ctx, url, Options{})
		if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "999") {
			t.Fatalf("open: err = %v, want ErrSchemaTooNew naming version 999", err)
		}
	})
	t.Run("concurrent starts", func(t *testing.T) {
		url := pgtest.Shared(t).Database(t)
		const n = 8
		stores := make([]*Store, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				stores[i], errs[i] = Open(ctx, url, Options{MaxConns: 2})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("open %d: %v", i, err)
			}
			defer stores[i].Close()
		}
		if v := schemaVersions(t, stores[0]); len(v) != len(migrations) {
			t.Fatalf("versions %v", v)
		}
		if err := stores[3].Put([]byte("k"), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if v, err := stores[5].Get(ctx, []byte("k")); err != nil || string(v) != "v" {
			t.Fatalf("another process's write: %q, %v", v, err)
		}
	})
}

func maps(a, b map[int]time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !w.Equal(v) {
			return false
		}
	}
	return true
}

// logBuffer collects log lines from concurrent goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestOpenErrors: a bad URL, a wrong password, a missing database or an
// unreachable server give an error naming the host, and no error or log
// line holds a password.
func TestOpenErrors(t *testing.T) {
	c := pgtest.Shared(t)
	good := c.Database(t)
	db := good[strings.LastIndex(good, "/")+1 : strings.Index(good, "?")]
	// Nothing listens on port 1.
	const closedPort = "127.0.0.1:1"
	const wrong = "wr0ng-p@ss:w/rd?&="
	escaped := "wr0ng-p%40ss%3Aw%2Frd%3F%26%3D"
	var logs logBuffer
	tests := []struct {
		name        string
		url         string
		host        string
		unavailable bool
	}{
		{name: "wrong password", url: "postgres://" + pgtest.Role + ":" + escaped + "@" + c.Addr() + "/" + db, host: c.Addr()},
		{name: "password in the query", url: "postgresql://" + c.Addr() + "/" + db + "?user=" + pgtest.Role + "&password=" + escaped, host: c.Addr()},
		{name: "missing database", url: strings.Replace(good, "/"+db, "/nosuchdb", 1), host: c.Addr()},
		{name: "unreachable server", url: "postgres://" + pgtest.Role + ":" + escaped + "@" + closedPort + "/" + db, host: closedPort, unavailable: true},
		{name: "unparsable port", url: "postgres://" + pgtest.Role + ":" + c.Password() + "@db.example:port/" + db, host: "db.example:port"},
		{name: "raw special characters", url: "postgres://" + pgtest.Role + ":" + wrong + "@db.example:5432/" + db, host: "db.example"},
		{name: "bad parameter", url: "postgres://" + pgtest.Role + ":" + c.Password() + "@db.example:5432/" + db + "?sslmode=bogus", host: "db.example:5432"},
		{name: "other scheme", url: "mysql://" + pgtest.Role + ":" + c.Password() + "@" + c.Addr() + "/" + db, host: c.Addr()},
		{name: "password with a space", url: "postgres://" + pgtest.Role + ":wr0ng p@ss@db.example/" + db, host: "db.example"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := Open(ctx, tc.url, Options{Logger: logs.logger(), ConnectTimeout: 10 * time.Second})
			if err == nil {
				s.Close()
				t.Fatal("open succeeded")
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.Contains(msg, tc.host) {
				t.Errorf("error does not name %s", tc.host)
			}
			for _, secret := range []string{c.Password(), wrong, escaped, "p@ss"} {
				if strings.Contains(msg, secret) {
					t.Errorf("error holds the password %q", secret)
				}
			}
			if got := errors.Is(err, ErrUnavailable); got != tc.unavailable {
				t.Errorf("errors.Is(err, ErrUnavailable) = %v, want %v", got, tc.unavailable)
			}
		})
	}
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		s, err := Open(context.Background(), strings.Replace(good, "postgres://", scheme, 1), Options{Logger: logs.logger()})
		if err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		s.Close()
	}
	for _, secret := range []string{c.Password(), wrong, escaped} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("log holds the password %q:\n%s", secret, logs.String())
		}
	}
}

// TestOutage stops and restarts a private server under a store: calls fail
// with ErrUnavailable while it is down and succeed once it is back, without
// reopening the store.
func TestOutage(t *testing.T) {
	c := pgtest.New(t)
	var logs logBuffer
	s := open(t, c.Database(t), Options{Logger: logs.logger(), MaxConns: 4})
	for i := range 4 {
		if err := s.Put(fmt.Appendf(nil, "k/%d", i), []byte("before")); err != nil {
			t.Fatal(err)
		}
	}
	held := s.Snapshot()
	defer held.Close()
	if _, err := held.Get(t.Context(), []byte("k/0")); err != nil {
		t.Fatal(err)
	}
	// Fill the pool with idle connections that the restart kills.
	fillPool(t, s)

	ops := []struct {
		name string
		do   func() error
	}{
		{"get", func() error { _, err := s.Get(t.Context(), []byte("k/1")); return err }},
		{"put", func() error { return s.Put([]byte("k/new"), []byte("v")) }},
		{"delete", func() error { return s.Delete([]byte("k/2")) }},
		{"commit", func() error {
			b := s.NewBatch()
			defer b.Close()
			b.Put([]byte("k/b1"), []byte("v"))
			b.Delete([]byte("k/3"))
			return b.Commit()
		}},
		{"iterate", func() error {
			it := s.Iterate(t.Context(), []byte("k/"), kv.IterOptions{Reverse: true})
			defer it.Close()
			for it.Next() {
			}
			return it.Err()
		}},
		{"snapshot", func() error {
			snap := s.Snapshot()
			defer snap.Close()
			_, err := snap.Get(t.Context(), []byte("k/0"))
			return err
		}},
	}
	check := func(t *testing.T, wantDown bool) {
		t.Helper()
		for _, op := range ops {
			err := op.do()
			switch {
			case wantDown && !errors.Is(err, ErrUnavailable):
				t.Errorf("%s while the server is down: err = %v, want ErrUnavailable", op.name, err)
			case !wantDown && err != nil:
				t.Errorf("%s once the server is back: %v", op.name, err)
			}
			if err != nil && strings.Contains(err.Error(), c.Password()) {
				t.Errorf("%s: error holds the password", op.name)
			}
		}
	}

	if st := s.Stats(); st != (Stats{}) {
		t.Fatalf("stats before the outage: %+v, want none", st)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	check(t, true)
	if _, err := held.Get(t.Context(), []byte("k/0")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("snapshot taken before the outage: err = %v, want ErrUnavailable", err)
	}
	down := s.Stats()
	if !down.Down || down.Unavailable < uint64(len(ops)+1) {
		t.Errorf("stats during the outage: %+v, want down and each of the %d failed calls counted", down, len(ops)+1)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	check(t, false)
	if st := s.Stats(); st.Down || st.Unavailable != down.Unavailable {
		t.Errorf("stats once the server is back: %+v, want up and still %d unavailable calls", st, down.Unavailable)
	}
	if v, err := s.Get(t.Context(), []byte("k/0")); err != nil || string(v) != "before" {
		t.Fatalf("a write from before the outage: %q, %v", v, err)
	}
	if _, err := held.Get(t.Context(), []byte("k/0")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("a snapshot broken by the outage stays broken: err = %v", err)
	}

	// A restart with no call in between: the pool holds only dead
	// connections. Reads are retried on a new connection at once.
	fillPool(t, s)
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(t.Context(), []byte("k/0")); err != nil || string(v) != "before" {
		t.Fatalf("first read after a restart: %q, %v", v, err)
	}
	check(t, false)

	// A write that meets a dead connection is retried only when nothing
	// reached the server; otherwise it answers ErrUnavailable (it may or
	// may not have been applied) and the next write goes through.
	fillPool(t, s)
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := s.Put([]byte("k/after"), []byte("1")); err != nil && !errors.Is(err, ErrUnavailable) {
		t.Fatalf("first write after a restart: %v", err)
	}
	if err := s.Put([]byte("k/after"), []byte("2")); err != nil {
		t.Fatalf("second write after a restart: %v", err)
	}

	log := logs.String()
	if strings.Contains(log, c.Password()) {
		t.Errorf("log holds the password:\n%s", log)
	}
	if !strings.Contains(log, "pgkv database unavailable") || !strings.Contains(log, "pgkv database reachable again") {
		t.Errorf("log does not tell the outage:\n%s", log)
	}
	if n := strings.Count(log, "pgkv database unavailable"); n > 3 {
		t.Errorf("the outages were logged %d times:\n%s", n, log)
	}
}

// fillPool opens every connection the pool may have and leaves those that
// are not held idle.
func fillPool(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	var conns []interface{ Release() }
	for range s.pool.Config().MaxConns - s.pool.Stat().AcquiredConns() {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
}

// TestFailingBatchLeavesNothing makes the server refuse the last write of a
// batch (a trigger raises on one key) and checks that none of it stays.
func TestFailingBatchLeavesNothing(t *testing.T) {
	s := open(t, pgtest.Shared(t).Database(t), Options{})
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `
CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.k = 'poison'::bytea THEN RAISE EXCEPTION 'poisoned write'; END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER refuse_poison BEFORE INSERT OR UPDATE ON kv FOR EACH ROW EXECUTE FUNCTION refuse_poison();
`); err != nil {
		t.Fatal(err)
	}
	if err := s.Put([]byte("keep"), []byte("old")); err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	b.Put([]byte("a"), []byte("1"))
	b.Put([]byte("keep"), []byte("new"))
	b.Delete([]byte("keep"))
	b.Put([]byte("poison"), []byte("x"))
	b.Put([]byte("z"), []byte("1"))
	err := b.Commit()
	if err == nil || !strings.Contains(err.Error(), "poisoned write") || errors.Is(err, ErrUnavailable) {
		t.Fatalf("commit: err = %v, want the server's refusal", err)
	}
	b.Close()
	for _, k := range []string{"a", "poison", "z"} {
		if _, err := s.Get(ctx, []byte(k)); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("%s after the failed batch: err = %v", k, err)
		}
	}
	if v, err := s.Get(ctx, []byte("keep")); err != nil || string(v) != "old" {
		t.Errorf("keep after the failed batch: %q, %v", v, err)
	}
	if err := s.Put([]byte("poison"), nil); err == nil {
		t.Error("a single refused put succeeded")
	}
	if err := s.Put([]byte("after"), []byte("1")); err != nil {
		t.Errorf("the store after a refused batch: %v", err)
	}
}

// TestSnapshotLifetime: a snapshot held too long ends by itself and gives
// its connection back.
func TestSnapshotLifetime(t *testing.T) {
	s := open(t, pgtest.Shared(t).Database(t), Options{SnapshotLifetime: time.Millisecond, MaxConns: 1})
	if err := s.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	defer snap.Close()
	// Reads succeed until the timer ends the transaction; the loop waits
	// for that event, not for a duration.
	for {
		_, err := snap.Get(t.Context(), []byte("k"))
		if errors.Is(err, ErrSnapshotExpired) {
			break
		}
		if err != nil {
			t.Fatalf("snapshot get: %v", err)
		}
	}
	it := snap.Iterate(t.Context(), nil, kv.IterOptions{})
	if it.Next() || !errors.Is(it.Err(), ErrSnapshotExpired) {
		t.Fatalf("iterate an expired snapshot: %v", it.Err())
	}
	// The one connection is back in the pool.
	if v, err := s.Get(t.Context(), []byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("store after the snapshot expired: %q, %v", v, err)
	}
	if n := s.pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections still held", n)
	}
}

// TestPages: an iteration asks for at most PageSize rows and holds at most
// one page, and a page of large values stops at pageBytes.
func TestPages(t *testing.T) {
	s := open(t, pgtest.Shared(t).Database(t), Options{PageSize: 5})
	b := s.NewBatch()
	for i := range 40 {
		b.Put(fmt.Appendf(nil, "p/%02d", i), []byte("v"))
	}
	big := bytes.Repeat([]byte{0xab}, 3<<20)
	for i := range 4 {
		b.Put(fmt.Appendf(nil, "q/%d", i), big)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	var limits []int
	var sizes []int
	fetch := func(sql string, args []any) ([]row, bool, error) {
		limits = append(limits, args[len(args)-1].(int))
		var page []row
		var truncated bool
		err := s.do(t.Context(), "test", true, func(ctx context.Context, c *pgx.Conn) error {
			var err error
			page, truncated, err = readPage(ctx, c, sql, args)
			return err
		})
		n := 0
		for _, r := range page {
			n += len(r.v)
		}
		sizes = append(sizes, n)
		return page, truncated, err
	}
	it := newIter(t.Context(), []byte("p/"), kv.IterOptions{Reverse: true}, 5, fetch)
	n := 0
	for it.Next() {
		if len(it.page) > 5 {
			t.Fatalf("holds %d rows", len(it.page))
		}
		n++
	}
	if n != 40 || it.Err() != nil || slices.Max(limits) != 5 {
		t.Fatalf("walked %d keys (%v) with limits %v", n, it.Err(), limits)
	}
	limits, sizes = nil, nil
	it = newIter(t.Context(), []byte("q/"), kv.IterOptions{}, 256, fetch)
	for n = 0; it.Next(); n++ {
	}
	if n != 4 || it.Err() != nil {
		t.Fatalf("walked %d large values: %v", n, it.Err())
	}
	if slices.Max(sizes) > pageBytes+len(big) {
		t.Fatalf("page sizes %v exceed %d", sizes, pageBytes)
	}
	if limits[0] != firstPage || limits[1] >= firstPage {
		t.Fatalf("limits %v: a page of large values should shrink the next", limits)
	}
}

// TestStatementsArePreparedOnce: every call reuses the statements pgx
// prepared on the connection, whatever its arguments.
func TestStatementsArePreparedOnce(t *testing.T) {
	s := open(t, pgtest.Shared(t).Database(t), Options{MaxConns: 1, PageSize: 2})
	for round := range 3 {
		for i := range 5 {
			k := fmt.Appendf(nil, "s/%d/%d", round, i)
			s.Put(k, k)
			s.Get(t.Context(), k)
			s.Get(t.Context(), []byte("missing"))
		}
		s.Delete(fmt.Appendf(nil, "s/%d/0", round))
		b := s.NewBatch()
		b.Put([]byte("s/b"), nil)
		b.Delete([]byte("s/c"))
		b.Commit()
		for _, prefix := range [][]byte{[]byte("s/"), {0xff}, nil} {
			for _, reverse := range []bool{false, true} {
				it := s.Iterate(t.Context(), prefix, kv.IterOptions{Reverse: reverse})
				for it.Next() {
				}
				it.Close()
			}
		}
		snap := s.Snapshot()
		snap.Get(t.Context(), []byte("s/b"))
		snap.Close()
	}
	ctx := context.Background()
	rows, err := s.pool.Query(ctx, `SELECT statement FROM pg_prepared_statements`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var st string
		rows.Scan(&st)
		got = append(got, st)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	known := []string{sqlGet, sqlPut, sqlDelete, sqlScan, sqlScanTo, sqlRScan, sqlRScanTo, `SELECT statement FROM pg_prepared_statements`}
	seen := map[string]bool{}
	for _, st := range got {
		if !slices.Contains(known, st) || seen[st] {
			t.Errorf("prepared statement %q: unknown or prepared twice", st)
		}
		seen[st] = true
	}
	if len(got) < 5 {
		t.Errorf("only %d prepared statements: %q", len(got), got)
	}
}

// TestSessionSettings: every connection commits synchronously and carries
// the statement timeout.
func TestSessionSettings(t *testing.T) {
	s := open(t, pgtest.Shared(t).Database(t), Options{StatementTimeout: 7 * time.Second, MaxConns: 3})
	ctx := context.Background()
	for setting, want := range map[string]string{
		"synchronous_commit": "on",
		"statement_timeout":  "7s",
		"application_name":   "pictor",
	} {
		var got string
		if err := s.pool.QueryRow(ctx, "SELECT current_setting('"+setting+"')").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
	if n := s.pool.Config().MaxConns; n != 3 {
		t.Errorf("MaxConns = %d", n)
	}
	fromURL := open(t, pgtest.Shared(t).Database(t)+"&pool_max_conns=5", Options{})
	if n := fromURL.pool.Config().MaxConns; n != 5 {
		t.Errorf("pool_max_conns from the URL: MaxConns = %d", n)
	}
	defaults := open(t, pgtest.Shared(t).Database(t), Options{})
	if n := defaults.pool.Config().MaxConns; n != DefaultMaxConns {
		t.Errorf("default MaxConns = %d", n)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		field string
	}{
		{"zero", Options{}, ""},
		{"MaxConns", Options{MaxConns: -1}, "MaxConns"},
		{"ConnectTimeout", Options{ConnectTimeout: -time.Second}, "ConnectTimeout"},
		{"StatementTimeout", Options{StatementTimeout: -time.Second}, "StatementTimeout"},
		{"OpTimeout", Options{OpTimeout: -time.Second}, "OpTimeout"},
		{"SnapshotLifetime", Options{SnapshotLifetime: -time.Second}, "SnapshotLifetime"},
		{"PageSize", Options{PageSize: -1}, "PageSize"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if (err == nil) != (tc.field == "") || (err != nil && !strings.Contains(err.Error(), tc.field)) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.field)
			}
			if tc.field != "" {
				if _, err := Open(context.Background(), "postgres://127.0.0.1/x", tc.opts); err == nil {
					t.Fatal("Open accepted invalid options")
				}
			}
		})
	}
}

// TestKeyLimit documents PostgreSQL's btree limit on keys (about 2.7 KB):
// beyond it a write is refused, and that is not an outage.
func TestKeyLimit(t *testing.T) {
	s := open(t, pgtest.Shared(t).Database(t), Options{})
	long := func(n int) []byte {
		k := make([]byte, n)
		r := rand.New(rand.NewPCG(uint64(n), 0))
		for i := range k {
			k[i] = byte(r.Uint32())
		}
		return k
	}
	if err := s.Put(long(2500), []byte("v")); err != nil {
		t.Fatalf("2500-byte key: %v", err)
	}
	err := s.Put(long(3000), []byte("v"))
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("3000-byte key: err = %v, want a refusal", err)
	}
}
