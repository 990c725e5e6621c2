package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/cluster"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/pictor"
)

// The two sides of the cluster scenario, the suffixes of its results'
// names.
const (
	sideEmbedded = "embedded"
	sideCluster  = "cluster"
)

// The measurements of the cluster scenario, the middles of its results'
// names: "cluster/<what>-<side>".
const (
	clusterCreate = "create"
	clusterRead   = "read"
	clusterRender = "render"
	// clusterMaster is a GET of a stored PNG master straight from an
	// origin, past the edges' caches: read from the blob store each
	// time, the files store's on the embedded side, S3's on the
	// cluster's.
	clusterMaster = "master"
)

const (
	// clusterDedupe is the dedupe window of the creates, 30 days: one
	// every plan allows.
	clusterDedupe = 2592000
	// clusterMetadataSlack is the target: a metadata request through the
	// cluster at most this much slower at the median than through the
	// embedded default.
	clusterMetadataSlack = 2 * time.Millisecond
	// clusterWarmup is how many unmeasured creates and reads each side
	// gets first (connections and pools open, code paths warm).
	clusterWarmup = 100
	// The sequential requests PostgreSQL's transactions are counted over:
	// enough that the idle cluster's own (about one a second) weigh little.
	clusterCountRequests = 300
	clusterCountRenders  = 20
	// The cards of the render runs: small tiles at device scale 1.
	clusterCardW, clusterCardH = 600, 315
	// clusterLogFile receives up's and down's output, in the report
	// directory; the parts' logs go beside it as cluster-<part>.log.
	clusterLogFile = "cluster.log"
)

// The origins' histograms the notes read.
const (
	metricOriginDuration = "pictor_origin_http_request_duration_seconds"
	metricRenderDuration = "pictor_render_duration_seconds"
)

// clusterResult names the result of one measurement on one side.
func clusterResult(what, side string) string { return "cluster/" + what + "-" + side }

func clusterScenario() Scenario {
	return Scenario{
		Name: "cluster",
		About: fmt.Sprintf("the embedded default (the harness's `pictor serve`, pebble) against a cluster on the same machine, "+
			"deploy/cluster.sh's two edges and two origins on PostgreSQL and S3 (versitygw) run with the same binary; requests go "+
			"to the cluster's edges in turn, as behind a load balancer (a first GET to the edge after the creating one). "+
			"Three measurements, each interleaved in --rounds rounds of --duration in total per side: "+
			"create, POST /v1/image of one HTML card already created, with dedupe_duration_s %d (a dedupe hit: no render, "+
			"checked by its id and x-renders-consumed: 0), 1 client; read, GET /v1/images?count=1 (the image records' JSON: the "+
			"API has no single-record JSON endpoint), 1 client; render, distinct %d×%d cards at device scale 1 created and "+
			"first fetched as PNG, 2× --pool-size clients; master, GET of a stored %d×%d PNG master straight from the origins in "+
			"turn (past the edges' caches: a blob store read each time, files on the embedded side, S3 on the cluster's), "+
			"1 client. Targets: create and read p50 at most %s above the embedded's; "+
			"renders/s within the noise of the rounds. The notes split the difference: time inside the origins "+
			"(pictor_origin_http_request_duration_seconds), CPU per request by part (edges, origins with Chromium, PostgreSQL "+
			"with its backends, S3), and PostgreSQL transactions per request (pg_stat_database, counted over %d sequential "+
			"requests and %d renders afterwards). Logs: %s and cluster-*.log in the report directory",
			clusterDedupe, clusterCardW, clusterCardH, clusterCardW, clusterCardH, load.FormatLatency(clusterMetadataSlack),
			clusterCountRequests, clusterCountRenders, clusterLogFile),
		NeedsPictor: true,
		Run:         runCluster,
	}
}

// clusterTarget is one side: where its requests go, with which
// credentials, and how to read its CPU and its origins' metrics.
type clusterTarget struct {
	side   string
	bases  []string
	next   atomic.Uint64
	apiID  string
	apiKey string
	client *http.Client
	// origins read the origins' /metrics.
	origins []*pictor.Server
	// cpu returns the CPU each part used so far.
	cpu func() map[string]time.Duration
	// dedupeBody is the create the create runs repeat, dedupeID its image.
	dedupeBody []byte
	dedupeID   string
	// masterPath is the path of the dedupe's image, rendered: the master
	// runs GET it from the origins in turn (nextOrigin).
	masterPath string
	nextOrigin atomic.Uint64
	nonce      string
	cards      atomic.Int64
}

