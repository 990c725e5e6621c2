package og

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/ogconfig"
)

// TestPageScale: the device scale the edge is told of is the stored
// request's, read from its parameters, in a record of either format (a
// record of the release before parameters gets them from its request).
func TestPageScale(t *testing.T) {
	for _, tc := range []struct {
		name, request string
		want          float64
	}{
		{"unset", `{"url":"https://a.example/"}`, 1},
		{"number", `{"url":"https://a.example/","device_scale":2}`, 2},
		{"string from a page override", `{"url":"https://a.example/","device_scale":"1.5"}`, 1.5},
		{"garbage", `{"url":"https://a.example/","device_scale":"x"}`, 1},
		{"zero", `{"url":"https://a.example/","device_scale":0}`, 1},
		{"not an object", `[]`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := &page{ConfigID: "cfg", Path: "/a", Params: requestParams(json.RawMessage(tc.request)), Request: json.RawMessage(tc.request)}
			previous := &page{ConfigID: "cfg", Path: "/a", Request: json.RawMessage(tc.request)} // as the release before wrote it
			for _, pg := range []*page{stored, previous} {
				raw, err := json.Marshal(pg)
				if err != nil {
					t.Fatal(err)
				}
				got, err := decodePage(raw)
				if err != nil {
					t.Fatal(err)
				}
				if sc := got.scale(); sc != tc.want {
					t.Fatalf("scale of %s = %v, want %v", raw, sc, tc.want)
				}
			}
		})
	}
}

func TestETagMatch(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		want         bool
	}{
		{"same", `"abc"`, true},
		{"weak", `W/"abc"`, true},
		{"list", `"x", "abc"`, true},
		{"star", `*`, true},
		{"other", `"abd"`, false},
		{"unquoted", `abc`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := etagMatch(tc.header, `"abc"`); got != tc.want {
				t.Fatalf("etagMatch(%s) = %v", tc.header, got)
			}
		})
	}
}

func TestForget(t *testing.T) {
	db, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := &Service{cfg: Config{Store: db}, budget: newBudget(1, time.Now)}
	for i := range 2500 {
		for _, cfg := range []string{"gone", "kept"} {
			if err := savePage(db, &page{ConfigID: cfg, Path: fmt.Sprintf("/p/%d", i), Images: map[string]string{"": "x"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.budget.take("gone")
	if err := s.Forget(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	count := func(cfg string) int {
		it := db.Iterate(t.Context(), pagePrefix(cfg), kv.IterOptions{})
		defer it.Close()
		n := 0
		for it.Next() {
			n++
		}
		return n
	}
	if n := count("gone"); n != 0 {
		t.Fatalf("%d pages of the deleted configuration left", n)
	}
	if n := count("kept"); n != 2500 {
		t.Fatalf("%d pages of the other configuration, want 2500", n)
	}
	if ok, _ := s.budget.take("gone"); !ok {
		t.Fatal("the deleted configuration's budget was kept")
	}
}

// TestStoreKeepsVariantsAcrossProcesses: records of one page written at
// once by two services on two handles of one store (two origins), each
// with a variant of its own for the same request, keep every variant.
func TestStoreKeepsVariantsAcrossProcesses(t *testing.T) {
	for _, tc := range sharedStores {
		t.Run(tc.Name, func(t *testing.T) {
			dbs := tc.Pair(t)
			services := [2]*Service{{cfg: Config{Store: dbs[0]}}, {cfg: Config{Store: dbs[1]}}}
			base := page{ConfigID: "cfg", Path: "/a", Revision: 1, Request: json.RawMessage(`{"url":"https://a.example/a"}`), Extra: "x"}
			const n = 16
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() {
					next := base.clone()
					next.Images = map[string]string{fmt.Sprint("platform-", i): fmt.Sprint("image-", i)}
					if _, err := services[i%2].store(context.Background(), next, time.Time{}); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			got, err := loadPage(t.Context(), dbs[1], "cfg", "/a")
			if err != nil || got == nil {
				t.Fatalf("page: %+v, %v", got, err)
			}
			if len(got.Images) != n {
				t.Fatalf("%d variants kept, want %d: %v", len(got.Images), n, got.Images)
			}
			for i := range n {
				if id := got.Images[fmt.Sprint("platform-", i)]; id != fmt.Sprint("image-", i) {
					t.Fatalf("variant %d: %q", i, id)
				}
			}
		})
	}
}

// sharedStores are two handles of one store, as two origins have, on each
// backend.
var sharedStores = storetest.Backends()

// doneSpy is a context that says when Done is first asked for: read asks
// right after it joined (or started) the shared read of its page.
type doneSpy struct {
	context.Context
	once   sync.Once
	called chan struct{}
}

func (c *doneSpy) Done() <-chan struct{} {
	c.once.Do(func() { close(c.called) })
	return c.Context.Done()
}

// TestReadJoiningAnEmptyRecheck: a request that joins a background
// recheck of its path which ends with no page (the page had changed when
// it began) reads the page itself, instead of failing on the missing
// result (it panicked).
func TestReadJoiningAnEmptyRecheck(t *testing.T) {
	db, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := &Service{cfg: Config{Store: db, Now: time.Now}, ctx: context.Background()}
	cfg := &ogconfig.Config{ID: "cfg", Revision: 2}
	want := &page{ConfigID: "cfg", Path: "/a", Revision: 2, Images: map[string]string{"": "image-1"}}
	if err := savePage(db, want); err != nil {
		t.Fatal(err)
	}
	release, recheckDone := make(chan struct{}), make(chan struct{})
	started := make(chan struct{})
	go func() {
		defer close(recheckDone)
		s.reads.Do(readKey("cfg", "/a"), func() (any, error) {
			close(started)
			<-release
			return nil, nil // as recheckLater's when the page changed meanwhile
		})
	}()
	<-started
	ctx := &doneSpy{Context: context.Background(), called: make(chan struct{})}
	type result struct {
		pg  *page
		err error
	}
	got := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				got <- result{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		pg, _, err := s.read(ctx, cfg, nil, "/a", "")
		got <- result{pg, err}
	}()
	<-ctx.called // joined the recheck
	close(release)
	<-recheckDone
	r := <-got
	if r.err != nil || r.pg == nil || r.pg.Images[""] != "image-1" {
		t.Fatalf("read = %+v, %v; want the stored page", r.pg, r.err)
	}
}
