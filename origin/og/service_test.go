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
)

func TestScaleOf(t *testing.T) {
	for _, tc := range []struct {
		name, request string
		want          float64
	}{
		{"unset", `{"url":"https://a.example/"}`, 1},
		{"number", `{"device_scale":2}`, 2},
		{"string from a page override", `{"device_scale":"1.5"}`, 1.5},
		{"garbage", `{"device_scale":"x"}`, 1},
		{"zero", `{"device_scale":0}`, 1},
		{"not an object", `[]`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scaleOf(json.RawMessage(tc.request)); got != tc.want {
				t.Fatalf("scaleOf(%s) = %v, want %v", tc.request, got, tc.want)
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
	if err := s.Forget("gone"); err != nil {
		t.Fatal(err)
	}
	count := func(cfg string) int {
		it := db.Iterate(pagePrefix(cfg), kv.IterOptions{})
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
					if _, err := services[i%2].store(context.Background(), next); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			got, err := loadPage(dbs[1], "cfg", "/a")
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
