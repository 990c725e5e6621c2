package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/bench/baseline"
	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/proc"
	"github.com/pictorhq/pictor/bench/report"
)

const (
	// pageLatencyFactor is issue 19's target: Pictor's POST → first byte
	// at most this times the bare warm page's render, at the median.
	pageLatencyFactor = 1.1
	// pageRateFactor is its target under load: at least this times the
	// renders per second of as many warm pages as Pictor has tabs.
	pageRateFactor = 1.0
	// pageLogFile receives the Puppeteer process's standard error, in the
	// report directory.
	pageLogFile = "puppeteer.log"
	// pageMaxDiff is the largest mean difference per channel (of 255)
	// between Pictor's image of a card and the page's: the same browser
	// renders the same document on both sides.
	pageMaxDiff = 4.0
)

// The sides of the render-vs-page scenario, the suffixes of its results'
// names.
const (
	sidePictor   = "pictor"
	sidePage     = "puppeteer"
	sidePageSlow = "puppeteer-default-png"
)

const (
	pageScenario = "render-vs-page"
	// pagePoolFull prefixes the cards' names in the throughput runs.
	pagePoolFull = "pool-full-"
)

// pageCard is one of the cards both sides render.
type pageCard struct {
	name string
	html func(n int, nonce string) string
}

// pageCards are the benchmark card and its flat variant.
var pageCards = []pageCard{{"gradient", card.HTML}, {"flat", card.FlatHTML}}

// pageResult names a result of the scenario: "render-vs-page/<what>-<side>".
func pageResult(what, side string) string { return pageScenario + "/" + what + "-" + side }

func renderVsPageScenario() Scenario {
	return Scenario{
		Name: pageScenario,
		About: fmt.Sprintf("Pictor against the bare warm page it is built on: puppeteer-core %s (npm ci of a pinned lockfile into "+
			"--tools-dir) driving the Chromium binary of `pictor serve` with its browser's own flags (read from its command line; "+
			"--no-sandbox as root), pages of 1200×630 at scale 2, each in a browser context of its own. A render of the page: "+
			"page.setContent (waitUntil load) of the card's document, then page.screenshot (PNG, clip 1200×630, optimizeForSpeed), "+
			"timed inside Node until the buffer is received; Pictor's: POST /v1/image → first byte of the PNG (as render-card). "+
			"Per card (gradient, the benchmark card; flat): 1 client each, interleaved in --rounds rounds of --duration in total "+
			"per side, with Puppeteer's default PNG (no optimizeForSpeed) as a third side; then pool-full: 2× --pool-size "+
			"clients on Pictor against --pool-size pages each looping, interleaved likewise. One image of each card from each "+
			"side is decoded and compared first. CPU of the page: Node with its Chromium. Targets: Pictor's p50 ≤ %g× the page's; "+
			"its renders/s ≥ %g× the pages'. Log: %s", baseline.PuppeteerVersion, pageLatencyFactor, pageRateFactor, pageLogFile),
		NeedsPictor: true,
		Run:         runRenderVsPage,
	}
}

// pageSide counts what the line protocol with Node added to a side's
// renders, outside the time recorded.
type pageSide struct {
	overhead atomic.Int64 // nanoseconds, summed
	renders  atomic.Int64
	bytes    atomic.Int64
}

func (s *pageSide) note() string {
	n := s.renders.Load()
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("PNG %.2f MB on average; the harness's line protocol with Node added %s per render on average (not counted)",
		float64(s.bytes.Load())/float64(n)/1e6, load.FormatLatency(time.Duration(s.overhead.Load()/n)))
}