// base returns the address of the next request, the edges in turn.
func (t *clusterTarget) base() string {
	return t.bases[(t.next.Add(1)-1)%uint64(len(t.bases))]
}

// do sends a request to the next edge, with the API credentials if auth.
func (t *clusterTarget) do(ctx context.Context, method, target string, body []byte, auth bool) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.base()+target, r)
	if err != nil {
		return nil, err
	}
	if auth {
		req.SetBasicAuth(t.apiID, t.apiKey)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, target, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer drainBody(resp)
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return nil, fmt.Errorf("%s %s: %s: %s", method, target, resp.Status, strings.TrimSpace(string(b)))
	}
	return resp, nil
}

// create POSTs body to /v1/image and returns the image's id, the path of
// its URL and the credits the request consumed.
func (t *clusterTarget) create(ctx context.Context, body []byte) (id, path, consumed string, err error) {
	resp, err := t.do(ctx, http.MethodPost, "/v1/image", body, true)
	if err != nil {
		return "", "", "", err
	}
	defer drainBody(resp)
	var created struct{ ID, URL string }
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || created.ID == "" {
		return "", "", "", fmt.Errorf("POST /v1/image: answer without an id (%v)", err)
	}
	u, err := url.Parse(created.URL)
	if err != nil || u.Path == "" {
		return "", "", "", fmt.Errorf("POST /v1/image: url %q: %v", created.URL, err)
	}
	return created.ID, u.Path, resp.Header.Get("X-Renders-Consumed"), nil
}

