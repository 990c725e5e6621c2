package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pictorhq/pictor/kv"
)

// Option adjusts Run for one backend.
type Option func(*config)

type config struct {
	skip   map[string]string
	second func(t *testing.T, s kv.Store) kv.Store
}

// SecondHandle gives Run a way to open a second handle on a store that
// open returned, as a second process sharing it would (a PostgreSQL store
// opened twice on one database). The cases about processes sharing a store
// then split their work over both handles; without it (pebble, which one
// process holds) they run on the one handle. The second handle is closed
// when the case ends.
func SecondHandle(open func(t *testing.T, s kv.Store) kv.Store) Option {
	return func(c *config) { c.second = open }
}

// Skip reports the case named name (a top-level subtest of Run) as skipped,
// with reason, instead of running it. It is for a known, tracked gap of a
// backend, so that the gap stays visible in `go test -v` until it is fixed.
func Skip(name, reason string) Option {
	return func(c *config) { c.skip[name] = reason }
}

// Run runs the conformance suite. Every case calls open for a new, empty
// store and closes it when the case ends; open registers its own cleanup
// (e.g. dropping a database) with t.Cleanup. Cases run in parallel, so open
// must be safe for concurrent use.
func Run(t *testing.T, open func(t *testing.T) kv.Store, opts ...Option) {
	cfg := config{skip: map[string]string{}}
	for _, o := range opts {
		o(&cfg)
	}
	known := map[string]bool{}
	for _, c := range cases {
		known[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			if reason, ok := cfg.skip[c.name]; ok {
				t.Skip(reason)
			}
			t.Parallel()
			c.run(t, opener{fresh: open, second: cfg.second})
		})
	}
	for name := range cfg.skip {
		if !known[name] {
			t.Errorf("kvtest.Skip(%q): no such case", name)
		}
	}
}

// opener is what a case gets: fresh opens a new, empty store, second (nil
// without SecondHandle) another handle on a store fresh returned.
type opener struct {
	fresh  func(t *testing.T) kv.Store
	second func(t *testing.T, s kv.Store) kv.Store
}

var cases = []struct {
	name string
	run  func(t *testing.T, open opener)
}{
	{"GetPutDelete", testGetPutDelete},
	{"EmptyValues", testEmptyValues},
	{"Copies", testCopies},
	{"Iterate", testIterate},
	{"BinaryKeyOrder", testBinaryKeyOrder},
	{"PrefixAfterReverse", testPrefixAfterReverse},
	{"EmptyPrefixAndAfter", testEmptyPrefixAndAfter},
	{"ManyKeys", testManyKeys},
	{"LargeValues", testLargeValues},
	{"LongKeys", testLongKeys},
	{"Batch", testBatch},
	{"BatchOrder", testBatchOrder},
	{"BatchAllOrNothing", testBatchAllOrNothing},
	{"Snapshot", testSnapshot},
	{"IteratorRules", testIteratorRules},
	{"WritesDuringIteration", testWritesDuringIteration},
	{"ConcurrentWriters", testConcurrentWriters},
	{"UpdateCommit", testUpdateCommit},
	{"UpdateAllOrNothing", testUpdateAllOrNothing},
	{"UpdateReadsOwnWrites", testUpdateReadsOwnWrites},
	{"UpdateExclusive", testUpdateExclusive},
	{"UpdateExclusiveAcrossHandles", testUpdateExclusiveAcrossHandles},
	{"UpdateCancelled", testUpdateCancelled},
	{"UpdateTxnAfterReturn", testUpdateTxnAfterReturn},
	{"Closed", testClosed},
	{"ReadsCanceled", testReadsCanceled},
}

// testReadsCanceled checks that a read given a done context fails with
// the context's error, on the store, a snapshot and a transaction, and
// that an iteration stops at its next step once its context ends; a
// canceled read spoils nothing: the same reads with a live context work.
func testReadsCanceled(t *testing.T, open opener) {
	s := newStore(t, open)
	for i := range 3 {
		mustPut(t, s, fmt.Sprintf("c/%d", i), "v")
	}
	done, cancel := context.WithCancel(t.Context())
	cancel()
	check := func(t *testing.T, r kv.Reader) {
		t.Helper()
		if _, err := r.Get(done, []byte("c/0")); !errors.Is(err, context.Canceled) {
			t.Errorf("Get with a canceled context: %v, want context.Canceled", err)
		}
		it := r.Iterate(done, []byte("c/"), kv.IterOptions{})
		if it.Next() {
			t.Errorf("Iterate with a canceled context yielded %q", it.Key())
		}
		if err := it.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Iterate with a canceled context: Err() = %v, want context.Canceled", err)
		}
		it.Close()

		live, stop := context.WithCancel(t.Context())
		it = r.Iterate(live, []byte("c/"), kv.IterOptions{})
		if !it.Next() {
			t.Fatalf("Iterate: nothing (%v)", it.Err())
		}
		stop()
		if it.Next() {
			t.Errorf("Iterate went on after its context ended: %q", it.Key())
		}
		if err := it.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Iterate after its context ended: Err() = %v, want context.Canceled", err)
		}
		it.Close()
		wantValue(t, r, "c/1", "v")
	}
	t.Run("store", func(t *testing.T) { check(t, s) })
	t.Run("snapshot", func(t *testing.T) {
		snap := s.Snapshot()
		defer snap.Close()
		check(t, snap)
	})
	t.Run("txn", func(t *testing.T) {
		err := s.Update(t.Context(), "c", func(txn kv.Txn) error {
			if _, err := txn.Get(done, []byte("c/0")); !errors.Is(err, context.Canceled) {
				t.Errorf("txn Get with a canceled context: %v, want context.Canceled", err)
			}
			mustPut(t, txn, "c/9", "v")
			wantValue(t, txn, "c/9", "v")
			return nil
		})
		if err != nil {
			t.Fatalf("Update after a canceled read: %v", err)
		}
		wantValue(t, s, "c/9", "v")
	})
}

