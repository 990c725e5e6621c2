package rendition

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/kv/storetest"
	"github.com/pictorhq/pictor/origin/blob"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/render"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// backends open n handles of one fresh store, as n origins sharing it
// have.
var backends = storetest.Backends()

// origins are image services sharing one store and one blob directory,
// as origins of one deployment share a database and a bucket. Service i
// renders with engines[i].
type origins struct {
	t       *testing.T
	clock   *apitest.Clock
	orgs    *org.Store
	stores  []*cutStore
	svcs    []*Service
	engines []*testEngine
}

// newOrigins starts one service per engine on the backend's handles, with
// lease as their render lease.
func newOrigins(t *testing.T, b storetest.Backend, lease time.Duration, engines ...*testEngine) *origins {
	t.Helper()
	o := &origins{t: t, clock: apitest.NewClock(time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)), engines: engines}
	dir := t.TempDir()
	for i, s := range b.Open(t, len(engines)) {
		blobs, err := blob.Open(filepath.Join(dir, "images"))
		if err != nil {
			t.Fatal(err)
		}
		cs := &cutStore{Store: s}
		cfg := DefaultConfig()
		cfg.Store, cfg.Blobs, cfg.Engine, cfg.Now, cfg.CompactIdle = cs, blobs, engines[i], o.clock.Now, -1
		cfg.RenderLease, cfg.Shared = lease, true
		svc, err := NewService(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(svc.Close)
		o.stores, o.svcs = append(o.stores, cs), append(o.svcs, svc)
		if i == 0 {
			o.orgs = org.NewStore(s, o.clock.Now)
		}
	}
	return o
}

// newOrg creates an organization on the plan.
func (o *origins) newOrg(plan string) *org.Org {
	o.t.Helper()
	g, err := o.orgs.Create("org "+plan, plan)
	if err != nil {
		o.t.Fatal(err)
	}
	return g
}

// cutStore is a store handle that can be cut off: from then on every
// read and write of it fails as a store that cannot be reached, which is
// what the others see of an origin killed: it neither renews nor releases
// its leases, nor records anything.
type cutStore struct {
	kv.Store
	cut atomic.Bool
}

func (c *cutStore) Get(ctx context.Context, key []byte) ([]byte, error) {
	if c.cut.Load() {
		return nil, kv.ErrUnavailable
	}
	return c.Store.Get(ctx, key)
}

func (c *cutStore) Put(key, value []byte) error {
	if c.cut.Load() {
		return kv.ErrUnavailable
	}
	return c.Store.Put(key, value)
}

func (c *cutStore) Delete(key []byte) error {
	if c.cut.Load() {
		return kv.ErrUnavailable
	}
	return c.Store.Delete(key)
}

func (c *cutStore) Update(ctx context.Context, lock string, fn func(kv.Txn) error) error {
	if c.cut.Load() {
		return kv.ErrUnavailable
	}
	return c.Store.Update(ctx, lock, fn)
}

// Close is the test's: the handles close when it ends.
func (c *cutStore) Close() error { return nil }

// testEngine renders every page as its own PNG, counting the renders. A
// gated engine holds each render until release (or the render's context
// ends), as a long page does.
type testEngine struct {
	data    []byte
	calls   atomic.Int32
	started chan struct{} // a value per render started, when there is room
	gate    chan struct{}
	once    sync.Once
}

func newTestEngine(t *testing.T, seed uint8, gated bool) *testEngine {
	e := &testEngine{data: testPNG(t, 8, 6, seed), started: make(chan struct{}, 16)}
	if gated {
		e.gate = make(chan struct{})
		t.Cleanup(e.release) // before the services' Close: cleanups run last-in first-out
	}
	return e
}

func (e *testEngine) release() { e.once.Do(func() { close(e.gate) }) }

func (e *testEngine) Render(ctx context.Context, r *render.Request) (*render.Result, error) {
	e.calls.Add(1)
	select {
	case e.started <- struct{}{}:
	default:
	}
	if e.gate != nil {
		select {
		case <-e.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(e.data))
	if err != nil {
		return nil, err
	}
	return &render.Result{Data: e.data, Width: cfg.Width, Height: cfg.Height}, nil
}

func (e *testEngine) IdleFor() time.Duration { return 0 }

var _ Engine = (*testEngine)(nil)
