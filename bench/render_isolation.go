package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/embedcard"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/pictor"
	"github.com/pictorhq/pictor/bench/proc"
)

// The configurations of `pictor serve` the scenario compares; each is the
// suffix of its results' names and the tag of its embed cards.
const (
	// isolationDefault is Pictor as it ships: Chromium's sandbox on, site
	// isolation off.
	isolationDefault = "default"
	// isolationIsolated turns site isolation on (--chromium-site-isolation),
	// the sandbox still on.
	isolationIsolated = "isolated"
	// isolationUnsandboxed turns the sandbox off (--chromium-no-sandbox),
	// site isolation still off: Pictor before the sandbox.
	isolationUnsandboxed = "unsandboxed"
)

// The pages the scenario renders on every server: the render-card card
// sent as HTML, and the embed card with its cross-site iframes.
const (
	isolationCard  = "card"
	isolationEmbed = "embed"
)

// isolationResult names the result of page on the configuration config.
func isolationResult(page, config string) string {
	return "render-isolation/" + page + "-" + config
}

// isolationCost is what one Chromium setting costs: the configuration with
// it divided by the one without it, the other setting alike in both.
type isolationCost struct {
	// name names the setting in notes ("site isolation's cost").
	name string
	// what names it in check names, with its flag.
	what string
	// with and without are the configurations divided.
	with, without string
	// baseline names without in check names.
	baseline string
}

var (
	// siteIsolationCost is isolated ÷ default, both sandboxed.
	siteIsolationCost = isolationCost{name: "site isolation", what: "site isolation (--chromium-site-isolation)",
		with: isolationIsolated, without: isolationDefault, baseline: "default"}
	// sandboxCost is default ÷ unsandboxed, neither isolated.
	sandboxCost = isolationCost{name: "the sandbox", what: "sandbox (on by default)",
		with: isolationDefault, without: isolationUnsandboxed, baseline: "unsandboxed (--chromium-no-sandbox)"}
	isolationCosts = []isolationCost{siteIsolationCost, sandboxCost}
)

func renderIsolationScenario() Scenario {
	return Scenario{
		Name: "render-isolation",
		About: "what Chromium's sandbox and site isolation each cost: POST /v1/image → first PNG byte, 1 client, on three servers the scenario starts, " +
			"all with --allow-private-urls and --render-tabs set to --pool-size: *-default as Pictor ships (sandbox on, site isolation off), " +
			"*-isolated with --chromium-site-isolation (both on) and *-unsandboxed with --chromium-no-sandbox (both off), " +
			"interleaved in --rounds rounds of --duration in total per server, for two pages: card, the render-card card sent as HTML, " +
			"and embed, a 1200×630 card at device scale 2 rendered by URL from 127.0.0.1 with three iframes of posts from 127.0.0.2, .3 and .4 " +
			"(one site each, as social embeds are), served by the harness. Site isolation's cost is isolated ÷ default, the sandbox's " +
			"default ÷ unsandboxed, in the notes for p50, p95, CPU per render and peak memory (PSS of the server's process tree, " +
			"sampled every second while it is under load, less its edge memory cache). A server whose flag the binary lacks is left out; " +
			"the servers' logs are render-isolation-*.log in the report directory",
		// It starts its servers itself: the runner's server would be one
		// more Chromium idling beside them, and the runner checks serve
		// flags with pictor.ServeHasFlag, which misses boolean ones.
		Run: runRenderIsolation,
	}
}

// isolationConfig is a configuration of `pictor serve` the scenario runs.
type isolationConfig struct {
	name  string // isolationDefault, isolationIsolated or isolationUnsandboxed
	flags []string
}

