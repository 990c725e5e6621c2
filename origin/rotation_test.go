package origin_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/edge/purgelog"
	"github.com/pictorhq/pictor/kv"
	"github.com/pictorhq/pictor/kv/pgkv/pgtest"
	"github.com/pictorhq/pictor/origin"
	"github.com/pictorhq/pictor/origin/apikey"
	"github.com/pictorhq/pictor/origin/auth"
	"github.com/pictorhq/pictor/origin/contract"
	"github.com/pictorhq/pictor/origin/contract/apitest"
	"github.com/pictorhq/pictor/origin/egress/tinyproxytest"
	"github.com/pictorhq/pictor/origin/org"
	"github.com/pictorhq/pictor/origin/perm"
	"github.com/pictorhq/pictor/origin/seal"
	"github.com/pictorhq/pictor/origin/storage/s3test"
)

// rotationKey is a fresh master key as PICTOR_MASTER_KEY takes it, and
// its key id.
func rotationKey(t *testing.T) (hexKey, id string) {
	t.Helper()
	raw := make([]byte, 32)
	rand.Read(raw)
	b, err := seal.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(raw), b.KeyID()
}

// restartOn starts an origin on the data directory (or store) of one that
// ran before, whose organization and owner it serves.
func restartOn(t *testing.T, owner apitest.Creds, orgID string, configure ...func(*origin.Config)) *testOrigin {
	t.Helper()
	o := startOrigin(t, append([]func(*origin.Config){func(c *origin.Config) { c.CreateDefaultOrg = false }}, configure...)...)
	o.Owner, o.OrgID = owner, orgID
	return o
}

// stopNow stops an origin before the test ends (its cleanup stops it
// again, which does nothing).
func (o *testOrigin) stopNow(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := o.origin.Stop(ctx); err != nil {
		t.Fatalf("stop origin: %v", err)
	}
}

