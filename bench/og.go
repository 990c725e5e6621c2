package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"html"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/pictor"
)

// The OG scenarios: automatic Open Graph images, GET
// /v1/og/{domain_id}/{path}, of pages on a site the harness serves on
// loopback, under an html_css configuration created once per scenario.
// The origin reads a page's head, renders the page at 1200×630, scale 1,
// and the edge fits that image to the crawler's platform and caches it.
const (
	// ogUserAgent is the crawler the requests come from: the edge looks
	// its platform up and serves ogWidth×ogHeight, Twitter's size.
	ogUserAgent       = "Twitterbot/1.0"
	ogWidth, ogHeight = 1200, 600
	// ogHotWarmup is og-hot's unmeasured GETs on each server, as
	// hot-image's.
	ogHotWarmup = hotWarmup
	// ogRenderBudget is serve's --og-render-budget: the default, 60 new
	// renders a minute per configuration, would answer og-first's
	// requests past the 60th 503.
	ogRenderBudget = 100000
	// ogReaderAgent is in the User-Agent the origin reads a page's head
	// with; the render's own loads of the page come from Chromium.
	ogReaderAgent = "PictorOG"
)

// ogServeFlags are the serve flags of both OG scenarios, which then
// share a server: the site is on loopback, and og-first renders more
// than the default budget allows.
var ogServeFlags = []string{"--allow-private-urls", "--og-render-budget", strconv.Itoa(ogRenderBudget)}

func ogHotScenario() Scenario {
	return ogScenario("og-hot", fmt.Sprintf("one hot automatic OG image (GET /v1/og/<domain_id>/p/hot, User-Agent %s: a %d×%d PNG the edge "+
		"fitted from the origin's 1200×630 render of a page on a loopback site the harness serves) in the edge's cache, after a warm-up "+
		"request that rendered and cached it, versus Debian's nginx serving the same bytes from a file (as hot-image); "+
		"--edge-clients keep-alive connections, interleaved in rounds of at most 2 s (more than --rounds when needed)",
		ogUserAgent, ogWidth, ogHeight), runOGHot)
}

func ogFirstScenario() Scenario {
	return ogScenario("og-first", fmt.Sprintf("the first request of a new page's automatic OG image (GET /v1/og/<domain_id>/p/1, /p/2, …, "+
		"every path new, User-Agent %s) on a loopback site the harness serves (a 1200×630 card page with <title> and og:title): latency "+
		"from sending the GET to the first byte of the PNG, 1 client, sequential, after --warmup such requests; the configuration is "+
		"created once beforehand. The note splits the mean into the origin's page read and render (from its /metrics: "+
		"pictor_ogpage_fetch_duration_seconds, pictor_render_duration_seconds) and the rest, the service's overhead",
		ogUserAgent), runOGFirst)
}

// ogScenario is an OG scenario on a server run with ogServeFlags, which
// about ends by naming.
func ogScenario(name, about string, run func(context.Context, *Env) ([]*load.Result, error)) Scenario {
	return Scenario{
		Name:        name,
		About:       about + "; serve runs with " + strings.Join(ogServeFlags, " "),
		NeedsPictor: true,
		ServeFlags:  ogServeFlags,
		Run:         run,
	}
}

// ogSite is the site whose pages get OG images: every path answers a
// 1200×630 card page (the render-card flat card) with a <title> and
// og:title naming the path.
type ogSite struct {
	// URL is its base URL, the configuration's base_url.
	URL string
	// domain is the configuration's domain_id.
	domain string
	nonce  string
	srv    *http.Server
	done   chan error
	// reads counts the origin's reads of a page's head; loads the other
	// GETs, the render's own.
	reads, loads atomic.Int64
}

// startOGSite serves the site on a free loopback port, under a fresh
// nonce that makes its pages differ from those of other runs, and creates
// its configuration on p.
func startOGSite(ctx context.Context, p *pictor.Server) (*ogSite, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the OG site: %w", err)
	}
	s := &ogSite{URL: "http://" + ln.Addr().String(), nonce: rand.Text()[:8], done: make(chan error, 1)}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { s.done <- s.srv.Serve(ln) }()
	c, err := p.CreateOGConfig(ctx, s.URL)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("create the OG configuration: %w", err), s.Close())
	}
	s.domain = c.DomainID
	return s, nil
}