func runRenderVsPage(ctx context.Context, env *Env) (results []*load.Result, err error) {
	cfg := env.Config
	nonce := rand.Text()[:8]
	var seq atomic.Int64
	pictorOp := func(c pageCard) load.Op {
		return func(ctx context.Context, _ int) (time.Duration, error) {
			n := int(seq.Add(1))
			return env.Pictor.RenderCard(ctx, c.html(n, fmt.Sprintf("%s-%06d", nonce, n)))
		}
	}
	// Pictor first: its browser is then up, and its command line readable.
	for _, c := range pageCards {
		n := max(cfg.Warmup, 1)
		if err := warm(ctx, env, pageResult(c.name, sidePictor+"-warm-up"), load.Load{Clients: min(cfg.PoolSize, n), Requests: n}, pictorOp(c)); err != nil {
			return nil, err
		}
	}
	browser, err := pictorBrowser(env.Pictor.PID())
	if err != nil {
		return nil, err
	}
	dir, err := baseline.InstallPuppeteer(ctx, env.Progress, cfg.ToolsDir)
	if err != nil {
		return nil, err
	}
	node, err := baseline.EnsureTool(ctx, env.Progress, "node", "nodejs")
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(cfg.OutDir, pageLogFile))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	flags := baseline.PageFlags(browser, os.Geteuid() == 0)
	env.Progress.Notef("starting puppeteer-core %s on %s with %d pages", baseline.PuppeteerVersion, browser[0], cfg.PoolSize)
	pp, err := baseline.StartPuppeteer(ctx, baseline.PuppeteerConfig{
		Node: node, Dir: dir, Chromium: browser[0], Flags: flags, Profile: filepath.Join(env.WorkDir, "puppeteer-profile"),
		Pages: cfg.PoolSize, Width: card.Width, Height: card.Height, Scale: card.Scale, Log: log,
	})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, pp.Close()) }()

	pageOp := func(c pageCard, fast bool, side *pageSide) load.Op {
		return func(ctx context.Context, client int) (time.Duration, error) {
			n := int(seq.Add(1))
			shot, err := pp.Render(ctx, client%cfg.PoolSize, card.Document(c.html(n, fmt.Sprintf("%s-%06d", nonce, n))), fast, "")
			if err != nil {
				return 0, err
			}
			if err := checkShot(shot); err != nil {
				return 0, err
			}
			side.renders.Add(1)
			side.bytes.Add(int64(shot.Bytes))
			side.overhead.Add(int64(shot.Wall - shot.Elapsed))
			return shot.Elapsed, nil
		}
	}
	for _, c := range pageCards {
		for _, mode := range []struct {
			side string
			fast bool
		}{{sidePage, true}, {sidePageSlow, false}} {
			n := cfg.PoolSize * max(cfg.Warmup, 1)
			if err := warm(ctx, env, pageResult(c.name, mode.side+"-warm-up"), load.Load{Clients: cfg.PoolSize, Requests: n}, pageOp(c, mode.fast, &pageSide{})); err != nil {
				return nil, err
			}
		}
	}
	checked := map[string]string{}
	for _, c := range pageCards {
		if checked[c.name], err = compareImages(ctx, env, pp, c, nonce); err != nil {
			return nil, err
		}
	}
	about := fmt.Sprintf("puppeteer-core %s, %s, Pictor's browser flags", baseline.PuppeteerVersion, pp.Version)
	if os.Geteuid() == 0 {
		about += " with --no-sandbox (Pictor runs it sandboxed as another user)"
	}

	for _, c := range pageCards {
		sides := []*pageSide{{}, {}}
		rs, err := interleave(ctx, env, "render", 1, cfg.Rounds, cfg.Duration, []contender{
			{name: pageResult(c.name, sidePictor), op: pictorOp(c), cpu: env.Pictor.CPU},
			{name: pageResult(c.name, sidePage), op: pageOp(c, true, sides[0]), cpu: pp.CPU},
			{name: pageResult(c.name, sidePageSlow), op: pageOp(c, false, sides[1]), cpu: pp.CPU},
		})
		results = append(results, rs...)
		if err != nil {
			return results, err
		}
		rs[0].Note = joinNote(latencyRatioNote(rs[0], rs[1]), rs[0].Note)
		rs[1].Note = joinNote(joinNote(about, joinNote(checked[c.name], sides[0].note())), rs[1].Note)
		rs[2].Note = joinNote(joinNote("page.screenshot without optimizeForSpeed", sides[1].note()), rs[2].Note)
	}
	for _, c := range pageCards {
		side := &pageSide{}
		rs, err := interleave(ctx, env, "render", cfg.PoolSize, cfg.Rounds, cfg.Duration, []contender{
			{name: pageResult(pagePoolFull+c.name, sidePictor), op: pictorOp(c), cpu: env.Pictor.CPU, clients: 2 * cfg.PoolSize},
			{name: pageResult(pagePoolFull+c.name, sidePage), op: pageOp(c, true, side), cpu: pp.CPU},
		})
		results = append(results, rs...)
		if err != nil {
			return results, err
		}
		if rs[1].Rate() > 0 {
			rs[0].Note = joinNote(fmt.Sprintf("%.2f× the pages' renders/s", rs[0].Rate()/rs[1].Rate()), rs[0].Note)
		}
		rs[1].Note = joinNote(joinNote(fmt.Sprintf("%d pages, each looping", cfg.PoolSize), side.note()), rs[1].Note)
	}
	return results, nil
}

