package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/migrate"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/kv/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

var epoch = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

func now() time.Time { return epoch }

// counting returns a migration that puts its name under key "m/<name>" and
// counts its runs.
func counting(name string, runs *atomic.Int32) migrate.Migration {
	return migrate.Migration{Name: name, Run: func(_ context.Context, s kv.Store) error {
		runs.Add(1)
		return s.Put([]byte("m/"+name), []byte(name))
	}}
}

func TestApply(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			s := b.Open(t, 1)[0]
			var first, second atomic.Int32
			v1 := []migrate.Migration{{Name: "baseline"}, counting("one", &first)}
			applied, err := migrate.Apply(ctx, s, v1, "v1", now)
			if err != nil || fmt.Sprint(applied) != "[1 2]" {
				t.Fatalf("first apply: %v, %v", applied, err)
			}
			// Again with the same list: nothing runs.
			if applied, err := migrate.Apply(ctx, s, v1, "v1", now); err != nil || len(applied) != 0 || first.Load() != 1 {
				t.Fatalf("second apply: %v, %v, %d runs", applied, err, first.Load())
			}
			// A newer binary runs only its new step, and records it.
			v2 := append(v1, counting("two", &second))
			if applied, err := migrate.Apply(ctx, s, v2, "v2", now); err != nil || fmt.Sprint(applied) != "[3]" || first.Load() != 1 || second.Load() != 1 {
				t.Fatalf("newer apply: %v, %v, runs %d %d", applied, err, first.Load(), second.Load())
			}
			rec, err := migrate.Read(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Version != 3 || len(rec.Applied) != 3 || rec.Applied[2].Name != "two" || rec.Applied[2].By != "v2" || rec.Applied[0].By != "v1" || !rec.Applied[2].At.Equal(epoch) {
				t.Fatalf("record %+v", rec)
			}
			// The older binary is refused, and writes nothing.
			if _, err := migrate.Apply(ctx, s, v1, "v1", now); !errors.Is(err, migrate.ErrTooNew) {
				t.Fatalf("older binary on a newer store: %v, want ErrTooNew", err)
			}
			if after, _ := migrate.Read(ctx, s); after.Version != 3 || len(after.Applied) != 3 {
				t.Fatalf("the refused binary changed the record: %+v", after)
			}
		})
	}
}

// TestApplyConcurrently starts several processes on one store at once:
// every version is recorded exactly once, in order.
func TestApplyConcurrently(t *testing.T) {
	for _, b := range storetest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			stores := b.Open(t, 4)
			var runs atomic.Int32
			list := []migrate.Migration{{Name: "baseline"}, counting("one", &runs), counting("two", &runs)}
			var wg sync.WaitGroup
			errs := make(chan error, len(stores))
			for i, s := range stores {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := migrate.Apply(context.Background(), s, list, fmt.Sprint("origin-", i), now)
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			rec, err := migrate.Read(t.Context(), stores[0])
			if err != nil {
				t.Fatal(err)
			}
			if rec.Version != 3 || len(rec.Applied) != 3 {
				t.Fatalf("record %+v", rec)
			}
			for i, a := range rec.Applied {
				if a.Version != i+1 || a.Name != list[i].Name {
					t.Fatalf("record %+v: entry %d", rec, i)
				}
			}
			if runs.Load() < 2 {
				t.Fatalf("the two steps ran %d times in all", runs.Load())
			}
		})
	}
}

// TestApplyStopsAtAFailedStep: a failing step is not recorded, and the
// next start runs it again.
func TestApplyStopsAtAFailedStep(t *testing.T) {
	s := storetest.Pebble.Open(t, 1)[0]
	boom := errors.New("boom")
	fail := true
	list := []migrate.Migration{{Name: "baseline"}, {Name: "flaky", Run: func(context.Context, kv.Store) error {
		if fail {
			return boom
		}
		return nil
	}}}
	applied, err := migrate.Apply(context.Background(), s, list, "v", now)
	if !errors.Is(err, boom) || fmt.Sprint(applied) != "[1]" {
		t.Fatalf("apply with a failing step: %v, %v", applied, err)
	}
	if rec, _ := migrate.Read(t.Context(), s); rec.Version != 1 {
		t.Fatalf("the failed step was recorded: %+v", rec)
	}
	fail = false
	if applied, err := migrate.Apply(context.Background(), s, list, "v", now); err != nil || fmt.Sprint(applied) != "[2]" {
		t.Fatalf("retry: %v, %v", applied, err)
	}
}

func TestReadRefusesGarbage(t *testing.T) {
	s := storetest.Pebble.Open(t, 1)[0]
	if err := s.Put([]byte(migrate.Key), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Apply(context.Background(), s, []migrate.Migration{{Name: "baseline"}}, "v", now); err == nil {
		t.Fatal("a garbled record was taken as version 0")
	}
}
