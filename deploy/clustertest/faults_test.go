package clustertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/contract/apitest"
)

// testKillOriginDuringBurst: creations run through both edges while
// origin-1 is killed with SIGKILL, with renders of its creations still
// queued or running (creating takes milliseconds, rendering much longer;
// the images are fetched by other goroutines as they are acknowledged).
// Every creation that was acknowledged serves afterwards from both edges,
// the same image from each; creations started after the kill are all
// acknowledged (the edges skip the dead origin); the ones the kill cut fail
// with a gateway error. Once origin-1 is back, the edges use it again.
func testKillOriginDuringBurst(t *testing.T, c *cluster) {
	const (
		n         = 24    // creations; the second half starts after the kill
		workers   = 4     // creations at once, and fetches at once
		killAfter = n / 3 // acknowledged creations before the kill
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var (
		mu        sync.Mutex
		acked     []created
		firstGet  = map[string]*apitest.Response{}
		cut       []int // statuses of creations the kill cut
		failures  []error
		killNow   = make(chan struct{})
		killed    = make(chan struct{})
		afterKill atomic.Int32
	)
	fail := func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	}
	jobs := make(chan int)
	type fetchJob struct {
		im   created
		edge string
	}
	fetches := make(chan fetchJob, n)
	var creators, fetchers sync.WaitGroup
	for range workers {
		creators.Go(func() {
			for i := range jobs {
				isAfter := i >= n/2
				if isAfter {
					select {
					case <-killed:
					case <-ctx.Done():
						fail(fmt.Errorf("creation %d: origin-1 was never killed", i))
						continue
					}
					afterKill.Add(1)
				}
				cd := newCard(fmt.Sprintf("burst %d", i), i)
				edge := c.Edges[i%2]
				id, resp, err := create(ctx, edge, c.owner, cd)
				switch {
				case err != nil:
					fail(fmt.Errorf("creation %d through %s got no answer from the edge: %w", i, edge, err))
					continue
				case id == "" && isAfter:
					fail(fmt.Errorf("creation %d through %s, after origin-1 was dead: %d %s", i, edge, resp.Status, resp.Body))
					continue
				case id == "":
					if err := standardError(resp, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout); err != nil {
						fail(fmt.Errorf("creation %d cut by the kill: %w", i, err))
					}
					mu.Lock()
					cut = append(cut, resp.Status)
					mu.Unlock()
					continue
				}
				im := created{card: cd, id: id}
				mu.Lock()
				acked = append(acked, im)
				if len(acked) == killAfter {
					close(killNow)
				}
				mu.Unlock()
				fetches <- fetchJob{im, edge}
			}
		})
		fetchers.Go(func() {
			for f := range fetches {
				got, err := fetch(ctx, f.edge, f.im)
				if err != nil {
					fail(fmt.Errorf("%s: %w", f.im.card.label, err))
					continue
				}
				mu.Lock()
				firstGet[f.im.id] = got
				mu.Unlock()
			}
		})
	}
	go func() {
		defer close(jobs)
		for i := range n {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wait := func() {
		creators.Wait()
		close(fetches)
		fetchers.Wait()
	}
	select {
	case <-killNow:
	case <-ctx.Done():
		wait()
		t.Fatalf("%d creations were not acknowledged before the deadline: %v", killAfter, failures)
	}
	// The creations and renders in flight now are cut by the kill.
	c.stop(t, "origin-1", true)
	mu.Lock()
	fetchedBefore := len(firstGet)
	mu.Unlock()
	close(killed)
	wait()
	t.Logf("%d acknowledged (%d of them served before the kill), %d cut by the kill (statuses %v), %d started after it",
		len(acked), fetchedBefore, len(cut), cut, afterKill.Load())
	for _, err := range failures {
		t.Error(err)
	}
	if afterKill.Load() != n-n/2 {
		t.Fatalf("%d creations ran after the kill, want %d", afterKill.Load(), n-n/2)
	}

	// Every acknowledged image, from both edges: the same image.
	for _, im := range acked {
		var got [2]*apitest.Response
		for e, edge := range c.Edges {
			r, err := fetch(ctx, edge, im)
			if err != nil {
				t.Errorf("after the kill: %v", err)
				continue
			}
			got[e] = r
		}
		if got[0] == nil || got[1] == nil {
			continue
		}
		if err := sameImage(got[0], got[1]); err != nil {
			t.Errorf("image %s (%s): edge-1 and edge-2 differ: %v", im.id, im.card.label, err)
		}
		if first := firstGet[im.id]; first != nil {
			if err := sameImage(first, got[0]); err != nil {
				t.Errorf("image %s (%s) changed since its first GET: %v", im.id, im.card.label, err)
			}
		}
	}
	if t.Failed() {
		return
	}

	// origin-1 comes back on its port and both edges use it again.
	c.start(t, "origin-1")
	o1 := c.Origins[0]
	for e, edge := range c.Edges {
		up := fmt.Sprintf(`pictor_edge_origin_up{origin=%q}`, o1)
		answered := fmt.Sprintf(`pictor_edge_origin_requests_total{origin=%q,result="answered"}`, o1)
		eventually(t, 30*time.Second, fmt.Sprintf("edge-%d takes origin-1 for up", e+1), func() error {
			if v, _ := metric(t, edge, up); v != 1 {
				return fmt.Errorf("%s = %v", up, v)
			}
			return nil
		})
		before, _ := metric(t, edge, answered)
		eventually(t, 30*time.Second, fmt.Sprintf("edge-%d sends requests to origin-1", e+1), func() error {
			r := mustDo(t, request{method: "GET", url: edge + "/v1/usage", creds: &c.owner})
			if r.Status != http.StatusOK {
				return fmt.Errorf("GET /v1/usage: %d %s", r.Status, r.Body)
			}
			if v, _ := metric(t, edge, answered); v <= before {
				return fmt.Errorf("%s stays %v", answered, v)
			}
			return nil
		})
	}
	im := c.mustCreate(t, o1, newCard("origin-1 is back", n))
	a := mustFetch(t, c.Edges[0], im, time.Minute)
	b := mustFetch(t, c.Edges[1], im, time.Minute)
	if err := sameImage(a, b); err != nil {
		t.Fatalf("image made by origin-1 after its restart: %v", err)
	}
}

// testKillEdge: with edge-1 killed, edge-2 serves the images it holds and
// creates and renders new ones; edge-1 serves again once started.
func testKillEdge(t *testing.T, c *cluster) {
	im := c.mustCreate(t, c.Edges[0], newCard("before the edge dies", 101))
	mustFetch(t, c.Edges[0], im, time.Minute)
	held := mustFetch(t, c.Edges[1], im, time.Minute)

	c.stop(t, "edge-1", true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r, err := do(ctx, request{method: "GET", url: c.Edges[0] + "/healthz"}); err == nil {
		t.Fatalf("edge-1 still answers after its kill: %d", r.Status)
	}
	r := mustDo(t, request{method: "GET", url: c.Edges[1] + "/v1/image/" + im.id + ".png"})
	if err := im.card.check(r); err != nil {
		t.Fatalf("edge-2 with edge-1 dead: %v", err)
	}
	if err := sameImage(held, r); err != nil {
		t.Fatalf("edge-2 with edge-1 dead: %v", err)
	}
	fresh := c.mustCreate(t, c.Edges[1], newCard("while edge-1 is dead", 102))
	onTwo := mustFetch(t, c.Edges[1], fresh, time.Minute)

	c.start(t, "edge-1")
	onOne := mustFetch(t, c.Edges[0], fresh, time.Minute)
	if err := sameImage(onOne, onTwo); err != nil {
		t.Fatalf("edge-1 after its restart: %v", err)
	}
}

// testRestartPostgres: while PostgreSQL is down, requests that need the
// store answer 503 with the standard error body (never 500, never a 404
// for a record it could not read), images held by the edges keep serving;
// once it is back the origins reconnect, every image acknowledged before
// serves, and new creations work.
func testRestartPostgres(t *testing.T, c *cluster) {
	held := c.mustCreate(t, c.Edges[0], newCard("held before the outage", 201))
	heldResp := mustFetch(t, c.Edges[0], held, time.Minute)
	// Acknowledged just before the outage and never fetched: its render
	// may be cut by it, the image must not be.
	pending := c.mustCreate(t, c.Edges[1], newCard("acknowledged before the outage", 202))

	c.stop(t, "postgres", false)
	// An id of the same shape as the real ones, which no record has.
	missing := held.id[:len(held.id)-4] + "ffff"
	if missing == held.id {
		missing = held.id[:len(held.id)-4] + "eeee"
	}
	card := newCard("during the outage", 203)
	for _, q := range []struct {
		name string
		r    request
	}{
		{"create through edge-1", request{method: "POST", url: c.Edges[0] + "/v1/image", creds: &c.owner, json: card.body()}},
		{"create on origin-2", request{method: "POST", url: c.Origins[1] + "/v1/image", creds: &c.owner, json: card.body()}},
		{"list images through edge-2", request{method: "GET", url: c.Edges[1] + "/v1/images", creds: &c.owner}},
		{"list API keys on origin-1", request{method: "GET", url: c.Origins[0] + "/v1/api-keys", creds: &c.owner}},
		{"GET of an image with no record, through edge-2", request{method: "GET", url: c.Edges[1] + "/v1/image/" + missing + ".png"}},
		{"GET of an image with no record, on origin-1", request{method: "GET", url: c.Origins[0] + "/v1/image/" + missing + ".png"}},
	} {
		if err := standardError(mustDo(t, q.r), http.StatusServiceUnavailable); err != nil {
			t.Errorf("PostgreSQL down, %s: %v", q.name, err)
		}
	}
	r := mustDo(t, request{method: "GET", url: c.Edges[0] + "/v1/image/" + held.id + ".png"})
	if err := held.card.check(r); err != nil {
		t.Errorf("PostgreSQL down, an image edge-1 holds: %v", err)
	} else if err := sameImage(heldResp, r); err != nil {
		t.Errorf("PostgreSQL down, an image edge-1 holds: %v", err)
	}

	c.start(t, "postgres")
	// The origins reconnect by themselves: 503 until they do, then 200.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	restarted := time.Now()
	var after created
	for after.id == "" {
		id, resp, err := create(ctx, c.Edges[0], c.owner, newCard("after the outage", 204))
		switch {
		case id != "":
			after = created{card: newCard("after the outage", 204), id: id}
		case err == nil && resp.Status != http.StatusServiceUnavailable:
			t.Fatalf("create after the restart: %d %s", resp.Status, resp.Body)
		case ctx.Err() != nil:
			t.Fatalf("create after the restart: still failing at the deadline: %v", err)
		default:
			<-time.After(200 * time.Millisecond)
		}
	}
	t.Logf("a creation is acknowledged again %v after PostgreSQL's restart", time.Since(restarted).Round(time.Millisecond))
	for _, im := range []created{after, pending, held} {
		// pending's render may have been cut by the outage: another origin
		// takes it over once its render lease expires.
		a := mustFetch(t, c.Edges[0], im, 90*time.Second)
		b := mustFetch(t, c.Edges[1], im, 90*time.Second)
		if err := sameImage(a, b); err != nil {
			t.Errorf("%s after the outage: %v", im.card.label, err)
		}
		// The origins read the records again (edges may hold the image).
		for i, o := range c.Origins {
			if _, err := fetch(ctx, o, im); err != nil {
				t.Errorf("%s on origin-%d after the outage: %v", im.card.label, i+1, err)
			}
		}
	}
}

// testStopS3: with the S3 server stopped, the edges keep serving the
// images they hold, byte for byte; a new render either fails with 502 or
// 503 and the standard error body, or is answered from the bytes just
// captured, which the origin could not store (docs/decisions.md: masters
// answered while stored) — never a 500, never a hang. Once S3 is back,
// renders work again, the image acknowledged during the outage included,
// and it is then stored: both edges serve the same image.
func testStopS3(t *testing.T, c *cluster) {
	held := c.mustCreate(t, c.Edges[0], newCard("held before S3 stops", 301))
	var heldResp [2]*apitest.Response
	for e, edge := range c.Edges {
		heldResp[e] = mustFetch(t, edge, held, time.Minute)
	}

	c.stop(t, "s3", false)
	for e, edge := range c.Edges {
		r := mustDo(t, request{method: "GET", url: edge + "/v1/image/" + held.id + ".png"})
		if err := held.card.check(r); err != nil {
			t.Errorf("S3 down, edge-%d: %v", e+1, err)
		} else if err := sameImage(heldResp[e], r); err != nil {
			t.Errorf("S3 down, edge-%d: %v", e+1, err)
		}
	}
	cd := newCard("created while S3 is down", 302)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, resp, err := create(ctx, c.Edges[0], c.owner, cd)
	if err != nil {
		t.Fatalf("create with S3 down: %v", err)
	}
	var during *created
	if id == "" {
		// Refusing the creation is clean too.
		if err := standardError(resp, http.StatusBadGateway, http.StatusServiceUnavailable); err != nil {
			t.Errorf("create with S3 down: %v", err)
		}
	} else {
		during = &created{card: cd, id: id}
		for e, edge := range c.Edges {
			// mustDo's deadline is the bound of "not a hang".
			r := mustDo(t, request{method: "GET", url: edge + "/v1/image/" + id + ".png"})
			if r.Status == http.StatusOK {
				if err := cd.check(r); err != nil {
					t.Errorf("render with S3 down, answered from memory through edge-%d: %v", e+1, err)
				}
			} else if err := standardError(r, http.StatusBadGateway, http.StatusServiceUnavailable); err != nil {
				t.Errorf("render with S3 down, through edge-%d: %v", e+1, err)
			}
		}
	}

	c.start(t, "s3")
	fresh := c.mustCreate(t, c.Edges[1], newCard("after S3 is back", 303))
	check := []created{fresh}
	if during != nil {
		check = append(check, *during)
	}
	for _, im := range check {
		a := mustFetch(t, c.Edges[0], im, time.Minute)
		b := mustFetch(t, c.Edges[1], im, time.Minute)
		if err := sameImage(a, b); err != nil {
			t.Errorf("%s: %v", im.card.label, err)
		}
	}
}

// testPurgeReachesEveryEdge: an image deleted through either origin stops
// serving from both edges, whichever origin each follows for purges.
func testPurgeReachesEveryEdge(t *testing.T, c *cluster) {
	var ims [2]created
	for i := range ims {
		ims[i] = c.mustCreate(t, c.Edges[i], newCard(fmt.Sprintf("deleted through origin-%d", i+1), 401+i))
		for _, edge := range c.Edges {
			mustFetch(t, edge, ims[i], time.Minute)
		}
	}
	for i, im := range ims {
		r := mustDo(t, request{method: "DELETE", url: c.Origins[i] + "/v1/image/" + im.id, creds: &c.owner})
		if r.Status != http.StatusAccepted {
			t.Fatalf("DELETE %s on origin-%d: %d %s", im.id, i+1, r.Status, r.Body)
		}
	}
	// Poll every edge for every image until all answer 404.
	const deadline = 15 * time.Second
	end := time.Now().Add(deadline)
	pending := map[string]string{} // edge-image -> last answer
	for i := range ims {
		for e := range c.Edges {
			pending[fmt.Sprintf("edge-%d/%d", e+1, i)] = "not asked yet"
		}
	}
	for len(pending) > 0 {
		for i, im := range ims {
			for e, edge := range c.Edges {
				key := fmt.Sprintf("edge-%d/%d", e+1, i)
				if _, ok := pending[key]; !ok {
					continue
				}
				r := mustDo(t, request{method: "GET", url: edge + "/v1/image/" + im.id + ".png"})
				if r.Status == http.StatusNotFound {
					if err := standardError(r, http.StatusNotFound); err != nil {
						t.Errorf("edge-%d, deleted image: %v", e+1, err)
					}
					delete(pending, key)
					continue
				}
				pending[key] = fmt.Sprintf("%d", r.Status)
			}
		}
		if len(pending) == 0 {
			break
		}
		if time.Now().After(end) {
			for i, im := range ims {
				for e := range c.Edges {
					if last, ok := pending[fmt.Sprintf("edge-%d/%d", e+1, i)]; ok {
						t.Errorf("edge-%d still answers %s for image %s, deleted through origin-%d %v ago", e+1, last, im.id, i+1, deadline)
					}
				}
			}
			return
		}
		<-time.After(200 * time.Millisecond)
	}
}

// testRateLimitAcrossOrigins: the management write quota (20 a minute per
// group) holds across both origins: 20 API key creations alternated
// between them succeed, counting down one allowance, and the next on
// either origin is 429 with Retry-After.
func testRateLimitAcrossOrigins(t *testing.T, c *cluster) {
	const quota = 20
	k := c.orgCreate(t, "rate-limited", "scale")
	write := func(o int, n int) *apitest.Response {
		return mustDo(t, request{method: "POST", url: c.Origins[o] + "/v1/api-keys", creds: &k,
			json: map[string]any{"name": fmt.Sprintf("key %d", n), "permissions": []string{"images:read"}}})
	}
	// Each write spends one allowance of the group's shared window: the
	// remaining counts are 19 down to 0, whichever origin answers.
	var remaining, want []string
	for i := range quota {
		r := write(i%2, i)
		if r.Status != http.StatusOK {
			t.Fatalf("write %d of %d, on origin-%d: %d %s", i+1, quota, i%2+1, r.Status, r.Body)
		}
		remaining = append(remaining, strings.TrimPrefix(r.Header.Get("RateLimit"), `"api-key:write";r=`))
		want = append(want, strconv.Itoa(quota-1-i))
	}
	if strings.Join(remaining, " ") != strings.Join(want, " ") {
		t.Errorf("RateLimit remaining after writes alternated between origin-1 and origin-2: %v, want %v", remaining, want)
	}
	for o := range c.Origins {
		r := write(o, quota+o)
		if err := standardError(r, http.StatusTooManyRequests); err != nil {
			t.Errorf("write %d on origin-%d, past the quota: %v", quota+1+o, o+1, err)
			continue
		}
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s <= 0 || s > 60 {
			t.Errorf("429 on origin-%d: Retry-After %q", o+1, r.Header.Get("Retry-After"))
		}
	}
}

// testCreditsAcrossOrigins: 80 concurrent creations for an organization
// on the free plan (50 credits), spread over both origins: exactly 50 are
// acknowledged, each charging one credit of 1..50, the other 30 get the
// plan limit's 429, and the usage report says 50.
func testCreditsAcrossOrigins(t *testing.T, c *cluster) {
	const total, credits = 80, 50
	k := c.orgCreate(t, "fifty-credits", "free")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		resp *apitest.Response
		err  error
	}
	results := make([]result, total)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range total {
		wg.Go(func() {
			<-start
			id, resp, err := create(ctx, c.Origins[i%2], k, newCard(fmt.Sprintf("credit %d", i), 500+i))
			if err == nil && resp.Status == http.StatusOK && id == "" {
				err = errors.New("acknowledged without an id")
			}
			results[i] = result{resp, err}
		})
	}
	close(start)
	wg.Wait()
	ok, limited := 0, 0
	used := map[string]int{} // x-renders-used of the acknowledged ones
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("creation %d on origin-%d: %v", i, i%2+1, r.err)
		case r.resp.Status == http.StatusOK:
			ok++
			used[r.resp.Header.Get("X-Renders-Used")]++
		case r.resp.Status == http.StatusTooManyRequests:
			limited++
			if err := standardError(r.resp, http.StatusTooManyRequests); err != nil {
				t.Errorf("creation %d: %v", i, err)
			} else if !strings.Contains(string(r.resp.Body), "image credits") {
				t.Errorf("creation %d: a 429 that does not name the plan limit: %s", i, r.resp.Body)
			}
		default:
			t.Errorf("creation %d on origin-%d: %d %s", i, i%2+1, r.resp.Status, r.resp.Body)
		}
	}
	if ok != credits || limited != total-credits {
		t.Errorf("%d acknowledged and %d refused for the plan limit, want %d and %d", ok, limited, credits, total-credits)
	}
	// Each acknowledged creation charged one credit of the 50: the counts
	// they saw are 1..50, each once.
	for n := 1; n <= credits && ok == credits; n++ {
		if used[strconv.Itoa(n)] != 1 {
			t.Errorf("x-renders-used %d was answered %d times, want once (all: %v)", n, used[strconv.Itoa(n)], used)
			break
		}
	}
	r := mustDo(t, request{method: "GET", url: c.Origins[1] + "/v1/usage", creds: &k})
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/usage: %d %s", r.Status, r.Body)
	}
	var rep struct {
		PerBillingPeriod []struct {
			TotalImages int64   `json:"total_images"`
			End         *string `json:"end"`
		} `json:"per_billing_period"`
	}
	if err := json.Unmarshal(r.Body, &rep); err != nil || len(rep.PerBillingPeriod) == 0 {
		t.Fatalf("usage report %s: %v", r.Body, err)
	}
	if cur := rep.PerBillingPeriod[len(rep.PerBillingPeriod)-1]; cur.End != nil || cur.TotalImages != credits {
		t.Errorf("usage of the current period: %d images (end %v), want %d", cur.TotalImages, cur.End, credits)
	}
}