func writeSecretFile(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// firstKeyPage lists one key as creds and returns the cursor of the next
// page.
func (o *testOrigin) firstKeyPage(t *testing.T, creds apitest.Creds) string {
	t.Helper()
	r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys?count=1", Creds: &creds})
	apitest.WantStatus(t, r, 200)
	var page struct {
		Pagination struct {
			NextPageStart *string `json:"next_page_start"`
		} `json:"pagination"`
	}
	r.Decode(t, &page)
	if page.Pagination.NextPageStart == nil {
		t.Fatalf("no next page: %s", r.Body)
	}
	return *page.Pagination.NextPageStart
}

// nextKeyPage lists the page a cursor starts, as creds.
func (o *testOrigin) nextKeyPage(t *testing.T, creds apitest.Creds, cursor string) *apitest.Response {
	t.Helper()
	return o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys?count=1&page_start=" + url.QueryEscape(cursor), Creds: &creds})
}

// TestMasterKeyRotationEmbedded replaces the master key of one origin on
// the embedded store, as `pictor serve` runs: values sealed under the old
// key (API key secrets, a proxy password, a storage destination's secret)
// and a pagination cursor signed under it keep working once the origin
// restarts with the new key in master.key and the old one in
// master.key.previous; the reseal pass seals again what no request read,
// and a second pass finds nothing left. With master.key.previous removed,
// every key still authenticates, a render goes through the proxy with its
// password, the destination's connection test passes with its secret, and
// the old cursor is refused as any foreign one.
func TestMasterKeyRotationEmbedded(t *testing.T) {
	oldKey, oldID := rotationKey(t)
	newKey, newID := rotationKey(t)
	dir := t.TempDir()
	writeSecretFile(t, dir, seal.KeyFile, oldKey)
	tp := tinyproxytest.Start(t)
	s3 := s3test.New(t)
	site := (&hitLog{from: map[string][]string{}}).serve(t, "127.0.0.1:0")
	onDir := func(c *origin.Config) { c.DataDir, c.Render.Tabs = dir, 1 }

	a := startOrigin(t, onDir)
	readers := []apitest.Creds{a.Owner}
	for range 2 {
		readers = append(readers, *a.createKey(t, a.Owner, map[string]any{"permissions": []string{"api_keys:read"}}).creds())
	}
	r := a.do(t, apitest.Request{Method: "POST", Path: "/v1/proxies", Creds: &a.Owner, JSON: map[string]any{
		"name": "tiny", "url": "http://127.0.0.1", "port": tp.Port,
		"authentication": map[string]any{"username": tinyproxytest.User, "password": tinyproxytest.Password}}})
	apitest.WantStatus(t, r, 200)
	var px struct{ ID string }
	r.Decode(t, &px)
	destID := a.createDestination(t, s3, "rotation", nil)
	oldCursor := a.firstKeyPage(t, a.Owner)
	a.stopNow(t)

	// The new key becomes current, the old one previous.
	writeSecretFile(t, dir, seal.PreviousKeyFile, oldKey)
	writeSecretFile(t, dir, seal.KeyFile, newKey)
	b := restartOn(t, a.Owner, a.OrgID, onDir)
	apitest.WantStatus(t, b.nextKeyPage(t, b.Owner, oldCursor), 200)
	apitest.WantStatus(t, b.nextKeyPage(t, readers[1], oldCursor), 200)
	ctx := context.Background()
	report, err := b.origin.Reseal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The owner and the first reader authenticated (their secrets were
	// sealed again as they were read); the pass seals the rest.
	want := origin.ResealReport{CurrentKey: newID,
		APIKeys:             seal.ResealCount{Records: 3, Resealed: 1},
		Proxies:             seal.ResealCount{Records: 1, Resealed: 1},
		StorageDestinations: seal.ResealCount{Records: 1, Resealed: 1}}
	if report != want || !report.Done() {
		t.Fatalf("reseal report %+v, want %+v", report, want)
	}
	again, err := b.origin.Reseal(ctx)
	if err != nil || again.Total() != (seal.ResealCount{Records: 5}) || !again.Done() {
		t.Fatalf("second pass %+v, %v: want 5 records, none sealed again", again, err)
	}
	newCursor := b.firstKeyPage(t, b.Owner)
	b.stopNow(t)
	if strings.Contains(logs.String(), oldKey) || strings.Contains(logs.String(), newKey) {
		t.Fatal("a master key was logged")
	}
	if !strings.Contains(logs.String(), oldID) {
		t.Fatalf("the logs never name the previous key's id %s", oldID)
	}

	// The old key is dropped.
	if err := os.Remove(filepath.Join(dir, seal.PreviousKeyFile)); err != nil {
		t.Fatal(err)
	}
	c := restartOn(t, a.Owner, a.OrgID, onDir)
	for i, creds := range readers {
		if r := c.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys?count=1", Creds: &creds}); r.Status != 200 {
			t.Fatalf("key %d after the old master key was dropped: %d %s", i, r.Status, r.Body)
		}
	}
	apitest.WantStatus(t, c.nextKeyPage(t, c.Owner, newCursor), 200)
	apitest.WantField(t, c.nextKeyPage(t, c.Owner, oldCursor), "page_start")

	_, u := c.create(t, c.Owner, map[string]any{"url": site + "/after-rotation", "proxy_id": px.ID})
	apitest.WantStatus(t, apitest.Do(t, u, apitest.Request{Method: "GET"}), 200)
	if log := strings.Join(tp.Requests(t), "\n"); !strings.Contains(log, "/after-rotation") {
		t.Fatalf("the render did not go through the proxy with its password; tinyproxy's log:\n%s", log)
	}

	conn := map[string]any{"provider": "other_s3_compatible", "endpoint": s3.URL, "bucket": s3.Bucket, "key_prefix": "rotation",
		"access_key_id": s3test.AccessKeyID, "retain_secret_access_key": true}
	for _, disabled := range []bool{true, false} {
		c.nextWindow()
		r := c.do(t, apitest.Request{Method: "POST", Path: "/v1/storage-destinations/" + destID, Creds: &c.Owner,
			JSON: map[string]any{"name": "bucket rotation", "disabled": disabled, "connection_info": conn}})
		apitest.WantStatus(t, r, 200)
		var d struct {
			LastTestSucceeded bool `json:"last_test_succeeded"`
		}
		r.Decode(t, &d)
		if !d.LastTestSucceeded {
			t.Fatalf("the connection test with the kept secret failed: %s", r.Body)
		}
	}
}

// front is the public URL of origins sharing a store (their edges, in
// production): it hands each request to the origin chosen, so that every
// origin has the same OAuth issuer whichever runs.
type front struct {
	URL    string
	target atomic.Pointer[url.URL]
}

func newFront(t *testing.T) *front {
	t.Helper()
	f := &front{}
	srv := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(f.target.Load())
		r.Out.Host = r.In.Host
	}})
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