// pageChecks are issue 19's targets against the bare warm page, per
// card: Pictor's p50 at most pageLatencyFactor times the page's, and with
// its pool full at least pageRateFactor times the renders per second of
// as many pages.
func pageChecks() []Check {
	var out []Check
	for _, c := range pageCards {
		out = append(out, quantileRatioAtMost(pageResult(c.name, sidePictor), pageResult(c.name, sidePage), 0.50, pageLatencyFactor))
	}
	for _, c := range pageCards {
		out = append(out, rateRatioCheck(pageResult(pagePoolFull+c.name, sidePictor), "Puppeteer's pages",
			[]string{pageResult(pagePoolFull+c.name, sidePage)}, pageRateFactor, "%.2f"))
	}
	return out
}

// pageComparisons are the scenario's pairs for the report's comparison
// table.
func pageComparisons() []report.Comparison {
	var out []report.Comparison
	for _, what := range []string{"", pagePoolFull} {
		for _, c := range pageCards {
			out = append(out, report.Comparison{Subject: pageResult(what+c.name, sidePictor), Baseline: pageResult(what+c.name, sidePage)})
		}
	}
	return out
}

// pictorBrowser returns the command line of a Chromium browser process
// of the server whose process id is pid.
func pictorBrowser(pid int) ([]string, error) {
	for _, d := range proc.Descendants(pid) {
		if args, err := proc.Cmdline(d); err == nil && baseline.IsBrowserCommand(args) {
			return args, nil
		}
	}
	return nil, fmt.Errorf("no Chromium browser process among the descendants of pictor serve (pid %d)", pid)
}

// checkShot verifies a page's screenshot is the card's size.
func checkShot(s baseline.Shot) error {
	if w, h := card.Width*card.Scale, card.Height*card.Scale; s.Width != w || s.Height != h {
		return fmt.Errorf("puppeteer: PNG is %d×%d, want %d×%d", s.Width, s.Height, w, h)
	}
	return nil
}

// latencyRatioNote gives r's p50 and p95 over the baseline's.
func latencyRatioNote(r, base *load.Result) string {
	if r.Latency.Count() == 0 || base.Latency.Count() == 0 {
		return ""
	}
	q := func(res *load.Result, p float64) float64 { return res.Latency.Quantile(p).Seconds() }
	return fmt.Sprintf("p50 %.2f×, p95 %.2f× the warm page's", q(r, 0.5)/q(base, 0.5), q(r, 0.95)/q(base, 0.95))
}