// render creates a distinct card and GETs its PNG, each request to the
// next edge, and checks the PNG is the card's size.
func (t *clusterTarget) render(ctx context.Context) error {
	n := int(t.cards.Add(1))
	body, err := json.Marshal(map[string]any{"html": card.TileHTML(n, clusterCardW, clusterCardH, t.nonce), "device_scale": 1})
	if err != nil {
		return err
	}
	_, path, _, err := t.create(ctx, body)
	if err != nil {
		return err
	}
	resp, err := t.do(ctx, http.MethodGet, path, nil, false)
	if err != nil {
		return err
	}
	defer drainBody(resp)
	if ct := resp.Header.Get("Content-Type"); ct != "image/png" {
		return fmt.Errorf("GET %s: Content-Type %q, want image/png", path, ct)
	}
	head := make([]byte, 24)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if err := card.CheckPNGSize(head, clusterCardW, clusterCardH); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// createOp repeats the first create: every answer must be a dedupe hit.
func (t *clusterTarget) createOp(ctx context.Context, _ int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	start := time.Now()
	id, _, consumed, err := t.create(ctx, t.dedupeBody)
	lat := time.Since(start)
	if err != nil {
		return 0, err
	}
	if id != t.dedupeID || consumed != "0" {
		return 0, fmt.Errorf("POST /v1/image: image %s with x-renders-consumed %q, want a dedupe hit of %s", id, consumed, t.dedupeID)
	}
	return lat, nil
}

// readOp reads the newest image record.
func (t *clusterTarget) readOp(ctx context.Context, _ int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	start := time.Now()
	resp, err := t.do(ctx, http.MethodGet, "/v1/images?count=1", nil, true)
	if err != nil {
		return 0, err
	}
	var page struct {
		Images []struct{ ID string }
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	drainBody(resp)
	lat := time.Since(start)
	if err != nil || len(page.Images) != 1 || page.Images[0].ID == "" {
		return 0, fmt.Errorf("GET /v1/images?count=1: %d images (%v), want 1", len(page.Images), err)
	}
	return lat, nil
}

// masterOp GETs the stored master straight from the next origin, past
// the edges' caches, to its last byte.
func (t *clusterTarget) masterOp(ctx context.Context, _ int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	o := t.origins[(t.nextOrigin.Add(1)-1)%uint64(len(t.origins))]
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.OriginURL+t.masterPath, nil)
	if err != nil {
		return 0, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET origin %s: %w", t.masterPath, err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	lat := time.Since(start)
	switch {
	case err != nil:
		return 0, fmt.Errorf("GET origin %s: %w", t.masterPath, err)
	case resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" || n == 0:
		return 0, fmt.Errorf("GET origin %s: %s, %q, %d bytes; want a PNG", t.masterPath, resp.Status, resp.Header.Get("Content-Type"), n)
	}
	return lat, nil
}

// renderOp times render, from the POST to the PNG's last byte.
func (t *clusterTarget) renderOp(ctx context.Context, _ int) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	start := time.Now()
	if err := t.render(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// drainBody reads what is left of a body and closes it, so the
// connection goes back to the pool.
func drainBody(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<20))
	resp.Body.Close()
}

// originStat sums a histogram's _sum and _count over a side's origins;
// labels, if any, are as the exposition writes them ({route="..."}).
func (t *clusterTarget) originStat(ctx context.Context, metric, labels string) (stat, error) {
	var s stat
	sum, count := metric+"_sum"+labels, metric+"_count"+labels
	for _, o := range t.origins {
		v, err := o.OriginMetrics(ctx, sum, count)
		if err != nil {
			return stat{}, err
		}
		s.Seconds += v[sum]
		s.N += v[count]
	}
	return s, nil
}

// clusterRun is one measurement of the scenario.
type clusterRun struct {
	what, unit string
	clients    int
	op         func(*clusterTarget) load.Op
	// metric{labels} is the origins' histogram whose mean the notes give:
	// the route's time inside the origin, or a render's in its tab.
	metric, labels string
}

// clusterSide is what a measurement saw on one side.
type clusterSide struct {
	// cpu is the CPU each part used during the side's slices.
	cpu map[string]time.Duration
	// origin is the metric's observations during the run.
	origin stat
	// renders counts the origins' renders during the run.
	renders float64
}

func runCluster(ctx context.Context, env *Env) (results []*load.Result, err error) {
	cfg := env.Config
	log, err := os.Create(filepath.Join(cfg.OutDir, clusterLogFile))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	env.Progress.Notef("starting the cluster: %s up, PICTOR_BIN=%s", cfg.ClusterScript, cfg.Pictor)
	cl, err := cluster.Up(ctx, cfg.ClusterScript, cfg.Pictor, cfg.OutDir, log)
	if err != nil {
		return nil, err
	}
	env.Progress.Notef("cluster up in %s (should the harness die: %s down --dir %s)", cl.Dir, cfg.ClusterScript, cl.Dir)
	defer func() {
		env.Progress.Notef("stopping the cluster: %s down", cfg.ClusterScript)
		err = errors.Join(err, cl.Down())
	}()
	client := pictor.NewLoopbackClient()
	defer client.CloseIdleConnections()

	nonce := rand.Text()[:8]
	emb := &clusterTarget{side: sideEmbedded, bases: []string{env.Pictor.URL}, apiID: env.Pictor.APIID, apiKey: env.Pictor.APIKey,
		client: env.Pictor.Client, origins: []*pictor.Server{env.Pictor}, nonce: nonce + "-" + sideEmbedded,
		cpu: func() map[string]time.Duration { return map[string]time.Duration{"serve": env.Pictor.CPU()} }}
	clu := &clusterTarget{side: sideCluster, bases: cl.Edges, apiID: cl.APIID, apiKey: cl.APIKey, client: client,
		nonce: nonce + "-" + sideCluster, cpu: cl.CPU}
	for _, o := range cl.Origins {
		clu.origins = append(clu.origins, &pictor.Server{OriginURL: o, Client: client})
	}
	targets := []*clusterTarget{emb, clu}
	if err := warmCluster(ctx, env, targets, nonce); err != nil {
		return nil, err
	}

	runs := []clusterRun{
		{clusterCreate, "request", 1, func(t *clusterTarget) load.Op { return t.createOp },
			metricOriginDuration, `{route="POST /v1/image"}`},
		{clusterRead, "request", 1, func(t *clusterTarget) load.Op { return t.readOp },
			metricOriginDuration, `{route="GET /v1/images"}`},
		{clusterRender, "render", 2 * cfg.PoolSize, func(t *clusterTarget) load.Op { return t.renderOp },
			metricRenderDuration, ""},
		{clusterMaster, "request", 1, func(t *clusterTarget) load.Op { return t.masterOp },
			metricOriginDuration, `{route="GET /v1/image/{id}"}`},
	}
	seen := map[string][2]clusterSide{}
	for _, run := range runs {
		rs, sides, err := measureCluster(ctx, env, targets, run)
		results = append(results, rs...)
		if err != nil {
			return results, err
		}
		seen[run.what] = sides
	}
	perRequest, err := countTransactions(ctx, env, cl, clu)
	if err != nil {
		return results, err
	}
	find := func(name string) *load.Result {
		for _, r := range results {
			if r.Name == name {
				return r
			}
		}
		return nil
	}
	for _, run := range runs {
		e, c := find(clusterResult(run.what, sideEmbedded)), find(clusterResult(run.what, sideCluster))
		if e == nil || c == nil {
			continue
		}
		sides := seen[run.what]
		e.Note = joinNote(sideNote(run, e, sides[0]), e.Note)
		c.Note = joinNote(differenceNote(run, c, e, sides, perRequest[run.what]), c.Note)
	}
	return results, nil
}

// warmCluster gets both sides ready: renders until every origin's
// Chromium ran, the dedupe's first create and its render, then unmeasured
// creates and reads.
func warmCluster(ctx context.Context, env *Env, targets []*clusterTarget, nonce string) error {
	cfg := env.Config
	for _, t := range targets {
		n := max(cfg.Warmup, 1) * len(t.origins) * len(t.bases)
		w := load.Load{Clients: min(cfg.PoolSize, n), Requests: n}
		if err := warm(ctx, env, clusterResult("render-warm-up", t.side), w, t.renderOp); err != nil {
			return err
		}
		body, err := json.Marshal(map[string]any{"html": card.TileHTML(0, clusterCardW, clusterCardH, nonce+"-dedupe-"+t.side),
			"device_scale": 1, "dedupe_duration_s": clusterDedupe})
		if err != nil {
			return err
		}
		id, path, _, err := t.create(ctx, body)
		if err != nil {
			return fmt.Errorf("%s: the dedupe's first create: %w", t.side, err)
		}
		resp, err := t.do(ctx, http.MethodGet, path, nil, false)
		if err != nil {
			return fmt.Errorf("%s: the dedupe's image: %w", t.side, err)
		}
		drainBody(resp)
		t.dedupeBody, t.dedupeID, t.masterPath = body, id, path
		for _, m := range []struct {
			what string
			op   load.Op
		}{{"create-warm-up", t.createOp}, {"read-warm-up", t.readOp}, {"master-warm-up", t.masterOp}} {
			if err := warm(ctx, env, clusterResult(m.what, t.side), load.Load{Clients: 1, Requests: clusterWarmup}, m.op); err != nil {
				return err
			}
		}
	}
	return nil
}

// warm drives unmeasured requests; any failure ends the scenario.
func warm(ctx context.Context, env *Env, name string, l load.Load, op load.Op) error {
	r, err := load.Drive(ctx, name, "request", l, env.Progress, op)
	if err != nil {
		return err
	}
	if r.Errors > 0 {
		return fmt.Errorf("%s: %d of %d failed, first: %s", name, r.Errors, r.Requests, r.FirstError)
	}
	return nil
}

// measureCluster runs one measurement on both sides, interleaved, and
// returns the embedded's result and the cluster's, with what each side's
// parts and origins did meanwhile.
func measureCluster(ctx context.Context, env *Env, targets []*clusterTarget, run clusterRun) ([]*load.Result, [2]clusterSide, error) {
	cfg := env.Config
	var sides [2]clusterSide
	var before [2]stat
	var rendersBefore [2]float64
	contenders := make([]contender, len(targets))
	for i, t := range targets {
		var err error
		if before[i], err = t.originStat(ctx, run.metric, run.labels); err != nil {
			return nil, sides, err
		}
		r, err := t.originStat(ctx, metricRenderDuration, "")
		if err != nil {
			return nil, sides, err
		}
		rendersBefore[i] = r.N
		sides[i].cpu = map[string]time.Duration{}
		contenders[i] = contender{name: clusterResult(run.what, t.side), op: run.op(t), watch: func() func(*load.Result) {
			start := t.cpu()
			return func(r *load.Result) {
				r.CPU = 0
				for part, d := range t.cpu() {
					sides[i].cpu[part] += d - start[part]
					r.CPU += d - start[part]
				}
			}
		}}
	}
	rs, err := interleave(ctx, env, run.unit, run.clients, cfg.Rounds, cfg.Duration, contenders)
	if err != nil {
		return rs, sides, err
	}
	for i, t := range targets {
		after, err := t.originStat(ctx, run.metric, run.labels)
		if err != nil {
			return rs, sides, err
		}
		sides[i].origin = after.sub(before[i])
		r, err := t.originStat(ctx, metricRenderDuration, "")
		if err != nil {
			return rs, sides, err
		}
		sides[i].renders = r.N - rendersBefore[i]
	}
	return rs, sides, nil
}

// countTransactions counts PostgreSQL's transactions per request of each
// measurement, over sequential requests to the cluster: the count after
// them, once PostgreSQL counted them, less the count before and the idle
// cluster's own over the same time, measured last.
func countTransactions(ctx context.Context, env *Env, cl *cluster.Cluster, t *clusterTarget) (map[string]float64, error) {
	settle := func() error {
		timer := time.NewTimer(cluster.StatsDelay)
		defer timer.Stop()
		select {
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	type phase struct {
		what  string
		n     int
		op    load.Op
		count int64
		took  time.Duration
	}
	phases := []*phase{
		{what: clusterCreate, n: clusterCountRequests, op: t.createOp},
		{what: clusterRead, n: clusterCountRequests, op: t.readOp},
		{what: clusterRender, n: clusterCountRenders, op: t.renderOp},
		{what: clusterMaster, n: clusterCountRequests, op: t.masterOp},
	}
	env.Progress.Notef("counting PostgreSQL's transactions: each count waits %v for PostgreSQL's statistics", cluster.StatsDelay)
	if err := settle(); err != nil {
		return nil, err
	}
	last, err := cl.Transactions(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range phases {
		start := time.Now()
		if err := warm(ctx, env, clusterResult(p.what+"-count", sideCluster), load.Load{Clients: 1, Requests: p.n}, p.op); err != nil {
			return nil, err
		}
		if err := settle(); err != nil {
			return nil, err
		}
		n, err := cl.Transactions(ctx)
		if err != nil {
			return nil, err
		}
		p.count, p.took, last = n-last, time.Since(start), n
	}
	start := time.Now()
	if err := settle(); err != nil {
		return nil, err
	}
	n, err := cl.Transactions(ctx)
	if err != nil {
		return nil, err
	}
	idle := float64(n-last) / time.Since(start).Seconds()
	out := map[string]float64{}
	for _, p := range phases {
		out[p.what] = max(float64(p.count)-idle*p.took.Seconds(), 0) / float64(p.n)
	}
	return out, nil
}

// perRequest divides d over the successful requests of r.
func perRequest(d time.Duration, r *load.Result) time.Duration {
	if ok := r.Requests - r.Errors; ok > 0 {
		return d / time.Duration(ok)
	}
	return 0
}

// cpuNote describes the CPU per request of a side, by part.
func cpuNote(side clusterSide, r *load.Result) string {
	var total time.Duration
	for _, d := range side.cpu {
		total += d
	}
	s := "CPU per " + r.Unit + " " + load.FormatLatency(perRequest(total, r))
	if len(side.cpu) > 1 {
		var parts []string
		for _, p := range cluster.Parts {
			parts = append(parts, p+" "+load.FormatLatency(perRequest(side.cpu[p], r)))
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

// originNote describes the origins' side of a measurement: the mean time
// inside them, or the renders and their mean time in a tab.
func originNote(run clusterRun, side clusterSide, r *load.Result) string {
	if run.what == clusterRender {
		ok := float64(r.Requests - r.Errors)
		if ok == 0 {
			return ""
		}
		return fmt.Sprintf("%.2f renders per image, %s each in a tab on average", side.renders/ok, load.FormatLatency(side.origin.mean()))
	}
	return fmt.Sprintf("%s inside the origin on average (client mean %s)", load.FormatLatency(side.origin.mean()), load.FormatLatency(r.Latency.Mean()))
}

// sideNote is the embedded side's note.
func sideNote(run clusterRun, r *load.Result, side clusterSide) string {
	return originNote(run, side, r) + "; " + cpuNote(side, r)
}

// differenceNote is the cluster side's note: where its difference from
// the embedded default goes.
func differenceNote(run clusterRun, c, e *load.Result, sides [2]clusterSide, transactions float64) string {
	var head string
	if run.what == clusterRender {
		if e.Rate() > 0 {
			head = fmt.Sprintf("%.2f× the embedded's renders/s", c.Rate()/e.Rate())
		}
	} else if c.Latency.Count() > 0 && e.Latency.Count() > 0 {
		d := c.Latency.Quantile(0.5) - e.Latency.Quantile(0.5)
		mean := c.Latency.Mean() - e.Latency.Mean()
		inside := sides[1].origin.mean() - sides[0].origin.mean()
		head = fmt.Sprintf("p50 %s over the embedded's; mean %s, of which inside the origins %s and in the edges and hops %s",
			deltaLatency(d), deltaLatency(mean), deltaLatency(inside), deltaLatency(mean-inside))
	}
	unit := "request"
	if run.what == clusterRender {
		unit = "image created and first fetched"
	}
	return joinNote(head, fmt.Sprintf("%s; %s; PostgreSQL: %.1f transactions per %s (an autocommitted statement is one round trip, "+
		"an explicit transaction at least three)", originNote(run, sides[1], c), cpuNote(sides[1], c), transactions, unit))
}

// deltaLatency formats a difference with its sign, + included.
func deltaLatency(d time.Duration) string {
	if d < 0 {
		return signedLatency(d)
	}
	return "+" + signedLatency(d)
}

// clusterChecks are issue 18's targets for a cluster on the machine of
// the embedded default: the metadata path (a dedupe-hit create, a record
// read) at most clusterMetadataSlack slower at the median, and as many
// renders per second within the noise of the rounds.
func clusterChecks() []Check {
	return []Check{
		latencyDeltaAtMost(clusterResult(clusterCreate, sideCluster), clusterResult(clusterCreate, sideEmbedded), 0.50, clusterMetadataSlack),
		latencyDeltaAtMost(clusterResult(clusterRead, sideCluster), clusterResult(clusterRead, sideEmbedded), 0.50, clusterMetadataSlack),
		rateWithinNoise(clusterResult(clusterRender, sideCluster), clusterResult(clusterRender, sideEmbedded)),
	}
}

// latencyDeltaAtMost checks the quantile q of a result's latency exceeds
// the baseline's by at most slack.
func latencyDeltaAtMost(name, baseline string, q float64, slack time.Duration) Check {
	pname := quantileName(q)
	return quantileVersus(fmt.Sprintf("%s %s ≤ %s's + %s", name, pname, baseline, load.FormatLatency(slack)), name, baseline, q,
		func(v, bv time.Duration) (string, bool) {
			return fmt.Sprintf("%s (%s %s − %s)", deltaLatency(v-bv), pname, load.FormatLatency(v), load.FormatLatency(bv)), v-bv <= slack
		})
}

// rateWithinNoise checks a result's rate is at least the baseline's less
// the noise: the largest spread of either's rates per round (the
// difference between its fastest and slowest round over its rate).
func rateWithinNoise(name, baseline string) Check {
	return versusCheck(fmt.Sprintf("%s throughput within the noise of %s's", name, baseline), name, baseline,
		func(r, b *load.Result) (string, bool) {
			if b.Rate() == 0 {
				return fmt.Sprintf("%s had no successful requests", b.Name), false
			}
			ratio := r.Rate() / b.Rate()
			m := fmt.Sprintf("%.2f× (%s %ss/s ÷ %s %ss/s)", ratio, load.FormatRate(r.Rate()), r.Unit, load.FormatRate(b.Rate()), b.Unit)
			if len(r.Rounds) < 2 || len(b.Rounds) < 2 {
				return m + "; one round: no noise measured", ratio >= 1
			}
			noise := max(roundSpread(r), roundSpread(b))
			return fmt.Sprintf("%s; rounds spread by up to %.0f %%", m, 100*noise), ratio >= 1-noise
		})
}

// roundSpread is the difference between r's fastest and slowest round
// over its rate.
func roundSpread(r *load.Result) float64 {
	if r.Rate() == 0 {
		return 0
	}
	return (slices.Max(r.Rounds) - slices.Min(r.Rounds)) / r.Rate()
}
