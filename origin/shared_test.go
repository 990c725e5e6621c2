package origin_test

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/pictorhq/pictor/kv/pgkv"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/storage/s3test"

	"github.com/pictorhq/pictor/origin/seal"
)

// TestTwoOriginsShareStoreAndBlobs runs two origins on one PostgreSQL
// database (--store) and one S3 bucket (--blobs), as a deployment beyond
// one machine does: the first creates the default organization, the
// second sees it and its key; an image created and rendered on one is
// listed and served, byte for byte, by the other; a delete on the second
// makes the first answer 404; an MCP token of one is good on the other.
func TestTwoOriginsShareStoreAndBlobs(t *testing.T) {
	db := pgtest.Shared(t).Database(t)
	s3 := s3test.New(t)
	const masterKey = "5f1d0c0a8f4e2b7d6c3a9e8f1b2d4c6a7e9f0b1c2d3e4f5a6b7c8d9e0f1a2b3c"
	shared := func(c *origin.Config) {
		c.Store = db
		c.MasterKey = masterKey
		c.CompactIdle = -1
		c.Blobs.URL = "s3://" + s3.Bucket + "/masters?endpoint=" + s3.URL + "&region=us-east-1&path_style=true"
		c.Blobs.Credentials = credentials.NewStaticCredentialsProvider(s3test.AccessKeyID, s3test.SecretAccessKey, "")
	}
	a := startOrigin(t, shared)
	// Behind the same edges both have the same public URL: here, a's.
	b := startOrigin(t, shared, func(c *origin.Config) { c.CreateDefaultOrg, c.PublicURL = false, a.URL })
	b.Owner, b.OrgID = a.Owner, a.OrgID

	id, u := a.create(t, a.Owner, map[string]any{"html": redBox, "device_scale": 1})
	fromA := a.get(t, u)
	apitest.WantSize(t, apitest.DecodeImage(t, fromA), 400, 200)
	fromB := b.get(t, "/v1/image/"+id)
	apitest.WantStatus(t, fromB, 200)
	if !bytes.Equal(fromA.Body, fromB.Body) {
		t.Fatal("the second origin serves other bytes than the first rendered")
	}
	if ids := b.listIDs(t, a.Owner); len(ids) != 1 || ids[0] != id {
		t.Fatalf("the second origin lists %v, want [%s]", ids, id)
	}
	// An MCP connection approved on one origin works on the other: the
	// signing key comes from the shared master key.
	g := mcpConnect(t, a, a.Owner, []string{"usage:read"})
	if r := mcpPost(t, b.URL+"/mcp", g.Access, mcpToolsList); r.Status != 200 {
		t.Fatalf("a token of the first origin on the second: %d %s", r.Status, r.Body)
	}
	apitest.WantStatus(t, b.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/" + id, Creds: &a.Owner}), 202)
	apitest.WantError(t, a.get(t, u), 404)
}

// TestTwoOriginsShareRateLimit sends 40 parallel management writes of one
// organization, alternating between two origins on one PostgreSQL
// database: the window of 20 is shared, so exactly 20 pass, whichever
// origin they reached.
func TestTwoOriginsShareRateLimit(t *testing.T) {
	db := pgtest.Shared(t).Database(t)
	const masterKey = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
	shared := func(c *origin.Config) { c.Store, c.MasterKey = db, masterKey }
	a := startOrigin(t, shared)
	b := startOrigin(t, shared, func(c *origin.Config) { c.CreateDefaultOrg, c.PublicURL = false, a.URL })
	var wg sync.WaitGroup
	results := make([]*apitest.Response, 40)
	errs := make([]error, 40)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := a.URL
			if i%2 == 1 {
				u = b.URL
			}
			results[i], errs[i] = apitest.Send(u, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &a.Owner, JSON: map[string]any{"permissions": []string{}}})
		}()
	}
	wg.Wait()
	passed := map[bool]int{} // by origin: true for b
	limited := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		switch r.Status {
		case 200:
			passed[i%2 == 1]++
		case 429:
			limited++
			apitest.WantMessage(t, apitest.WantError(t, r, http.StatusTooManyRequests), "api-key:write")
		default:
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	}
	if passed[false]+passed[true] != 20 || limited != 20 {
		t.Fatalf("%d passed on the first origin and %d on the second, %d limited; want 20 and 20 in all", passed[false], passed[true], limited)
	}
	// The next write is refused on either origin.
	for _, o := range []*testOrigin{a, b} {
		r := o.do(t, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &a.Owner, JSON: map[string]any{"permissions": []string{}}})
		apitest.WantError(t, r, http.StatusTooManyRequests)
	}
}

