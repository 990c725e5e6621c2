package og

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pebblekv"
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