// compareImages renders the same card once on each side (the page in
// both PNG modes), decodes the three PNGs, checks each is a card-sized
// image that is not one flat color, and that the two sides drew the same
// pixels (within pageMaxDiff); it returns a note saying by how much they
// differ.
func compareImages(ctx context.Context, env *Env, pp *baseline.Puppeteer, c pageCard, nonce string) (string, error) {
	html := c.html(0, nonce+"-check")
	id, err := env.Pictor.CreateImage(ctx, map[string]any{"html": html, "device_scale": card.Scale})
	if err != nil {
		return "", fmt.Errorf("%s card: %w", c.name, err)
	}
	b, ct, err := env.Pictor.Fetch(ctx, "/v1/image/"+id)
	if err != nil {
		return "", fmt.Errorf("%s card: %w", c.name, err)
	}
	if ct != "image/png" {
		return "", fmt.Errorf("%s card: Pictor answered %q, want image/png", c.name, ct)
	}
	fromPictor, err := decodeCard(b, card.Width*card.Scale, card.Height*card.Scale)
	if err != nil {
		return "", fmt.Errorf("%s card from Pictor: %w", c.name, err)
	}
	var fromPage [2]image.Image
	for i, fast := range []bool{true, false} {
		out := filepath.Join(env.WorkDir, fmt.Sprintf("check-%s-%d.png", c.name, i))
		shot, err := pp.Render(ctx, 0, card.Document(html), fast, out)
		if err != nil {
			return "", fmt.Errorf("%s card: %w", c.name, err)
		}
		if err := checkShot(shot); err != nil {
			return "", fmt.Errorf("%s card: %w", c.name, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			return "", err
		}
		if fromPage[i], err = decodeCard(b, card.Width*card.Scale, card.Height*card.Scale); err != nil {
			return "", fmt.Errorf("%s card from Puppeteer: %w", c.name, err)
		}
	}
	sides := meanDiff(fromPictor, fromPage[0])
	modes := meanDiff(fromPage[0], fromPage[1])
	if sides > pageMaxDiff || modes > pageMaxDiff {
		return "", fmt.Errorf("%s card: the images differ by %.2f (Pictor against the page) and %.2f (the page's two PNG modes) "+
			"per channel on average, more than %g of 255: not the same card", c.name, sides, modes, pageMaxDiff)
	}
	return fmt.Sprintf("its image of the card differs from Pictor's by %.2f of 255 per channel on average", sides), nil
}

// decodeCard decodes a PNG and checks it is w×h pixels (the card's) and
// not one flat color.
func decodeCard(b []byte, w, h int) (image.Image, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	if s := img.Bounds().Size(); s.X != w || s.Y != h {
		return nil, fmt.Errorf("PNG is %d×%d, want %d×%d", s.X, s.Y, w, h)
	}
	if flatImage(img) {
		return nil, errors.New("PNG is one flat color")
	}
	return img, nil
}

// flatImage reports whether at most 1 % of img's pixels differ from its
// top left one.
func flatImage(img image.Image) bool {
	b := img.Bounds()
	at := rgba64(img)
	first := at(b.Min.X, b.Min.Y)
	differ := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if at(x, y) != first {
				differ++
			}
		}
	}
	return differ*100 <= b.Dx()*b.Dy()
}

// meanDiff is the mean absolute difference of two images of the same
// size, per red, green and blue channel, on a 0-255 scale.
func meanDiff(a, b image.Image) float64 {
	ab, bb := a.Bounds(), b.Bounds()
	if ab.Size() != bb.Size() {
		return 255
	}
	atA, atB := rgba64(a), rgba64(b)
	var sum uint64
	for y := range ab.Dy() {
		for x := range ab.Dx() {
			p, q := atA(ab.Min.X+x, ab.Min.Y+y), atB(bb.Min.X+x, bb.Min.Y+y)
			sum += absDiff(p[0], q[0]) + absDiff(p[1], q[1]) + absDiff(p[2], q[2])
		}
	}
	n := float64(ab.Dx() * ab.Dy() * 3)
	if n == 0 {
		return 0
	}
	return float64(sum) / n / 257 // 16-bit channels to 0-255
}

func absDiff(a, b uint32) uint64 {
	if a > b {
		return uint64(a - b)
	}
	return uint64(b - a)
}

// rgba64 returns a reader of img's pixels as alpha-premultiplied 16-bit
// red, green, blue and alpha, without an allocation per pixel where img
// allows.
func rgba64(img image.Image) func(x, y int) [4]uint32 {
	if f, ok := img.(image.RGBA64Image); ok {
		return func(x, y int) [4]uint32 {
			c := f.RGBA64At(x, y)
			return [4]uint32{uint32(c.R), uint32(c.G), uint32(c.B), uint32(c.A)}
		}
	}
	return func(x, y int) [4]uint32 {
		r, g, b, a := img.At(x, y).RGBA()
		return [4]uint32{r, g, b, a}
	}
}
