package origin_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pictorhq/pictor/edge/purgelog"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/admin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// purgeLog is a Purger that remembers what it was told.
type purgeLog struct {
	mu     sync.Mutex
	images []string
	orgs   []string
	tags   []string
	resets int
}

func (r *purgeLog) PurgeImage(id string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images = append(r.images, id)
	return 1, nil
}
func (r *purgeLog) PurgeOrg(id string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.orgs = append(r.orgs, id)
	return 1, nil
}
func (r *purgeLog) PurgeTag(id string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tags = append(r.tags, id)
	return 1, nil
}
func (r *purgeLog) PurgeAll() error { r.mu.Lock(); defer r.mu.Unlock(); r.resets++; return nil }

func (r *purgeLog) has(list *[]string, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(*list, id)
}

// subscribe runs an edge's purge subscriber against the origin until the
// returned stop is called.
func subscribe(t *testing.T, o *testOrigin, state string, p purgelog.Purger) (*purgelog.Subscriber, func()) {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(o.DataDir, origin.EdgeTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := purgelog.New(purgelog.Config{OriginURL: o.URL, Token: strings.TrimSpace(string(token)), Name: "test", StateFile: state, Purger: p})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := s.WaitReady(wctx); err != nil {
		t.Fatalf("subscriber never caught up: %v", err)
	}
	return s, func() { cancel(); <-done }
}

// TestPurgeChannel: a delete, a suspension and a key disable answer only
// after a connected edge applied them; an edge that was away replays them
// before it is ready again.
func TestPurgeChannel(t *testing.T) {
	o := startOrigin(t)
	state := filepath.Join(t.TempDir(), "edge.state")
	rec := &purgeLog{}
	_, stop := subscribe(t, o, state, rec)

	id, _ := o.create(t, o.Owner, map[string]any{"html": redBox})
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/" + id, Creds: &o.Owner}), 202)
	if !rec.has(&rec.images, id) {
		t.Fatal("the delete answered before the connected edge purged the image")
	}
	k := o.createKey(t, o.Owner, map[string]any{"permissions": []string{"images:create"}})
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + k.ID, Creds: &o.Owner}), 204)
	if !rec.has(&rec.tags, k.APIID) {
		t.Fatal("disabling a key did not purge its signed URLs")
	}
	orgID, _ := o.newOrg(t.Context(), t, "pro")
	c, _ := admin.Dial(o.DataDir)
	if _, err := c.SetSuspended(t.Context(), orgID, true); err != nil {
		t.Fatal(err)
	}
	if !rec.has(&rec.orgs, orgID) {
		t.Fatal("suspension answered before the edge purged the organization")
	}
	stop()

	// Away: deletes still answer (the origin does not wait for absent edges).
	id2, _ := o.create(t, o.Owner, map[string]any{"html": redBox, "dedupe_duration_s": 0})
	apitest.WantStatus(t, o.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/" + id2, Creds: &o.Owner}), 202)
	// Back, from the state file: the missed purge is applied before ready.
	later := &purgeLog{}
	s, stop2 := subscribe(t, o, state, later)
	defer stop2()
	if !later.has(&later.images, id2) || later.has(&later.images, id) {
		t.Fatalf("replay applied %v, want only %s", later.images, id2)
	}
	if s.Last() == 0 {
		t.Fatal("no position remembered")
	}

	// A wrong token is refused.
	bad, err := purgelog.New(purgelog.Config{OriginURL: o.URL, Token: "wrong-token-wrong-token", StateFile: filepath.Join(t.TempDir(), "s"), Purger: &purgeLog{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	go bad.Run(ctx)
	if bad.WaitReady(ctx) == nil {
		t.Fatal("an edge with a wrong token caught up")
	}
}