// isolationConfigs returns the configurations a binary whose serve has
// the flags names can run, each with common first, and what to say of
// the binary: why a configuration is left out, or how it was reached.
func isolationConfigs(binary string, names map[string]bool, common []string) (configs []isolationConfig, notes []string) {
	isolationOn, isolationOff := []string{"--chromium-site-isolation"}, []string(nil)
	canIsolate := names["chromium-site-isolation"]
	if !canIsolate && names["chromium-no-site-isolation"] {
		// Binaries from before site isolation went off by default.
		isolationOn, isolationOff, canIsolate = nil, []string{"--chromium-no-site-isolation"}, true
		notes = append(notes, binary+" serve has --chromium-no-site-isolation, not --chromium-site-isolation: "+
			"its site isolation is on by default, so the default and unsandboxed servers get --chromium-no-site-isolation and the isolated one no flag")
	}
	with := func(flags ...string) []string { return slices.Concat(common, flags, isolationOff) }
	configs = append(configs, isolationConfig{isolationDefault, with()})
	if canIsolate {
		configs = append(configs, isolationConfig{isolationIsolated, slices.Concat(common, isolationOn)})
	} else {
		notes = append(notes, binary+" serve has no --chromium-site-isolation: no isolated server, site isolation's cost is not measured")
	}
	if names["chromium-no-sandbox"] {
		configs = append(configs, isolationConfig{isolationUnsandboxed, with("--chromium-no-sandbox")})
	} else {
		notes = append(notes, binary+" serve has no --chromium-no-sandbox: no unsandboxed server, the sandbox's cost is not measured "+
			"(the default server runs Chromium as that binary does)")
	}
	return configs, notes
}

// isolationServer is one `pictor serve` of the scenario.
type isolationServer struct {
	// config is its configuration's name, the suffix of its results' names.
	config string
	p      *pictor.Server
	// pid is the server's process id, the root of the tree whose memory
	// is watched.
	pid int
	log *os.File
	// renders counts its successful renders, for the memory samples.
	renders atomic.Int64
}

// isolationPage is one page the scenario renders on every server.
type isolationPage struct {
	name string
	// render renders page number n, unique with nonce, on s.
	render func(ctx context.Context, s *isolationServer, n int, nonce string) (time.Duration, error)
}

func runRenderIsolation(ctx context.Context, env *Env) (results []*load.Result, err error) {
	cfg := env.Config
	if _, err := os.Stat(cfg.Pictor); err != nil {
		return nil, fmt.Errorf("--pictor %s: %w (build it first: make build)", cfg.Pictor, err)
	}
	flags := pictor.ServeFlags(ctx, cfg.Pictor)
	if !flags["allow-private-urls"] {
		return nil, fmt.Errorf("%s serve has no --allow-private-urls, which the embed card on loopback needs", cfg.Pictor)
	}
	// Every server may reach loopback, where the embed card lives; they
	// then differ by the flags under test only.
	common := []string{"--allow-private-urls"}
	if flags["render-tabs"] {
		common = append(common, "--render-tabs", strconv.Itoa(cfg.PoolSize))
	}
	configs, flagNotes := isolationConfigs(cfg.Pictor, flags, common)
	for _, n := range flagNotes {
		env.Progress.Notef("%s", n)
	}

	sites, err := embedcard.Start(embedcard.Hosts)
	if err != nil {
		return nil, fmt.Errorf("start the embed card's sites: %w", err)
	}
	defer func() { err = errors.Join(err, sites.Close()) }()

	var servers []*isolationServer
	defer func() {
		for _, s := range servers {
			err = errors.Join(err, s.stop())
		}
	}()
	for _, c := range configs {
		s, err := startIsolationServer(ctx, env, c.name, c.flags)
		if err != nil {
			return nil, err
		}
		servers = append(servers, s)
	}

	watch := watchMemory(ctx, servers)
	defer watch.stop()
	runID := rand.Text()[:8]
	var seq atomic.Int64
	pages := []isolationPage{
		{isolationCard, func(ctx context.Context, s *isolationServer, n int, nonce string) (time.Duration, error) {
			return s.p.RenderCard(ctx, card.HTML(n, nonce))
		}},
		{isolationEmbed, func(ctx context.Context, s *isolationServer, n int, nonce string) (time.Duration, error) {
			return s.p.RenderPage(ctx, sites.CardURL(s.config, n, nonce))
		}},
	}
	for _, page := range pages {
		contenders := make([]contender, len(servers))
		for i, s := range servers {
			op := func(ctx context.Context, _ int) (time.Duration, error) {
				watch.load(i)
				n := int(seq.Add(1))
				lat, err := page.render(ctx, s, n, fmt.Sprintf("%s-%06d", runID, n))
				if err == nil {
					s.renders.Add(1)
				}
				return lat, err
			}
			contenders[i] = contender{name: isolationResult(page.name, s.config), op: op, cpu: s.p.CPU}
			if err := warmUp(ctx, env, contenders[i].name+"-warm-up", op); err != nil {
				return results, err
			}
		}
		watch.take() // the page's samples start now
		served := sites.Counts()
		rs, err := interleave(ctx, env, "render", 1, cfg.Rounds, cfg.Duration, contenders)
		samples := watch.take()
		served = sites.Counts().Sub(served)
		byConfig := map[string]*load.Result{}
		for _, r := range rs {
			i := slices.IndexFunc(contenders, func(c contender) bool { return c.name == r.Name })
			byConfig[servers[i].config] = r
			r.Memory = samples[i]
			r.Note = joinNote(r.Note, memoryNote(r.Memory))
			if page.name == isolationEmbed {
				r.Note = joinNote(r.Note, served.Note(servers[i].config))
			}
		}
		for _, c := range isolationCosts {
			if with, without := byConfig[c.with], byConfig[c.without]; with != nil && without != nil {
				with.Note = joinNote(with.Note, c.note(with, without))
			}
		}
		results = append(results, rs...)
		if err != nil {
			return results, err
		}
	}
	if i := slices.IndexFunc(results, func(r *load.Result) bool { return r.Name == isolationResult(isolationCard, isolationDefault) }); i >= 0 {
		results[i].Note = joinNote(results[i].Note, strings.Join(flagNotes, "; "))
	}
	if i := slices.IndexFunc(results, func(r *load.Result) bool { return r.Name == isolationResult(isolationEmbed, isolationDefault) }); i >= 0 {
		results[i].Note = joinNote(results[i].Note, scenarioPeakNote(servers, results))
	}
	return results, watch.err()
}

