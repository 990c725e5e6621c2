package og

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// TestClients: each key has its own bucket of burst requests that refills
// at rate a minute; a refusal says when the next request is allowed and
// takes nothing.
func TestClients(t *testing.T) {
	clock := apitest.NewClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	c := newClients(30, 30, 100, clock.Now)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 100 {
		wg.Go(func() {
			if ok, retry := c.take("cfg\x00198.51.100.7"); ok {
				mu.Lock()
				allowed++
				mu.Unlock()
			} else if retry <= 0 || retry > 2*time.Second {
				t.Errorf("retry after %v, want at most the 2 s a request takes to come back", retry)
			}
		})
	}
	wg.Wait()
	if allowed != 30 {
		t.Fatalf("%d of 100 requests at once allowed, want the burst of 30", allowed)
	}
	if ok, _ := c.take("cfg\x00198.51.100.8"); !ok {
		t.Fatal("another address was refused by the first one's bucket")
	}
	if ok, _ := c.take("other\x00198.51.100.7"); !ok {
		t.Fatal("another configuration was refused by the first one's bucket")
	}
	clock.Advance(time.Second)
	if ok, retry := c.take("cfg\x00198.51.100.7"); ok || retry != time.Second {
		t.Fatalf("half a request after a second: allowed %v, retry %v; want a refusal for one more second", ok, retry)
	}
	clock.Advance(time.Second)
	if ok, _ := c.take("cfg\x00198.51.100.7"); !ok {
		t.Fatal("no request 2 s after the bucket was empty (30 a minute)")
	}
	clock.Advance(time.Hour)
	n := 0
	for {
		if ok, _ := c.take("cfg\x00198.51.100.7"); !ok {
			break
		}
		n++
	}
	if n != 30 {
		t.Fatalf("after an idle hour %d requests, want the burst of 30", n)
	}
}

// TestClientsBounded: a flood of addresses keeps at most the bound of
// buckets, forgetting the least recently seen; one seen again meanwhile
// keeps its (empty) bucket.
func TestClientsBounded(t *testing.T) {
	clock := apitest.NewClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	c := newClients(30, 2, 1000, clock.Now)
	c.take("cfg\x00203.0.113.1")
	c.take("cfg\x00203.0.113.1")
	for i := range 50_000 {
		c.take(fmt.Sprintf("cfg\x0010.%d.%d.%d", i>>16, i>>8&255, i&255))
		if i%100 == 0 {
			if ok, _ := c.take("cfg\x00203.0.113.1"); ok {
				t.Fatalf("the busy address got a request back after %d others", i)
			}
		}
		if n := c.len(); n > 1000 {
			t.Fatalf("%d buckets after %d addresses, want at most 1000", n, i+1)
		}
	}
	if ok, _ := c.take("cfg\x0010.0.0.0"); !ok {
		t.Fatal("the first address of the flood was not forgotten")
	}
}