// newStore opens a store that the case closes when it ends.
func newStore(t *testing.T, open opener) kv.Store {
	t.Helper()
	s := open.fresh(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return s
}

type pair struct{ k, v string }

func (p pair) String() string { return fmt.Sprintf("%q=%q", p.k, p.v) }

func mustPut(t *testing.T, w kv.Writer, k, v string) {
	t.Helper()
	if err := w.Put([]byte(k), []byte(v)); err != nil {
		t.Fatalf("put %q: %v", k, err)
	}
}

func mustDelete(t *testing.T, w kv.Writer, k string) {
	t.Helper()
	if err := w.Delete([]byte(k)); err != nil {
		t.Fatalf("delete %q: %v", k, err)
	}
}

func mustCommit(t *testing.T, b kv.Batch) {
	t.Helper()
	if err := b.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("close committed batch: %v", err)
	}
}

// wantValue checks that r holds want under k.
func wantValue(t *testing.T, r kv.Reader, k, want string) {
	t.Helper()
	v, err := r.Get(t.Context(), []byte(k))
	if err != nil {
		t.Fatalf("get %q: %v, want %q", k, err, want)
	}
	if string(v) != want {
		t.Fatalf("get %q = %q, want %q", k, v, want)
	}
}

// wantMissing checks that r holds nothing under k.
func wantMissing(t *testing.T, r kv.Reader, k string) {
	t.Helper()
	v, err := r.Get(t.Context(), []byte(k))
	if !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("get %q = %q, %v; want kv.ErrNotFound", k, v, err)
	}
}

func collect(t *testing.T, r kv.Reader, prefix []byte, opts kv.IterOptions) []pair {
	t.Helper()
	it := r.Iterate(t.Context(), prefix, opts)
	var out []pair
	for it.Next() {
		out = append(out, pair{string(it.Key()), string(it.Value())})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("iterate %q %+v: %v", prefix, opts, err)
	}
	if err := it.Close(); err != nil {
		t.Fatalf("close iterator: %v", err)
	}
	return out
}

// expect is the reference model of Iterate over the pairs in all.
func expect(all []pair, prefix []byte, opts kv.IterOptions) []pair {
	var out []pair
	for _, p := range all {
		k := []byte(p.k)
		if !bytes.HasPrefix(k, prefix) {
			continue
		}
		if opts.After != nil {
			c := bytes.Compare(k, opts.After)
			if (!opts.Reverse && c <= 0) || (opts.Reverse && c >= 0) {
				continue
			}
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b pair) int { return strings.Compare(a.k, b.k) })
	if opts.Reverse {
		slices.Reverse(out)
	}
	return out
}

func wantPairs(t *testing.T, what string, got, want []pair) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	if len(got) > 20 || len(want) > 20 {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("%s: %d pairs, want %d; first difference at %d: %v, want %v", what, len(got), len(want), i, got[i], want[i])
			}
		}
		t.Fatalf("%s: %d pairs, want %d", what, len(got), len(want))
	}
	t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
}

func testGetPutDelete(t *testing.T, open opener) {
	s := newStore(t, open)
	wantMissing(t, s, "a")
	mustPut(t, s, "a", "1")
	wantValue(t, s, "a", "1")
	mustPut(t, s, "a", "2")
	wantValue(t, s, "a", "2")
	mustDelete(t, s, "a")
	wantMissing(t, s, "a")
	// Deleting what is not there is not an error.
	mustDelete(t, s, "a")
	mustDelete(t, s, "never")
	// Keys differing only in a trailing zero byte are distinct.
	mustPut(t, s, "z", "plain")
	mustPut(t, s, "z\x00", "zero")
	wantValue(t, s, "z", "plain")
	wantValue(t, s, "z\x00", "zero")
}