// startIsolationServer starts `pictor serve` with flags, its log in the
// report directory.
func startIsolationServer(ctx context.Context, env *Env, config string, flags []string) (*isolationServer, error) {
	cfg := env.Config
	log, err := os.Create(filepath.Join(cfg.OutDir, "render-isolation-"+config+".log"))
	if err != nil {
		return nil, fmt.Errorf("--out %s: %w", cfg.OutDir, err)
	}
	env.Progress.Notef("starting %s serve %s on a fresh data directory (%s configuration)", cfg.Pictor, strings.Join(flags, " "), config)
	p, err := pictor.Start(ctx, cfg.Pictor, flags, log, cfg.StartTimeout)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("%s configuration: %w", config, err)
	}
	return &isolationServer{config: config, p: p, pid: p.PID(), log: log}, nil
}

// stop stops the server, then closes its log.
func (s *isolationServer) stop() error {
	err := s.p.Stop(context.Background())
	if err != nil {
		err = fmt.Errorf("%s configuration: %w", s.config, err)
	}
	return errors.Join(err, s.log.Close())
}

// warmUp runs the warm-up renders of render-card with op, unmeasured: any
// failure ends the scenario.
func warmUp(ctx context.Context, env *Env, name string, op load.Op) error {
	cfg := env.Config
	if cfg.Warmup == 0 {
		return nil
	}
	warm := load.Load{Clients: min(cfg.PoolSize, cfg.Warmup), Requests: cfg.Warmup}
	w, err := load.Drive(ctx, name, "render", warm, env.Progress, op)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if w.Errors > 0 {
		return fmt.Errorf("%s: %d of %d renders failed, first: %s", name, w.Errors, w.Requests, w.FirstError)
	}
	return nil
}

// isolationSampleEvery is how often the scenario reads the memory of the
// server under load. Reading a process tree's memory is not free: the
// kernel walks every mapping of every process, about 60 ms of CPU for a
// Chromium of 15 processes here, taken from the 2 cores the render runs
// on. Every second costs the render less than every half second (the
// soak's rate) and still gives each server 20 samples a page in a 20 s run.
const isolationSampleEvery = time.Second

// memoryWatch samples the memory of the process tree of the server under
// load (see load), and what its edge memory cache holds, every
// isolationSampleEvery until stop; the idle server's memory is read at
// every take. Samples accumulate until take.
type memoryWatch struct {
	servers []*isolationServer
	halt    chan struct{}
	wg      sync.WaitGroup
	// loaded is the index of the server under load, -1 for none.
	loaded atomic.Int32

	mu       sync.Mutex
	samples  [][]load.MemorySample // per server
	firstErr error
}