func (f *front) to(t *testing.T, o *testOrigin) {
	t.Helper()
	u, err := url.Parse(o.URL)
	if err != nil {
		t.Fatal(err)
	}
	f.target.Store(u)
}

// sealedKeyIDs returns the key id each API key's secret names, by key id.
func sealedKeyIDs(t *testing.T, store kv.Reader) map[string]string {
	t.Helper()
	it := store.Iterate(t.Context(), []byte("key/"), kv.IterOptions{})
	defer it.Close()
	out := map[string]string{}
	for it.Next() {
		var k apikey.Key
		if err := json.Unmarshal(it.Value(), &k); err != nil {
			t.Fatal(err)
		}
		if len(k.Secret) < 1+seal.KeyIDLen || k.Secret[0] != 0x02 {
			out[k.ID] = "not v2"
			continue
		}
		out[k.ID] = hex.EncodeToString(k.Secret[1 : 1+seal.KeyIDLen])
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMasterKeyRotationCluster replaces the master key of two origins
// sharing a PostgreSQL store, one origin at a time, in the documented
// order: (1) every origin accepts the new key as next while sealing under
// the old one; (2) every origin seals under the new key and keeps the old
// one as previous; (3) the reseal pass; (4) the old key goes. Throughout,
// every key authenticates on every origin, cursors and MCP tokens of one
// origin are good on the others, and a value the new key sealed is not
// sealed back under the old one by an origin still on it. The pass runs
// while both origins serve, keys are created and the keys it reseals are
// renamed: nothing is lost. An origin given the old key alone cannot open
// what the new one sealed: 503, and a log naming the key it lacks.
func TestMasterKeyRotationCluster(t *testing.T) {
	db := pgtest.Shared(t).Database(t)
	oldKey, _ := rotationKey(t)
	newKey, newID := rotationKey(t)
	pub := newFront(t)
	keys := func(current, previous, next string) func(*origin.Config) {
		return func(c *origin.Config) {
			c.Store, c.CompactIdle, c.Render.Tabs, c.PublicURL = db, -1, 1, pub.URL
			c.MasterKey, c.PreviousMasterKeys, c.NextMasterKeys = current, previous, next
		}
	}
	store, err := origin.OpenStore("", db)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()

	// Phase 0: both origins on the old key.
	a0 := startOrigin(t, keys(oldKey, "", ""))
	b0 := restartOn(t, a0.Owner, a0.OrgID, keys(oldKey, "", ""))
	owner, orgID := a0.Owner, a0.OrgID
	kOld := *a0.createKey(t, owner, map[string]any{"permissions": []string{"api_keys:read"}}).creds()
	oldCursor := b0.firstKeyPage(t, owner)
	pub.to(t, a0)
	oldGrant := mcpConnectAt(t, pub.URL, owner, []string{"usage:read"})
	// Keys the pass will find under the old key: nothing reads them.
	oldBox, err := seal.LoadKeys(seal.Keys{Current: oldKey}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	seedStore := apikey.NewStore(store, oldBox, org.NewStore(store, nil), nil)
	grant := perm.Grant{Permissions: []perm.Permission{perm.APIKeysRead}}
	const seeded = 60
	seededIDs, seededSecrets := make([]string, seeded), map[string]string{}
	for i := range seeded {
		k, secret, err := seedStore.Create(orgID, apikey.Request{Name: fmt.Sprintf("seeded %d", i), Grant: grant}, nil)
		if err != nil {
			t.Fatal(err)
		}
		seededIDs[i], seededSecrets[k.APIID] = k.ID, secret
	}

	// Phase 1: b accepts the new key while sealing under the old one.
	b0.stopNow(t)
	b1 := restartOn(t, owner, orgID, keys(oldKey, "", newKey))

	// Phase 2, halfway: a seals under the new key, b is still in phase 1.
	a0.stopNow(t)
	a2 := restartOn(t, owner, orgID, keys(newKey, oldKey, ""))
	pub.to(t, a2)
	kNewKey := a2.createKey(t, owner, map[string]any{"permissions": []string{"api_keys:read"}})
	kNew := *kNewKey.creds()
	for _, o := range []*testOrigin{a2, b1} {
		for i, creds := range []apitest.Creds{owner, kOld, kNew} {
			if r := o.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys?count=1", Creds: &creds}); r.Status != 200 {
				t.Fatalf("key %d on %s during the rolling restart: %d %s", i, o.URL, r.Status, r.Body)
			}
		}
		apitest.WantStatus(t, o.nextKeyPage(t, owner, oldCursor), 200)
		if r := mcpPost(t, o.URL+origin.MCPPath, oldGrant.Access, mcpToolsList); r.Status != 200 {
			t.Fatalf("an MCP token of the old key on %s: %d %s", o.URL, r.Status, r.Body)
		}
	}
	apitest.WantStatus(t, b1.nextKeyPage(t, owner, a2.firstKeyPage(t, owner)), 200)
	newGrant := mcpConnectAt(t, pub.URL, owner, []string{"usage:read"})
	if r := mcpPost(t, b1.URL+origin.MCPPath, newGrant.Access, mcpToolsList); r.Status != 200 {
		t.Fatalf("an MCP token of the new key on the origin in phase 1: %d %s", r.Status, r.Body)
	}
	// b read kNew (under the new key) and kept it there.
	if got := sealedKeyIDs(t, store)[kNewKey.ID]; got != newID {
		t.Fatalf("the key created under the new master key is now sealed under %s, want %s", got, newID)
	}

	// Phase 2 done.
	b1.stopNow(t)
	b2 := restartOn(t, owner, orgID, keys(newKey, oldKey, ""))

	// Phase 3: the pass, from a process of its own (as `pictor admin
	// reseal` runs on a shared store), while both origins serve, keys are
	// created through them and the seeded keys are renamed.
	box, err := seal.LoadKeys(seal.Keys{Current: newKey, Previous: oldKey}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	renamer := apikey.NewStore(store, box, org.NewStore(store, nil), nil)
	names := map[string]string{} // the last name each seeded key was given
	renamed, stopRenames := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	var renameErr error
	wg.Go(func() {
		for round := 0; ; round++ {
			for _, id := range seededIDs {
				select {
				case <-stopRenames:
					return
				default:
				}
				name := fmt.Sprintf("round %d", round)
				if _, err := renamer.Update(ctx, orgID, id, apikey.Request{Name: name, Grant: grant}, nil); err != nil {
					renameErr = err
					return
				}
				names[id] = name
				if round == 0 && id == seededIDs[0] {
					close(renamed)
				}
			}
		}
	})
	const created = 10
	createdKeys := make([]key, created)
	wg.Go(func() {
		<-renamed
		for i := range created {
			o := []*testOrigin{a2, b2}[i%2]
			r, err := apitest.Send(o.URL, apitest.Request{Method: "POST", Path: "/v1/api-keys", Creds: &owner,
				JSON: map[string]any{"permissions": []string{"api_keys:read"}}})
			if err == nil && r.Status == 200 {
				err = json.Unmarshal(r.Body, &createdKeys[i])
			} else if err == nil {
				err = fmt.Errorf("create a key: %d %s", r.Status, r.Body)
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	<-renamed
	report, err := origin.Reseal(ctx, store, box)
	close(stopRenames)
	wg.Wait()
	if err != nil || renameErr != nil {
		t.Fatalf("reseal: %v; renames: %v", err, renameErr)
	}
	if report.CurrentKey != newID || report.APIKeys.Resealed < seeded || !report.Done() {
		t.Fatalf("reseal report %+v: want at least the %d seeded keys sealed again, none failed", report, seeded)
	}
	again, err := origin.Reseal(ctx, store, box)
	if err != nil || again.Total().Resealed != 0 || !again.Done() {
		t.Fatalf("second pass %+v, %v: want nothing left to seal again", again, err)
	}
	for id, kid := range sealedKeyIDs(t, store) {
		if kid != newID {
			t.Fatalf("key %s is sealed under %s after the pass, want %s", id, kid, newID)
		}
	}
	for _, id := range seededIDs {
		k, err := renamer.Get(ctx, orgID, id)
		if err != nil || k.Name != names[id] {
			t.Fatalf("seeded key %s: name %q, %v; the last rename made it %q", id, k.Name, err, names[id])
		}
	}

	// An origin given the old key alone cannot open what the new one
	// sealed: a clear refusal, for another origin to serve.
	stale := restartOn(t, owner, orgID, keys(oldKey, "", ""))
	r := stale.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys?count=1", Creds: &owner})
	apitest.WantError(t, r, http.StatusServiceUnavailable)
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("the refusal has no Retry-After")
	}
	if l := logs.String(); !strings.Contains(l, "does not hold (key id "+newID+")") {
		t.Fatalf("no log names the master key the origin lacks (%s)", newID)
	}
	stale.stopNow(t)

	// Phase 4: the old key goes.
	a2.stopNow(t)
	b2.stopNow(t)
	a4 := restartOn(t, owner, orgID, keys(newKey, "", ""))
	all := []apitest.Creds{owner, kOld, kNew}
	for _, k := range createdKeys {
		all = append(all, *k.creds())
	}
	for i, creds := range all {
		if r := a4.do(t, apitest.Request{Method: "GET", Path: "/v1/api-keys?count=1", Creds: &creds}); r.Status != 200 {
			t.Fatalf("key %d on the new key alone: %d %s", i, r.Status, r.Body)
		}
	}
	newOnly, err := seal.LoadKeys(seal.Keys{Current: newKey}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	check := apikey.NewStore(store, newOnly, org.NewStore(store, nil), nil)
	for apiID, secret := range seededSecrets {
		if _, err := check.Authenticate(ctx, apiID, secret); err != nil {
			t.Fatalf("seeded key %s on the new key alone: %v", apiID, err)
		}
		if _, err := check.Authenticate(ctx, apiID, secret+"x"); !errors.Is(err, auth.ErrInvalid) {
			t.Fatalf("a wrong secret of seeded key %s: %v", apiID, err)
		}
	}
	if r := mcpPost(t, a4.URL+origin.MCPPath, newGrant.Access, mcpToolsList); r.Status != 200 {
		t.Fatalf("an MCP token of the new key: %d %s", r.Status, r.Body)
	}
	apitest.WantField(t, a4.nextKeyPage(t, owner, oldCursor), "page_start")
	if l := logs.String(); strings.Contains(l, oldKey) || strings.Contains(l, newKey) {
		t.Fatal("a master key was logged")
	}
}

// follow runs a purge subscriber (an edge's) with token against base
// until the test ends; ready says whether to wait until it caught up.
func follow(t *testing.T, base, token, name string, ready bool) (*purgelog.Subscriber, *purgeLog) {
	t.Helper()
	rec := &purgeLog{}
	s, err := purgelog.New(purgelog.Config{OriginURL: base, Token: token, Name: name,
		StateFile: filepath.Join(t.TempDir(), "edge.state"), Purger: rec})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	if ready {
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		defer wcancel()
		if err := s.WaitReady(wctx); err != nil {
			t.Fatalf("edge %s never caught up: %v", name, err)
		}
	}
	return s, rec
}

// logLine is one JSON log record.
type logLine map[string]any

// waitLog waits until a log record satisfies match, for up to 30 s.
func waitLog(t *testing.T, what string, match func(logLine) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := logs.Wait(ctx, func(text string) bool {
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var l logLine
			if json.Unmarshal(sc.Bytes(), &l) == nil && match(l) {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no log of %s: %v", what, err)
	}
}

// streamStatus opens the purge channel with token and returns the answer's
// status and body.
func streamStatus(t *testing.T, base, token string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+contract.StreamPath, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	if resp.StatusCode != http.StatusOK {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			body.WriteString(sc.Text())
		}
	}
	return resp.StatusCode, resp.Header, body.String()
}

// TestEdgeTokenRotation moves edges from one purge channel token to
// another without downtime: with both in edge.token (a token a line), an
// edge presenting the old one and an edge presenting the new one both
// follow the channel, and a key disabled answers once both dropped its
// signed URLs; once the origin takes only the new token (--edge-token),
// the old edge is refused with 401 while the new one follows. Tokens
// never reach the logs; the origin logs which token each edge presented,
// by position.
func TestEdgeTokenRotation(t *testing.T) {
	oldToken, newToken := "old-edge-token-"+hex.EncodeToString([]byte("0123456789")), "new-edge-token-"+hex.EncodeToString([]byte("9876543210"))
	dir := t.TempDir()
	writeSecretFile(t, dir, origin.EdgeTokenFile, oldToken+"\n"+newToken)
	onDir := func(c *origin.Config) { c.DataDir, c.Render.Tabs = dir, 1 }
	a := startOrigin(t, onDir)
	_, oldEdge := follow(t, a.URL, oldToken, "old-edge", true)
	_, newEdge := follow(t, a.URL, newToken, "new-edge", true)
	k := a.createKey(t, a.Owner, map[string]any{"permissions": []string{"images:create"}})
	apitest.WantStatus(t, a.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + k.ID, Creds: &a.Owner}), 204)
	if !oldEdge.has(&oldEdge.tags, k.APIID) || !newEdge.has(&newEdge.tags, k.APIID) {
		t.Fatal("disabling a key answered before both edges dropped its signed URLs")
	}
	for name, token := range map[string]float64{"old-edge": 1, "new-edge": 2} {
		waitLog(t, name+" connecting with token "+fmt.Sprint(token), func(l logLine) bool {
			edge, _ := l["edge"].(string)
			return l["msg"] == "edge connected to the purge channel" && strings.HasPrefix(edge, name+"@") && l["token"] == token && l["tokens"] == float64(2)
		})
	}
	a.stopNow(t)

	// The old token is removed: the flag names the new one alone.
	b := restartOn(t, a.Owner, a.OrgID, onDir, func(c *origin.Config) { c.EdgeToken = newToken })
	status, header, body := streamStatus(t, b.URL, oldToken)
	if status != http.StatusUnauthorized || !strings.Contains(header.Get("WWW-Authenticate"), contract.StreamRealm) ||
		!strings.Contains(body, `"statusCode":401`) || !strings.Contains(body, "Invalid edge token") {
		t.Fatalf("the old token: %d %q %s; want the 401 challenge in the standard body", status, header.Get("WWW-Authenticate"), body)
	}
	_, newEdge = follow(t, b.URL, newToken, "new-edge", true)
	stale, _ := follow(t, b.URL, oldToken, "old-edge", false)
	waitLog(t, "the old edge refused", func(l logLine) bool {
		e, _ := l["error"].(string)
		return l["msg"] == "edge lost the origin's purge stream; reconnecting" && l["origin"] == b.URL && strings.Contains(e, "401")
	})
	waitLog(t, "the origin refusing the old edge", func(l logLine) bool {
		edge, _ := l["edge"].(string)
		return l["msg"] == "edge refused: a token the purge channel does not accept" && strings.HasPrefix(edge, "old-edge@")
	})
	if stale.Ready() {
		t.Fatal("the edge with the removed token caught up")
	}
	k2 := b.createKey(t, b.Owner, map[string]any{"permissions": []string{"images:create"}})
	apitest.WantStatus(t, b.do(t, apitest.Request{Method: "DELETE", Path: "/v1/api-keys/" + k2.ID, Creds: &b.Owner}), 204)
	if !newEdge.has(&newEdge.tags, k2.APIID) {
		t.Fatal("the edge with the new token did not get the purge")
	}
	if l := logs.String(); strings.Contains(l, oldToken) || strings.Contains(l, newToken) {
		t.Fatal("an edge token was logged")
	}

	// A bad list is refused at start, naming the entry, not its text.
	cfg := origin.DefaultConfig()
	cfg.DataDir, cfg.EdgeToken = t.TempDir(), newToken+",short-secret"
	_, err := origin.New(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "edge token 2") || strings.Contains(err.Error(), "short-secret") {
		t.Fatalf("origin.New with a short second token: %v", err)
	}
}