func (s *ogSite) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/favicon.ico" {
		http.NotFound(w, r)
		return
	}
	if strings.Contains(r.UserAgent(), ogReaderAgent) {
		s.reads.Add(1)
	} else {
		s.loads.Add(1)
	}
	b := []byte(ogPage(r.URL.Path, s.nonce))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
}

// ogPage is the site's page at path: the flat benchmark card, whose hue
// and number follow the path.
func ogPage(path, nonce string) string {
	title := html.EscapeString("Pictor OG benchmark " + path)
	return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + title + "</title>\n" +
		"<meta property=\"og:title\" content=\"" + title + "\">\n" +
		"<meta property=\"og:description\" content=\"A page of the harness's site, " + html.EscapeString(nonce) + "\">\n" +
		"</head><body>\n" + card.FlatHTML(int(crc32.ChecksumIEEE([]byte(path))%100000), nonce+" "+path) + "</body></html>\n"
}

// Close stops the site.
func (s *ogSite) Close() error {
	err := s.srv.Close()
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// siteNote says what the site served: reads of a page's head by the
// origin, and other loads.
func siteNote(reads, loads int64) string {
	return fmt.Sprintf("the site served %d page reads (User-Agent …%s…) and %d other loads (the renders')", reads, ogReaderAgent, loads)
}

// ogTarget is the edge path of the OG image of page path (with its
// leading slash) under the configuration domain.
func ogTarget(domain, path string) string { return "/v1/og/" + domain + path }

// checkOGImage verifies an answer is the PNG of the crawler's size.
func checkOGImage(target string, body []byte, contentType string) error {
	if contentType != "image/png" {
		return fmt.Errorf("GET %s: Content-Type %q, want image/png", target, contentType)
	}
	if err := card.CheckPNGSize(body, ogWidth, ogHeight); err != nil {
		return fmt.Errorf("GET %s (User-Agent %s): %w", target, ogUserAgent, err)
	}
	return nil
}

func runOGHot(ctx context.Context, env *Env) ([]*load.Result, error) {
	return ogHot(ctx, env, startNginxStatic, ogHotWarmup)
}

// ogHot runs og-hot against the static server start starts, after warmup
// unmeasured requests to each.
func ogHot(ctx context.Context, env *Env, start startStatic, warmup int) (results []*load.Result, err error) {
	site, err := startOGSite(ctx, env.Pictor)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, site.Close()) }()
	target := ogTarget(site.domain, "/p/hot")
	// The warm-up request renders the page and fills the edge's cache;
	// the second must be the same bytes, from the cache.
	body, ct, err := env.Pictor.FetchAs(ctx, target, ogUserAgent)
	if err != nil {
		return nil, fmt.Errorf("the warm-up request: %w", err)
	}
	if err := checkOGImage(target, body, ct); err != nil {
		return nil, err
	}
	again, _, err := env.Pictor.FetchAs(ctx, target, ogUserAgent)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, body) {
		return nil, fmt.Errorf("GET %s: a second request answered other bytes (%d, first %d)", target, len(again), len(body))
	}

	hot, err := startHotPair(ctx, env, start, target, "og.png", body, ct)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, hot.close()) }()
	// The crawler's User-Agent on both sides: the edge answers by its
	// platform, and the requests are the same size.
	hot.pictor.setUserAgent(ogUserAgent)
	hot.baseline.setUserAgent(ogUserAgent)
	results, counted, err := versusNginxCounting(ctx, env, "og-hot", warmup, hot.pictor, hot.baseline, hot.static.cpu, scrapeOG)
	if err != nil {
		return results, err
	}
	results[0].Note = joinNote(fmt.Sprintf("%d-byte %d×%d PNG, User-Agent %s; %v; connections opened %d; %s",
		len(body), ogWidth, ogHeight, ogUserAgent, counted, hot.pictor.dials.Load(), siteNote(site.reads.Load(), site.loads.Load())), results[0].Note)
	results[1].Note = joinNote(hot.baselineNote(), results[1].Note)
	if counted.Misses > 0 || counted.Stale > 0 {
		return results, fmt.Errorf("og-hot: the hot image was not served fresh from the edge's cache throughout (%v)", counted)
	}
	return results, nil
}