func watchMemory(ctx context.Context, servers []*isolationServer) *memoryWatch {
	w := &memoryWatch{servers: servers, halt: make(chan struct{}), samples: make([][]load.MemorySample, len(servers))}
	w.loaded.Store(-1)
	w.sample(ctx, -1)
	w.wg.Go(func() {
		tick := time.NewTicker(isolationSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				if i := int(w.loaded.Load()); i >= 0 {
					w.sample(ctx, i)
				}
			case <-w.halt:
				return
			}
		}
	})
	return w
}

// load says server i is the one under load now.
func (w *memoryWatch) load(i int) { w.loaded.Store(int32(i)) }

// sample reads the memory of server only, or of every server when only
// is negative.
func (w *memoryWatch) sample(ctx context.Context, only int) {
	for i, s := range w.servers {
		if only >= 0 && i != only {
			continue
		}
		m := proc.TreeMemory(s.pid)
		l1, err := scrapeL1Bytes(ctx, s.p)
		w.mu.Lock()
		w.samples[i] = append(w.samples[i], load.MemorySample{Renders: int(s.renders.Load()), Memory: m, CacheBytes: l1})
		if err != nil && w.firstErr == nil && ctx.Err() == nil {
			w.firstErr = fmt.Errorf("%s configuration: reading the edge's cache size: %w", s.config, err)
		}
		w.mu.Unlock()
	}
}

// take samples every server once more and returns, per server, the
// samples since the last take (the first since the start), starting
// afresh; no server is under load until load is called again.
func (w *memoryWatch) take() [][]load.MemorySample {
	w.loaded.Store(-1)
	w.sample(context.Background(), -1)
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.samples
	w.samples = make([][]load.MemorySample, len(w.servers))
	return out
}

// stop ends the sampling; stopping twice is harmless.
func (w *memoryWatch) stop() {
	select {
	case <-w.halt:
	default:
		close(w.halt)
	}
	w.wg.Wait()
}

// err returns the first failure to read a cache size.
func (w *memoryWatch) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr
}

// memoryPeak is the most a server held over a run.
type memoryPeak struct {
	// PSS is the highest PSS of the whole tree.
	PSS int64
	// LessCache is the highest PSS less what the edge's memory cache held
	// at that moment: the cache fills with the rendered PNGs, and the
	// faster server renders more of them in the same time.
	LessCache int64
	// Processes is the most processes the tree had.
	Processes int
}

// peakOf returns the peaks of samples; zero for none.
func peakOf(samples []load.MemorySample) memoryPeak {
	var p memoryPeak
	for _, s := range samples {
		p.PSS = max(p.PSS, s.PSS)
		p.LessCache = max(p.LessCache, s.PSS-s.CacheBytes)
		p.Processes = max(p.Processes, s.Processes)
	}
	return p
}

// memoryNote describes a server's memory over a page's runs.
func memoryNote(samples []load.MemorySample) string {
	if len(samples) == 0 {
		return "no memory sample"
	}
	p := peakOf(samples)
	return fmt.Sprintf("server's peak memory (PSS, whole tree) %s, %s less the edge's memory cache, up to %d processes (%d samples)",
		formatMiB(p.PSS), formatMiB(p.LessCache), p.Processes, len(samples))
}

