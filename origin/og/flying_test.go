package og

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestFlyingAdmitsOneOfABurst: requests arriving at once for work not
// under way take one allowance between them, however slow the admission
// of the first (the others wait for it and join); a refused request marks
// nothing, so the next one is asked again; once the work is done, new
// work is admitted again.
func TestFlyingAdmitsOneOfABurst(t *testing.T) {
	var f flying
	var admits atomic.Int64
	first := make(chan struct{})
	proceed := make(chan struct{})
	slow := func() error {
		if admits.Add(1) == 1 {
			close(first)
			<-proceed
		}
		return nil
	}
	const n = 32
	dones := make(chan func(), n)
	var wg sync.WaitGroup
	wg.Go(func() {
		done, err := f.enter("k", slow)
		if err != nil {
			t.Error(err)
		}
		dones <- done
	})
	<-first // the first is being admitted
	for range n - 1 {
		wg.Go(func() {
			done, err := f.enter("k", slow)
			if err != nil {
				t.Error(err)
			}
			dones <- done
		})
	}
	close(proceed)
	wg.Wait()
	close(dones)
	if got := admits.Load(); got != 1 {
		t.Fatalf("%d admissions for %d requests arriving at once, want 1", got, n)
	}
	for done := range dones {
		done()
	}

	refused := errors.New("refused")
	if _, err := f.enter("k", func() error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("a refused admission: %v", err)
	}
	asked := false
	done, err := f.enter("k", func() error { asked = true; return nil })
	if err != nil || !asked {
		t.Fatalf("after a refusal the next request was not asked (%v, %v): the refusal marked the work", asked, err)
	}
	done()
}