func runOGFirst(ctx context.Context, env *Env) (results []*load.Result, err error) {
	cfg := env.Config
	site, err := startOGSite(ctx, env.Pictor)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, site.Close()) }()
	// first requests the image of a page never asked for: /<dir>/1, /<dir>/2, ...
	first := func(dir string) load.Op {
		var seq atomic.Int64
		return func(ctx context.Context, _ int) (time.Duration, error) {
			target := ogTarget(site.domain, fmt.Sprintf("/%s/%d", dir, seq.Add(1)))
			lat, body, ct, err := env.Pictor.FetchTimed(ctx, target, ogUserAgent)
			if err != nil {
				return 0, err
			}
			return lat, checkOGImage(target, body, ct)
		}
	}
	if cfg.Warmup > 0 {
		w, err := load.Drive(ctx, "og-first/warm-up", "page", load.Load{Clients: 1, Requests: cfg.Warmup}, env.Progress, first("warm"))
		if err != nil {
			return nil, fmt.Errorf("og-first warm-up: %w", err)
		}
		if w.Errors > 0 {
			return nil, fmt.Errorf("og-first warm-up: %d of %d requests failed, first: %s", w.Errors, w.Requests, w.FirstError)
		}
	}
	before, err := scrapeOGSplit(ctx, env.Pictor)
	if err != nil {
		return nil, err
	}
	reads, loads := site.reads.Load(), site.loads.Load()
	cpu := env.Pictor.CPU()
	r, err := load.Drive(ctx, "og-first/sequential", "page", load.Load{Clients: 1, Duration: cfg.Duration}, env.Progress, first("p"))
	if r == nil {
		return nil, err
	}
	r.CPU = env.Pictor.CPU() - cpu
	results = append(results, r)
	if err != nil {
		return results, err
	}
	after, err := scrapeOGSplit(ctx, env.Pictor)
	if err != nil {
		return results, err
	}
	r.Note = joinNote(after.sub(before).note(r), siteNote(site.reads.Load()-reads, site.loads.Load()-loads))
	return results, nil
}

// The OG counters of the edge (edge/og.go), read from its /metrics.
const (
	metricOGFresh  = `pictor_edge_og_hits_total{state="fresh"}`
	metricOGStale  = `pictor_edge_og_hits_total{state="stale"}`
	metricOGMisses = "pictor_edge_og_misses_total"
)

// ogCounters are the edge's OG cache counters at one moment.
type ogCounters struct {
	Fresh, Stale, Misses float64
}

func (c ogCounters) sub(o ogCounters) ogCounters {
	return ogCounters{c.Fresh - o.Fresh, c.Stale - o.Stale, c.Misses - o.Misses}
}

// String describes the counts as the report's notes do.
func (c ogCounters) String() string {
	pct := shareOf(c.Fresh + c.Stale + c.Misses)
	return fmt.Sprintf("edge OG cache: fresh hits %.0f (%s), stale hits %.0f (%s), misses %.0f (%s)",
		c.Fresh, pct(c.Fresh), c.Stale, pct(c.Stale), c.Misses, pct(c.Misses))
}

// scrapeOG reads the OG cache counters from the edge's /metrics.
func scrapeOG(ctx context.Context, p *pictor.Server) (ogCounters, error) {
	vals, err := p.Metrics(ctx, metricOGFresh, metricOGStale, metricOGMisses)
	if err != nil {
		return ogCounters{}, err
	}
	return ogCounters{vals[metricOGFresh], vals[metricOGStale], vals[metricOGMisses]}, nil
}

// The origin's histograms og-first splits its time with (origin/ogpage,
// origin/render), read from the origin's /metrics.
const (
	metricOGReadSum       = "pictor_ogpage_fetch_duration_seconds_sum"
	metricOGReadCount     = "pictor_ogpage_fetch_duration_seconds_count"
	metricRenderSum       = "pictor_render_duration_seconds_sum"
	metricRenderCount     = "pictor_render_duration_seconds_count"
	metricRenderWaitSum   = "pictor_render_queue_wait_seconds_sum"
	metricRenderWaitCount = "pictor_render_queue_wait_seconds_count"
	// The origin's time to answer the edge's OG requests, per route; the
	// sample appears with the route's first request.
	metricOGAnswerSum   = `pictor_origin_http_request_duration_seconds_sum{route="GET /v1/og/{domain_id}/{path...}"}`
	metricOGAnswerCount = `pictor_origin_http_request_duration_seconds_count{route="GET /v1/og/{domain_id}/{path...}"}`
)