// testEmptyValues: index records are empty values, and must read back as
// present.
func testEmptyValues(t *testing.T, open opener) {
	s := newStore(t, open)
	if err := s.Put([]byte("e/nil"), nil); err != nil {
		t.Fatalf("put nil value: %v", err)
	}
	if err := s.Put([]byte("e/empty"), []byte{}); err != nil {
		t.Fatalf("put empty value: %v", err)
	}
	b := s.NewBatch()
	if err := b.Put([]byte("e/batch"), nil); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, b)
	for _, k := range []string{"e/nil", "e/empty", "e/batch"} {
		v, err := s.Get(t.Context(), []byte(k))
		if err != nil || len(v) != 0 {
			t.Fatalf("get %q = %q, %v; want an empty value", k, v, err)
		}
	}
	got := collect(t, s, []byte("e/"), kv.IterOptions{})
	wantPairs(t, "iterate", got, []pair{{"e/batch", ""}, {"e/empty", ""}, {"e/nil", ""}})
}

// testCopies: the store keeps its own copies of keys and values, and Get
// hands out the caller's own copy.
func testCopies(t *testing.T, open opener) {
	s := newStore(t, open)
	k, v := []byte("c/1"), []byte("value")
	if err := s.Put(k, v); err != nil {
		t.Fatal(err)
	}
	k[2], v[0] = '9', 'X'
	wantValue(t, s, "c/1", "value")
	got, err := s.Get(t.Context(), []byte("c/1"))
	if err != nil {
		t.Fatal(err)
	}
	got[0] = 'Y'
	wantValue(t, s, "c/1", "value")

	b := s.NewBatch()
	bk, bv := []byte("c/2"), []byte("batched")
	if err := b.Put(bk, bv); err != nil {
		t.Fatal(err)
	}
	bk[2], bv[0] = '8', 'X'
	mustCommit(t, b)
	wantValue(t, s, "c/2", "batched")
	wantMissing(t, s, "c/8")
}

// testIterate holds the readable examples; testPrefixAfterReverse checks
// every combination against the model.
func testIterate(t *testing.T, open opener) {
	s := newStore(t, open)
	for _, k := range []string{"a/1", "a/2", "a/3", "b/1", "a", "a0"} {
		mustPut(t, s, k, "v"+k)
	}
	tests := []struct {
		name   string
		prefix string
		opts   kv.IterOptions
		want   string
	}{
		{name: "forward", prefix: "a/", want: "a/1=va/1 a/2=va/2 a/3=va/3"},
		{name: "reverse", prefix: "a/", opts: kv.IterOptions{Reverse: true}, want: "a/3=va/3 a/2=va/2 a/1=va/1"},
		{name: "after", prefix: "a/", opts: kv.IterOptions{After: []byte("a/1")}, want: "a/2=va/2 a/3=va/3"},
		{name: "after missing key", prefix: "a/", opts: kv.IterOptions{After: []byte("a/15")}, want: "a/2=va/2 a/3=va/3"},
		{name: "reverse after", prefix: "a/", opts: kv.IterOptions{After: []byte("a/3"), Reverse: true}, want: "a/2=va/2 a/1=va/1"},
		{name: "reverse after missing key", prefix: "a/", opts: kv.IterOptions{After: []byte("a/25"), Reverse: true}, want: "a/2=va/2 a/1=va/1"},
		{name: "after last", prefix: "a/", opts: kv.IterOptions{After: []byte("a/3")}, want: ""},
		{name: "reverse after first", prefix: "a/", opts: kv.IterOptions{After: []byte("a/1"), Reverse: true}, want: ""},
		{name: "after before prefix", prefix: "a/", opts: kv.IterOptions{After: []byte("0")}, want: "a/1=va/1 a/2=va/2 a/3=va/3"},
		{name: "after beyond prefix", prefix: "a/", opts: kv.IterOptions{After: []byte("b")}, want: ""},
		{name: "reverse after beyond prefix", prefix: "a/", opts: kv.IterOptions{After: []byte("b"), Reverse: true}, want: "a/3=va/3 a/2=va/2 a/1=va/1"},
		{name: "reverse after before prefix", prefix: "a/", opts: kv.IterOptions{After: []byte("0"), Reverse: true}, want: ""},
		{name: "prefix is a key", prefix: "a", want: "a=va a/1=va/1 a/2=va/2 a/3=va/3 a0=va0"},
		{name: "after the prefix itself", prefix: "a", opts: kv.IterOptions{After: []byte("a")}, want: "a/1=va/1 a/2=va/2 a/3=va/3 a0=va0"},
		{name: "no such prefix", prefix: "c/", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range collect(t, s, []byte(tc.prefix), tc.opts) {
				got = append(got, p.k+"="+p.v)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Fatalf("got %q, want %q", g, tc.want)
			}
		})
	}
}

// binaryKeys crowd around 0x00, 0xff and prefix boundaries.
var binaryKeys = []string{
	"", "\x00", "\x00\x00", "\x00\x01", "\x00\xff", "\x01", "\x7f", "\x80",
	"a", "a\x00", "a\x00\x00", "a\x01", "a/", "a/1", "a/2", "a/3", "a0",
	"a\xfe", "a\xff", "a\xff\x00", "a\xff\xff", "a\xff\xff\xff", "b", "b/1",
	"\xfe\xff", "\xff", "\xff\x00", "\xff\x01", "\xff\xfe", "\xff\xff",
	"\xff\xff\x00", "\xff\xff\xff", "\xff\xff\xff\xff",
}