// note gives what c costs a page: the p50, p95, CPU per render and peak
// memory of the run with the setting divided by the run without it.
func (c isolationCost) note(with, without *load.Result) string {
	var parts []string
	if with.Latency.Count() > 0 && without.Latency.Count() > 0 {
		for _, q := range []float64{0.50, 0.95} {
			a, b := with.Latency.Quantile(q), without.Latency.Quantile(q)
			parts = append(parts, fmt.Sprintf("p%g %.2f× (%s ÷ %s)", q*100, a.Seconds()/b.Seconds(), load.FormatLatency(a), load.FormatLatency(b)))
		}
	}
	if a, b := with.CPUPerRequest(), without.CPUPerRequest(); a > 0 && b > 0 {
		parts = append(parts, fmt.Sprintf("CPU per render %.2f× (%s ÷ %s)", a.Seconds()/b.Seconds(), load.FormatLatency(a), load.FormatLatency(b)))
	}
	if a, b := peakOf(with.Memory), peakOf(without.Memory); a.LessCache > 0 && b.LessCache > 0 {
		parts = append(parts, fmt.Sprintf("peak memory less the edge's memory cache %.2f× (%s ÷ %s; whole tree %.2f×, %s ÷ %s)",
			float64(a.LessCache)/float64(b.LessCache), formatMiB(a.LessCache), formatMiB(b.LessCache),
			float64(a.PSS)/float64(b.PSS), formatMiB(a.PSS), formatMiB(b.PSS)))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s's cost, %s ÷ %s: %s", c.name, c.with, c.without, strings.Join(parts, ", "))
}

// scenarioPeakNote gives each server's peak memory over all the pages'
// runs, from results' samples, and what each setting costs of it.
func scenarioPeakNote(servers []*isolationServer, results []*load.Result) string {
	var parts []string
	peaks := map[string]memoryPeak{}
	for _, s := range servers {
		var all []load.MemorySample
		for _, r := range results {
			if strings.HasSuffix(r.Name, "-"+s.config) {
				all = append(all, r.Memory...)
			}
		}
		p := peakOf(all)
		peaks[s.config] = p
		parts = append(parts, fmt.Sprintf("%s %s (%s whole tree)", s.config, formatMiB(p.LessCache), formatMiB(p.PSS)))
	}
	if len(parts) == 0 {
		return ""
	}
	note := "peak memory over all pages, less the edge's memory cache: " + strings.Join(parts, ", ")
	for _, c := range isolationCosts {
		a, okA := peaks[c.with]
		b, okB := peaks[c.without]
		if okA && okB && a.LessCache > 0 && b.LessCache > 0 {
			note += fmt.Sprintf("; %s's cost %.2f× (%s ÷ %s)", c.name, float64(a.LessCache)/float64(b.LessCache), c.with, c.without)
		}
	}
	return note
}

// latencyCheck checks that the setting costs page's render at most factor
// at the quantile q; passing means what means.
func (c isolationCost) latencyCheck(page string, q, factor float64, means string) Check {
	inner := quantileRatioAtMost(isolationResult(page, c.with), isolationResult(page, c.without), q, factor)
	return c.check(fmt.Sprintf("%s p%g ≤ %.2f× %s: %s", pageLabel(page), q*100, factor, c.baseline, means), inner)
}

// memoryCheck checks that the setting costs the server's peak memory,
// less its edge memory cache, over page's runs at most factor; passing
// means what means.
func (c isolationCost) memoryCheck(page string, factor float64, means string) Check {
	inner := peakMemoryRatioAtMost(isolationResult(page, c.with), isolationResult(page, c.without), factor)
	return c.check(fmt.Sprintf("%s peak memory (PSS less the edge's memory cache) ≤ %.2f× %s: %s", pageLabel(page), factor, c.baseline, means), inner)
}

// check names inner after the setting and says which configurations its
// measured ratio divides.
func (c isolationCost) check(what string, inner Check) Check {
	return Check{
		Name: "render-isolation: " + c.what + ", " + what,
		Eval: func(find func(string) *load.Result) (string, bool, bool) {
			m, pass, ok := inner.Eval(find)
			return c.with + " ÷ " + c.without + ": " + m, pass, ok
		},
	}
}

// pageLabel names a page of the scenario in check names.
func pageLabel(page string) string {
	if page == isolationCard {
		return "benchmark card"
	}
	return page + " card"
}

// peakMemoryRatioAtMost checks the peak memory of a result's server, less
// its edge memory cache, is at most factor times the baseline's.
func peakMemoryRatioAtMost(name, baseline string, factor float64) Check {
	return versusCheck(fmt.Sprintf("%s peak memory (PSS less the edge's memory cache) ≤ %g× %s's", name, factor, baseline), name, baseline,
		func(r, b *load.Result) (string, bool) {
			rp, bp := peakOf(r.Memory), peakOf(b.Memory)
			if rp.LessCache <= 0 || bp.LessCache <= 0 {
				return "no memory sample to compare", false
			}
			ratio := float64(rp.LessCache) / float64(bp.LessCache)
			return fmt.Sprintf("%.2f× (%s ÷ %s; whole tree %s ÷ %s, %.2f×)", ratio, formatMiB(rp.LessCache), formatMiB(bp.LessCache),
				formatMiB(rp.PSS), formatMiB(bp.PSS), float64(rp.PSS)/float64(bp.PSS)), ratio <= factor
		})
}