// purgeEvents is the edge of a serve process as its origin sees it: every
// purge it is told, on a channel.
type purgeEvents chan string

func (p purgeEvents) PurgeImages(_ context.Context, ids []string) error {
	for _, id := range ids {
		p <- "image " + id
	}
	return nil
}
func (p purgeEvents) PurgeOrg(_ context.Context, id string) error { p <- "org " + id; return nil }
func (p purgeEvents) PurgeTag(_ context.Context, t string) error  { p <- "tag " + t; return nil }

func (p purgeEvents) want(t *testing.T, what, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-p:
			if got == want {
				return
			}
		case <-deadline:
			t.Fatalf("%s: no purge %q", what, want)
		}
	}
}

// TestSharedPurgesReachEveryProcess: with two serve-like origins on one
// store, each with an edge in its process, a delete on one purges the
// other's edge, and a suspension made with the admin commands on the store
// (pictor admin org suspend --store) purges both and cuts the
// organization's MCP connections.
func TestSharedPurgesReachEveryProcess(t *testing.T) {
	db := pgtest.Shared(t).Database(t)
	const masterKey = "1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c5b6a7988"
	edgeA, edgeB := make(purgeEvents, 64), make(purgeEvents, 64)
	shared := func(c *origin.Config) { c.Store, c.MasterKey, c.CompactIdle = db, masterKey, -1 }
	a := startOrigin(t, shared, func(c *origin.Config) { c.Purger = edgeA })
	b := startOrigin(t, shared, func(c *origin.Config) { c.CreateDefaultOrg, c.PublicURL, c.Purger = false, a.URL, edgeB })
	b.Owner, b.OrgID = a.Owner, a.OrgID

	id, _ := a.create(t, a.Owner, map[string]any{"html": redBox, "device_scale": 1})
	apitest.WantStatus(t, a.do(t, apitest.Request{Method: "DELETE", Path: "/v1/image/" + id, Creds: &a.Owner}), 202)
	edgeA.want(t, "the deleting origin's edge", "image "+id)
	edgeB.want(t, "the other origin's edge", "image "+id)

	g := mcpConnect(t, a, a.Owner, []string{"usage:read"})
	store, err := pgkv.Open(t.Context(), db, pgkv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	svc, done, err := origin.AdminService(t.Context(), store, seal.Keys{Current: masterKey}, t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if _, err := svc.SetSuspended(t.Context(), a.OrgID, true); err != nil {
		t.Fatal(err)
	}
	edgeA.want(t, "suspension, first origin's edge", "org "+a.OrgID)
	edgeB.want(t, "suspension, second origin's edge", "org "+a.OrgID)
	// Resuming does not bring the MCP connection back: it was revoked.
	if _, err := svc.SetSuspended(t.Context(), a.OrgID, false); err != nil {
		t.Fatal(err)
	}
	if r := mcpPost(t, a.URL+"/mcp", g.Access, mcpToolsList); r.Status != 401 {
		t.Fatalf("an MCP token of a suspended (then resumed) organization: %d %s", r.Status, r.Body)
	}
	apitest.WantStatus(t, a.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys", Creds: &a.Owner}), 200)
}