func putBinaryKeys(t *testing.T, s kv.Store) []pair {
	t.Helper()
	var all []pair
	for i, k := range binaryKeys {
		v := fmt.Sprintf("v%02d", i)
		mustPut(t, s, k, v)
		all = append(all, pair{k, v})
	}
	return all
}

// testBinaryKeyOrder: keys sort as bytes.Compare sorts them, whatever
// bytes they hold.
func testBinaryKeyOrder(t *testing.T, open opener) {
	s := newStore(t, open)
	all := putBinaryKeys(t, s)
	want := expect(all, nil, kv.IterOptions{})
	for i := 1; i < len(want); i++ {
		if bytes.Compare([]byte(want[i-1].k), []byte(want[i].k)) >= 0 {
			t.Fatalf("model out of order at %d", i)
		}
	}
	wantPairs(t, "forward", collect(t, s, nil, kv.IterOptions{}), want)
	wantPairs(t, "reverse", collect(t, s, nil, kv.IterOptions{Reverse: true}), expect(all, nil, kv.IterOptions{Reverse: true}))
	for _, p := range all {
		wantValue(t, s, p.k, p.v)
	}
}

// testPrefixAfterReverse compares every prefix, After and direction with
// the model, across kv.PrefixEnd's edge cases (prefixes ending in, or made
// of, 0xff, whose end is shorter or does not exist).
func testPrefixAfterReverse(t *testing.T, open opener) {
	s := newStore(t, open)
	all := putBinaryKeys(t, s)
	prefixes := []string{"\x00", "a", "a/", "a\xff", "a\xff\xff", "b", "c", "\xff", "\xff\xff", "\xff\xff\xff\xff", "\xff\xff\xff\xff\xff"}
	afters := []string{"\x00", "0", "a", "a/", "a/1", "a/15", "a/3", "a/4", "a0", "a\xff", "a\xff\xff\xff\xff", "b", "\xff", "\xff\xff", "\xff\xff\xff\xff", "\xff\xff\xff\xff\xff"}
	readers := []struct {
		name string
		r    func() (kv.Reader, func())
	}{
		{"store", func() (kv.Reader, func()) { return s, func() {} }},
		{"snapshot", func() (kv.Reader, func()) {
			snap := s.Snapshot()
			return snap, func() { snap.Close() }
		}},
	}
	for _, rd := range readers {
		r, done := rd.r()
		for _, reverse := range []bool{false, true} {
			check := func(prefix []byte, after []byte) {
				opts := kv.IterOptions{After: after, Reverse: reverse}
				what := fmt.Sprintf("%s: prefix %q after %q reverse %v", rd.name, prefix, after, reverse)
				wantPairs(t, what, collect(t, r, prefix, opts), expect(all, prefix, opts))
			}
			check(nil, nil)
			for _, p := range prefixes {
				check([]byte(p), nil)
				for _, a := range afters {
					check([]byte(p), []byte(a))
				}
			}
		}
		done()
	}
}

// testEmptyPrefixAndAfter: an empty, non-nil prefix matches every key like
// a nil one, and an empty, non-nil After is the empty key, so that a reverse
// walk strictly before it is empty.
func testEmptyPrefixAndAfter(t *testing.T, open opener) {
	s := newStore(t, open)
	all := putBinaryKeys(t, s)
	snap := s.Snapshot()
	defer snap.Close()
	for _, r := range []kv.Reader{s, snap} {
		for _, reverse := range []bool{false, true} {
			for _, opts := range []kv.IterOptions{
				{Reverse: reverse},
				{Reverse: reverse, After: []byte{}},
				{Reverse: reverse, After: []byte("a")},
			} {
				for _, prefix := range [][]byte{nil, {}} {
					what := fmt.Sprintf("prefix %#v %+v", prefix, opts)
					wantPairs(t, what, collect(t, r, prefix, opts), expect(all, prefix, opts))
				}
			}
		}
	}
}