// stat is a histogram's count and sum of seconds.
type stat struct{ N, Seconds float64 }

func (s stat) sub(o stat) stat { return stat{s.N - o.N, s.Seconds - o.Seconds} }

// mean returns the mean observation; 0 for none.
func (s stat) mean() time.Duration {
	if s.N <= 0 {
		return 0
	}
	return time.Duration(math.Round(s.Seconds / s.N * float64(time.Second)))
}

// ogSplit is where the time of OG first requests goes, cumulated.
type ogSplit struct {
	// Read is the origin's page reads (fetch and head parse).
	Read stat
	// Render is the renders' time in a tab; Wait their time waiting for
	// one.
	Render, Wait stat
	// Answer is the origin's answers to the edge, read and render
	// included; none when the origin does not count them.
	Answer stat
	// Fit is the edge's fits of the origin's image to the platform's size
	// (its transform histogram).
	Fit stat
}

func (s ogSplit) sub(o ogSplit) ogSplit {
	return ogSplit{s.Read.sub(o.Read), s.Render.sub(o.Render), s.Wait.sub(o.Wait), s.Answer.sub(o.Answer), s.Fit.sub(o.Fit)}
}

// scrapeOGSplit reads the split's histograms from the origin's and the
// edge's /metrics.
func scrapeOGSplit(ctx context.Context, p *pictor.Server) (ogSplit, error) {
	o, err := p.OriginMetrics(ctx, metricOGReadSum, metricOGReadCount, metricRenderSum, metricRenderCount, metricRenderWaitSum, metricRenderWaitCount)
	if err != nil {
		return ogSplit{}, err
	}
	a, err := p.OriginMetrics(ctx, metricOGAnswerSum, metricOGAnswerCount)
	if errors.Is(err, pictor.ErrMetricMissing) {
		a, err = map[string]float64{}, nil // no OG request answered yet: zero
	}
	if err != nil {
		return ogSplit{}, err
	}
	e, err := p.Metrics(ctx, metricTransformSum, metricTransformCount)
	if err != nil {
		return ogSplit{}, err
	}
	return ogSplit{
		Read:   stat{o[metricOGReadCount], o[metricOGReadSum]},
		Render: stat{o[metricRenderCount], o[metricRenderSum]},
		Wait:   stat{o[metricRenderWaitCount], o[metricRenderWaitSum]},
		Answer: stat{a[metricOGAnswerCount], a[metricOGAnswerSum]},
		Fit:    stat{e[metricTransformCount], e[metricTransformSum]},
	}, nil
}

// note splits the mean latency of r, a run of first requests, into the
// mean page read, the mean render and the rest: the service's overhead
// (queueing, the origin's bookkeeping, the edge's fill and fit, HTTP),
// itself split, when the origin times its answers, into the origin's
// share and the edge's.
func (s ogSplit) note(r *load.Result) string {
	if r.Latency.Count() == 0 {
		return ""
	}
	mean := r.Latency.Mean()
	read, render := s.Read.mean(), s.Render.mean()
	fit := fmt.Sprintf("the edge's fit to %d×%d %s over %.0f fits", ogWidth, ogHeight, load.FormatLatency(s.Fit.mean()), s.Fit.N)
	wait := "render queue wait " + load.FormatLatency(s.Wait.mean())
	var parts string
	if answer := s.Answer.mean(); s.Answer.N > 0 {
		parts = fmt.Sprintf("the origin's %s beyond read and render (it answered the edge in %s on average over %.0f answers; %s) "+
			"and the edge's and HTTP's %s (%s)",
			signedLatency(answer-read-render), load.FormatLatency(answer), s.Answer.N, wait, signedLatency(mean-answer), fit)
	} else {
		parts = "of which " + wait + ", " + fit
	}
	return fmt.Sprintf("mean first request %s = page read %s (%.0f reads) + render %s in a tab (%.0f renders) + service overhead %s: %s; %d first requests",
		load.FormatLatency(mean), load.FormatLatency(read), s.Read.N, load.FormatLatency(render), s.Render.N,
		signedLatency(mean-read-render), parts, r.Latency.Count())
}

// signedLatency is load.FormatLatency of a difference, which may be
// negative.
func signedLatency(d time.Duration) string {
	if d < 0 {
		return "−" + load.FormatLatency(-d)
	}
	return load.FormatLatency(d)
}
