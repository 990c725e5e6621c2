package og

import (
	"sync"
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	b := newBudget(60, clock)

	// A burst of the whole minute's budget, from many goroutines: exactly
	// 60 succeed.
	var wg sync.WaitGroup
	var okCount, refused int
	var cmu sync.Mutex
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, retry := b.take("cfg-a")
			cmu.Lock()
			defer cmu.Unlock()
			if ok {
				okCount++
			} else {
				refused++
				if retry <= 0 || retry > 2*time.Second {
					t.Errorf("retry after %v, want about a second", retry)
				}
			}
		}()
	}
	wg.Wait()
	if okCount != 60 || refused != 140 {
		t.Fatalf("burst: %d renders allowed, %d refused; want 60 and 140", okCount, refused)
	}
	// Another configuration has its own budget.
	if ok, _ := b.take("cfg-b"); !ok {
		t.Fatal("a second configuration was refused by the first one's budget")
	}
	// One second later, one more render.
	advance(time.Second)
	if ok, _ := b.take("cfg-a"); !ok {
		t.Fatal("no render a second after the budget was spent")
	}
	if ok, _ := b.take("cfg-a"); ok {
		t.Fatal("two renders a second after the budget was spent")
	}
	// A refused take costs nothing: after another second there is one.
	advance(time.Second)
	if ok, _ := b.take("cfg-a"); !ok {
		t.Fatal("a refused take consumed budget")
	}
	// A minute refills the bucket, never beyond it.
	advance(10 * time.Minute)
	n := 0
	for {
		if ok, _ := b.take("cfg-a"); !ok {
			break
		}
		n++
	}
	if n != 60 {
		t.Fatalf("after ten idle minutes %d renders, want the 60 of one minute", n)
	}
	b.forget("cfg-a")
	if ok, _ := b.take("cfg-a"); !ok {
		t.Fatal("a forgotten configuration starts with an empty bucket")
	}
}