// testManyKeys walks a prefix far larger than any backend's page, with
// neighbours on both sides.
func testManyKeys(t *testing.T, open opener) {
	s := newStore(t, open)
	const n = 3000
	var all []pair
	b := s.NewBatch()
	for i := range n {
		k, v := fmt.Sprintf("m/%05d", i), fmt.Sprintf("v%d", i)
		if err := b.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		all = append(all, pair{k, v})
		if i%500 == 499 {
			mustCommit(t, b)
			b = s.NewBatch()
		}
	}
	mustCommit(t, b)
	for _, k := range []string{"l", "m", "m.", "m0", "n"} {
		mustPut(t, s, k, "outside")
		all = append(all, pair{k, "outside"})
	}
	snap := s.Snapshot()
	defer snap.Close()
	for _, r := range []struct {
		name string
		r    kv.Reader
	}{{"store", s}, {"snapshot", snap}} {
		for _, opts := range []kv.IterOptions{
			{},
			{Reverse: true},
			{After: []byte("m/01234")},
			{After: []byte("m/01234"), Reverse: true},
			{After: []byte("m/02999x")},
		} {
			what := fmt.Sprintf("%s %+v", r.name, opts)
			wantPairs(t, what, collect(t, r.r, []byte("m/"), opts), expect(all, []byte("m/"), opts))
		}
	}
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// testLargeValues stores values of 1 MiB and more, alone and in batches,
// enough of them that an iteration cannot hold them in one small page.
func testLargeValues(t *testing.T, open opener) {
	s := newStore(t, open)
	const mib = 1 << 20
	want := map[string][]byte{}
	for i := range 4 {
		k := fmt.Sprintf("big/%d", i)
		v := randomBytes(uint64(i), mib+i)
		if err := s.Put([]byte(k), v); err != nil {
			t.Fatalf("put %d bytes: %v", len(v), err)
		}
		want[k] = v
	}
	b := s.NewBatch()
	for i := 4; i < 8; i++ {
		k := fmt.Sprintf("big/%d", i)
		v := randomBytes(uint64(i), mib+i)
		if err := b.Put([]byte(k), v); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	mustCommit(t, b)
	for k, v := range want {
		got, err := s.Get(t.Context(), []byte(k))
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("get %s: %d bytes, %v; want %d bytes", k, len(got), err, len(v))
		}
	}
	for _, reverse := range []bool{false, true} {
		it := s.Iterate(t.Context(), []byte("big/"), kv.IterOptions{Reverse: reverse})
		n := 0
		for it.Next() {
			if v := want[string(it.Key())]; !bytes.Equal(it.Value(), v) {
				t.Fatalf("iterate %s: %d bytes, want %d", it.Key(), len(it.Value()), len(v))
			}
			n++
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		if n != len(want) {
			t.Fatalf("reverse %v: iterated %d values, want %d", reverse, n, len(want))
		}
	}
}

// testLongKeys: 1 KiB keys that differ only in their last bytes.
func testLongKeys(t *testing.T, open opener) {
	s := newStore(t, open)
	base := "long/" + strings.Repeat("k", 1019)
	var all []pair
	for _, tail := range []string{"", "\x00", "\x01", "\xff", "a", "\xff\xff"} {
		k := base + tail
		mustPut(t, s, k, "v")
		all = append(all, pair{k, "v"})
	}
	wantPairs(t, "forward", collect(t, s, []byte("long/"), kv.IterOptions{}), expect(all, []byte("long/"), kv.IterOptions{}))
	wantPairs(t, "reverse", collect(t, s, []byte("long/"), kv.IterOptions{Reverse: true}), expect(all, []byte("long/"), kv.IterOptions{Reverse: true}))
}

func testBatch(t *testing.T, open opener) {
	s := newStore(t, open)
	mustPut(t, s, "x/0", "old")
	b := s.NewBatch()
	mustPut(t, b, "x/1", "1")
	mustPut(t, b, "x/2", "2")
	mustDelete(t, b, "x/0")
	if got := collect(t, s, []byte("x/"), kv.IterOptions{}); len(got) != 1 {
		t.Fatalf("uncommitted batch visible: %v", got)
	}
	wantMissing(t, s, "x/1")
	mustCommit(t, b)
	wantPairs(t, "after commit", collect(t, s, []byte("x/"), kv.IterOptions{}), []pair{{"x/1", "1"}, {"x/2", "2"}})

	abandoned := s.NewBatch()
	mustDelete(t, abandoned, "x/1")
	mustPut(t, abandoned, "x/3", "3")
	if err := abandoned.Close(); err != nil {
		t.Fatalf("close uncommitted batch: %v", err)
	}
	wantPairs(t, "after an abandoned batch", collect(t, s, []byte("x/"), kv.IterOptions{}), []pair{{"x/1", "1"}, {"x/2", "2"}})

	empty := s.NewBatch()
	mustCommit(t, empty)
}

// testBatchOrder: within a batch the last write to a key wins.
func testBatchOrder(t *testing.T, open opener) {
	s := newStore(t, open)
	mustPut(t, s, "o/deleted-then-put", "old")
	mustPut(t, s, "o/put-then-deleted", "old")
	b := s.NewBatch()
	mustPut(t, b, "o/twice", "first")
	mustPut(t, b, "o/twice", "second")
	mustDelete(t, b, "o/deleted-then-put")
	mustPut(t, b, "o/deleted-then-put", "new")
	mustPut(t, b, "o/put-then-deleted", "new")
	mustDelete(t, b, "o/put-then-deleted")
	mustPut(t, b, "o/new-then-deleted", "new")
	mustDelete(t, b, "o/new-then-deleted")
	mustCommit(t, b)
	wantPairs(t, "after commit", collect(t, s, []byte("o/"), kv.IterOptions{}), []pair{
		{"o/deleted-then-put", "new"}, {"o/twice", "second"},
	})
}

// testBatchAllOrNothing: while batches rewrite a group of keys, a snapshot
// sees every key of the group from the same batch.
func testBatchAllOrNothing(t *testing.T, open opener) {
	s := newStore(t, open)
	const keys, generations = 20, 40
	write := func(gen int) error {
		b := s.NewBatch()
		defer b.Close()
		for i := range keys {
			if err := b.Put(fmt.Appendf(nil, "g/%02d", i), fmt.Appendf(nil, "%d", gen)); err != nil {
				return err
			}
		}
		// Every other generation also adds and removes a key, so the
		// group's size changes atomically too.
		if gen%2 == 1 {
			b.Put([]byte("g/odd"), fmt.Appendf(nil, "%d", gen))
		} else {
			b.Delete([]byte("g/odd"))
		}
		return b.Commit()
	}
	if err := write(0); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	wg.Go(func() {
		defer close(done)
		for gen := 1; gen <= generations; gen++ {
			if err := write(gen); err != nil {
				writeErr = err
				return
			}
		}
	})
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			for reads := 0; ; reads++ {
				select {
				case <-done:
					if reads > 0 {
						errs <- nil
						return
					}
				default:
				}
				if err := checkGeneration(t.Context(), s, keys); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("commit: %v", writeErr)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := checkGeneration(t.Context(), s, keys); err != nil {
		t.Fatal(err)
	}
	wantValue(t, s, "g/00", fmt.Sprint(generations))
}

// checkGeneration reads the group through a snapshot and reports a mix of
// batches.
func checkGeneration(ctx context.Context, s kv.Store, keys int) error {
	snap := s.Snapshot()
	defer snap.Close()
	it := snap.Iterate(ctx, []byte("g/"), kv.IterOptions{})
	defer it.Close()
	var gens []string
	odd := ""
	for it.Next() {
		if string(it.Key()) == "g/odd" {
			odd = string(it.Value())
			continue
		}
		gens = append(gens, string(it.Value()))
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("iterate snapshot: %w", err)
	}
	if len(gens) != keys {
		return fmt.Errorf("snapshot holds %d keys of the group, want %d", len(gens), keys)
	}
	for _, g := range gens {
		if g != gens[0] {
			return fmt.Errorf("snapshot mixes batches: %v", gens)
		}
	}
	var gen int
	fmt.Sscan(gens[0], &gen)
	if wantOdd := gen%2 == 1; (odd != "") != wantOdd || (wantOdd && odd != gens[0]) {
		return fmt.Errorf("generation %s with g/odd = %q", gens[0], odd)
	}
	// Get on the same snapshot agrees with its iteration.
	v, err := snap.Get(ctx, []byte("g/07"))
	if err != nil || string(v) != gens[0] {
		return fmt.Errorf("snapshot get g/07 = %q, %v; its iteration saw %s", v, err, gens[0])
	}
	return nil
}

func testSnapshot(t *testing.T, open opener) {
	s := newStore(t, open)
	mustPut(t, s, "k/1", "old")
	mustPut(t, s, "k/3", "doomed")
	snap := s.Snapshot()
	mustPut(t, s, "k/1", "new")
	mustPut(t, s, "k/2", "new")
	mustDelete(t, s, "k/3")
	b := s.NewBatch()
	mustPut(t, b, "k/4", "batched")
	mustCommit(t, b)

	wantValue(t, snap, "k/1", "old")
	wantMissing(t, snap, "k/2")
	wantValue(t, snap, "k/3", "doomed")
	wantMissing(t, snap, "k/4")
	before := []pair{{"k/1", "old"}, {"k/3", "doomed"}}
	wantPairs(t, "snapshot forward", collect(t, snap, []byte("k/"), kv.IterOptions{}), before)
	wantPairs(t, "snapshot reverse", collect(t, snap, []byte("k/"), kv.IterOptions{Reverse: true}), []pair{before[1], before[0]})

	after := []pair{{"k/1", "new"}, {"k/2", "new"}, {"k/4", "batched"}}
	wantPairs(t, "store", collect(t, s, []byte("k/"), kv.IterOptions{}), after)
	later := s.Snapshot()
	defer later.Close()
	wantPairs(t, "later snapshot", collect(t, later, []byte("k/"), kv.IterOptions{}), after)
	mustPut(t, s, "k/5", "newest")
	wantPairs(t, "earlier snapshot after more writes", collect(t, snap, []byte("k/"), kv.IterOptions{}), before)
	if err := snap.Close(); err != nil {
		t.Fatalf("close snapshot: %v", err)
	}
	wantPairs(t, "later snapshot after the earlier closed", collect(t, later, []byte("k/"), kv.IterOptions{}), after)
}

func testIteratorRules(t *testing.T, open opener) {
	s := newStore(t, open)
	for _, k := range []string{"i/1", "i/2", "i/3", "j/1"} {
		mustPut(t, s, k, "v"+k)
	}
	snap := s.Snapshot()
	defer snap.Close()

	t.Run("exhausted", func(t *testing.T) {
		it := s.Iterate(t.Context(), []byte("i/"), kv.IterOptions{})
		for it.Next() {
		}
		for range 3 {
			if it.Next() {
				t.Fatal("Next after the end returned true")
			}
		}
		if err := it.Err(); err != nil {
			t.Fatalf("Err after the end: %v", err)
		}
		if err := it.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	})
	t.Run("nothing", func(t *testing.T) {
		it := snap.Iterate(t.Context(), []byte("nothing/"), kv.IterOptions{Reverse: true})
		if it.Next() {
			t.Fatalf("empty prefix yielded %q", it.Key())
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("closed early", func(t *testing.T) {
		for _, r := range []kv.Reader{s, snap} {
			it := r.Iterate(t.Context(), []byte("i/"), kv.IterOptions{})
			if !it.Next() {
				t.Fatalf("no first key: %v", it.Err())
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			// Closing before the end leaves the reader usable.
			wantValue(t, r, "i/3", "vi/3")
		}
		never := s.Iterate(t.Context(), []byte("i/"), kv.IterOptions{})
		if err := never.Close(); err != nil {
			t.Fatalf("close unused iterator: %v", err)
		}
	})
	t.Run("key and value stay valid until Next", func(t *testing.T) {
		it := s.Iterate(t.Context(), []byte("i/"), kv.IterOptions{})
		defer it.Close()
		if !it.Next() {
			t.Fatal(it.Err())
		}
		k, v := it.Key(), it.Value()
		mustPut(t, s, "i/1", "rewritten")
		mustDelete(t, s, "i/2")
		if _, err := s.Get(t.Context(), []byte("i/3")); err != nil {
			t.Fatal(err)
		}
		if string(k) != "i/1" || string(v) != "vi/1" {
			t.Fatalf("after other calls the current pair is %q=%q, want i/1=vi/1", k, v)
		}
		if string(it.Key()) != "i/1" || string(it.Value()) != "vi/1" {
			t.Fatalf("Key/Value changed before Next: %q=%q", it.Key(), it.Value())
		}
	})
	t.Run("interleaved", func(t *testing.T) {
		for _, r := range []kv.Reader{s, snap} {
			fwd := r.Iterate(t.Context(), []byte("i/"), kv.IterOptions{})
			rev := r.Iterate(t.Context(), nil, kv.IterOptions{Reverse: true})
			var a, b []string
			for {
				okA, okB := fwd.Next(), rev.Next()
				if okA {
					a = append(a, string(fwd.Key()))
				}
				if okB {
					b = append(b, string(rev.Key()))
					// Reads in the middle of a walk, as the origin does
					// while listing.
					if _, err := r.Get(t.Context(), rev.Key()); err != nil {
						t.Fatalf("get %q during iteration: %v", rev.Key(), err)
					}
				}
				if !okA && !okB {
					break
				}
			}
			if fwd.Err() != nil || rev.Err() != nil {
				t.Fatalf("errors: %v, %v", fwd.Err(), rev.Err())
			}
			fwd.Close()
			rev.Close()
			if len(a) == 0 || len(b) < len(a) || !slices.IsSorted(a) || !slices.IsSortedFunc(b, func(x, y string) int { return strings.Compare(y, x) }) {
				t.Fatalf("interleaved walks: %q and %q", a, b)
			}
		}
	})
}

// testWritesDuringIteration: the origin deletes and rewrites keys while it
// walks the store; the walk still visits each key once, in order. (Whether
// keys inserted ahead of the walk are seen is up to the backend.)
func testWritesDuringIteration(t *testing.T, open opener) {
	s := newStore(t, open)
	var want []string
	for i := range 600 {
		want = append(want, fmt.Sprintf("w/%04d", i))
	}
	for _, reverse := range []bool{false, true} {
		b := s.NewBatch()
		for _, k := range want {
			mustPut(t, b, k, "v")
		}
		mustCommit(t, b)
		it := s.Iterate(t.Context(), []byte("w/"), kv.IterOptions{Reverse: reverse})
		var seen []string
		for it.Next() {
			k := string(it.Key())
			seen = append(seen, k)
			if reverse {
				mustPut(t, s, k, "rewritten")
			} else {
				mustDelete(t, s, k)
			}
			mustPut(t, s, "x/"+k, "elsewhere")
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
		w := slices.Clone(want)
		if reverse {
			slices.Reverse(w)
		}
		if !slices.Equal(seen, w) {
			t.Fatalf("reverse %v: saw %d keys, want %d", reverse, len(seen), len(w))
		}
	}
}

// testConcurrentWriters hammers one store from many goroutines; run it
// with -race.
func testConcurrentWriters(t *testing.T, open opener) {
	s := newStore(t, open)
	const workers, ops = 8, 120
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	finals := make([]map[string]string, workers)
	for w := range workers {
		wg.Go(func() {
			own := map[string]string{}
			finals[w] = own
			r := rand.New(rand.NewPCG(uint64(w), 7))
			prefix := fmt.Sprintf("cw/%d/", w)
			for i := range ops {
				k := fmt.Sprintf("%s%02d", prefix, r.IntN(30))
				v := fmt.Sprintf("%d.%d", w, i)
				var err error
				switch r.IntN(6) {
				case 0, 1:
					if err = s.Put([]byte(k), []byte(v)); err == nil {
						own[k] = v
					}
				case 2:
					if err = s.Delete([]byte(k)); err == nil {
						delete(own, k)
					}
				case 3:
					b := s.NewBatch()
					k2 := fmt.Sprintf("%s%02d", prefix, r.IntN(30))
					b.Put([]byte(k), []byte(v))
					b.Put([]byte("cw/shared"), []byte(v))
					b.Delete([]byte(k2))
					if err = b.Commit(); err == nil {
						own[k] = v
						delete(own, k2)
					}
					b.Close()
				case 4:
					got, gerr := s.Get(t.Context(), []byte(k))
					want, ok := own[k]
					switch {
					case ok && (gerr != nil || string(got) != want):
						err = fmt.Errorf("worker %d: get %s = %q, %v; want %q", w, k, got, gerr, want)
					case !ok && !errors.Is(gerr, kv.ErrNotFound):
						err = fmt.Errorf("worker %d: get deleted %s = %q, %v", w, k, got, gerr)
					}
				case 5:
					err = sameAs(t.Context(), s, prefix, own)
				}
				if err != nil {
					errs <- fmt.Errorf("worker %d op %d: %w", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w, own := range finals {
		if err := sameAs(t.Context(), s, fmt.Sprintf("cw/%d/", w), own); err != nil {
			t.Fatalf("final state: %v", err)
		}
	}
	if v, err := s.Get(t.Context(), []byte("cw/shared")); err == nil && !strings.Contains(string(v), ".") {
		t.Fatalf("shared key holds %q", v)
	} else if err != nil && !errors.Is(err, kv.ErrNotFound) {
		t.Fatal(err)
	}
}

// sameAs checks that the keys under prefix are exactly want.
func sameAs(ctx context.Context, r kv.Reader, prefix string, want map[string]string) error {
	it := r.Iterate(ctx, []byte(prefix), kv.IterOptions{})
	defer it.Close()
	n := 0
	last := ""
	for it.Next() {
		k, v := string(it.Key()), string(it.Value())
		if n > 0 && k <= last {
			return fmt.Errorf("iterate %s: %q after %q", prefix, k, last)
		}
		last = k
		if want[k] != v {
			return fmt.Errorf("iterate %s: %s = %q, want %q", prefix, k, v, want[k])
		}
		n++
	}
	if err := it.Err(); err != nil {
		return err
	}
	if n != len(want) {
		return fmt.Errorf("iterate %s: %d keys, want %d", prefix, n, len(want))
	}
	return nil
}

// testClosed: everything after Close answers kv.ErrClosed.
func testClosed(t *testing.T, open opener) {
	s := open.fresh(t)
	mustPut(t, s, "a", "1")
	early := s.NewBatch()
	mustPut(t, early, "b", "2")
	snap := s.Snapshot()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	wantClosed := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, kv.ErrClosed) {
			t.Errorf("%s after Close: err = %v, want kv.ErrClosed", what, err)
		}
	}
	_, err := s.Get(t.Context(), []byte("a"))
	wantClosed("Get", err)
	wantClosed("Put", s.Put([]byte("a"), []byte("2")))
	wantClosed("Delete", s.Delete([]byte("a")))
	wantClosed("Commit of a batch made before Close", early.Commit())
	early.Close()
	b := s.NewBatch()
	b.Put([]byte("c"), []byte("3"))
	wantClosed("Commit", b.Commit())
	b.Close()
	it := s.Iterate(t.Context(), nil, kv.IterOptions{})
	if it.Next() {
		t.Errorf("Iterate after Close yielded %q", it.Key())
	}
	wantClosed("Iterate", it.Err())
	it.Close()
	late := s.Snapshot()
	_, err = late.Get(t.Context(), []byte("a"))
	wantClosed("Get on a snapshot taken after Close", err)
	late.Close()
	_, err = snap.Get(t.Context(), []byte("a"))
	wantClosed("Get on a snapshot taken before Close", err)
	sit := snap.Iterate(t.Context(), nil, kv.IterOptions{})
	if sit.Next() {
		t.Errorf("snapshot iteration after Close yielded %q", sit.Key())
	}
	wantClosed("Iterate on a snapshot taken before Close", sit.Err())
	sit.Close()
	snap.Close()
	ran := false
	wantClosed("Update", s.Update(context.Background(), "a", func(txn kv.Txn) error {
		ran = true
		return txn.Put([]byte("a"), []byte("3"))
	}))
	if ran {
		t.Error("Update after Close ran fn")
	}
}
