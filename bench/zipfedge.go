package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"html"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/bench/baseline"
	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/load"
)

// The Zipf scenarios draw distinct JPEGs by Zipf from the edge, whose L1
// is far below their total, and from nginx serving the same bytes as
// files. Each JPEG is a GET-time transform of a Chromium render (a
// master) at one width: every width is an entry of its own in the edge's
// cache.
const (
	zipfExponent  = 1.1
	zipfPermSeed  = 0x21bf
	zipfDirectory = "z"
	jpegMIME      = "image/jpeg"
)

// zipfSpec is one Zipf scenario: masters tiles of tileW×tileH, each at
// widths widths from minWidth in steps of widthStep, make masters×widths
// distinct images.
type zipfSpec struct {
	name string
	// what the tiles are, for About.
	what            string
	masters, widths int
	minWidth, step  int
	tileW, tileH    int
	// tile returns the HTML of master n, distinct for every n and nonce.
	tile func(n, w, h int, nonce string) string
	// cacheMem is the edge's L1 (serve --cache-mem); cacheDisk, if not 0,
	// its L2 (--cache-disk), which must then hold twice the images' total.
	cacheMem, cacheDisk int64
	// minTotal is how many L1s the images must weigh at least.
	minTotal int64
	// meanMin and meanMax, if not 0, bound the images' mean size in bytes.
	meanMin, meanMax int64
	// warmup is how many unmeasured Zipf GETs precede the runs on each
	// server.
	warmup int
}

// The three Zipf scenarios. zipf-10k: small thumbnails. zipf-10k-heavy:
// the same count at a social card's weight, 50–200 KB (a 1200×630 card
// with a photo-like noise texture, JPEG at the edge's quality 90 from 600
// to 1194 px: about 60 KB to 180 KB, 119 KB on average when measured).
// zipf-100k: ten times as many thumbnails, 150 to 399 px (8.5 KB on
// average, 850 MB in all), with an L1 of 64 MiB and an L2 on disk that
// holds them all; the fill makes one transform per image, and these
// widths halve the cost of one against 300 to 549 px (3.5 ms against 7 ms
// each, one at a time): 11 minutes at 300–549 px on two busy cores.
var (
	zipf10k = zipfSpec{
		name: "zipf-10k", what: "tile", masters: 100, widths: 100, minWidth: 300, step: 1,
		tileW: 600, tileH: 315, tile: card.TileHTML, cacheMem: 16 << 20, minTotal: 2, warmup: 20000,
	}
	zipf10kHeavy = zipfSpec{
		name: "zipf-10k-heavy", what: "social card with a photo-like noise texture", masters: 100, widths: 100, minWidth: 600, step: 6,
		tileW: 1200, tileH: 630, tile: heavyTileHTML, cacheMem: 16 << 20, minTotal: 2, meanMin: 50 << 10, meanMax: 200 << 10, warmup: 20000,
	}
	zipf100k = zipfSpec{
		name: "zipf-100k", what: "tile", masters: 400, widths: 250, minWidth: 150, step: 1,
		tileW: 600, tileH: 315, tile: card.TileHTML, cacheMem: 64 << 20, cacheDisk: 8 << 30, minTotal: 8, warmup: 100000,
	}
)

// images returns how many distinct images the scenario draws from.
func (z *zipfSpec) images() int { return z.masters * z.widths }

// maxWidth returns the widest image's width.
func (z *zipfSpec) maxWidth() int { return z.minWidth + (z.widths-1)*z.step }

// key names image i: master i/widths at width minWidth + step×(i%widths).
func (z *zipfSpec) key(i int) (master, width int) {
	return i / z.widths, z.minWidth + z.step*(i%z.widths)
}

// serveFlags are the flags of the `pictor serve` the scenario needs.
func (z *zipfSpec) serveFlags() []string {
	flags := []string{"--cache-mem", strconv.FormatInt(z.cacheMem, 10)}
	if z.cacheDisk > 0 {
		flags = append(flags, "--cache-disk", strconv.FormatInt(z.cacheDisk, 10))
	}
	return flags
}

func (z *zipfSpec) scenario() Scenario {
	disk := ""
	if z.cacheDisk > 0 {
		disk = fmt.Sprintf(", and whose L2 of %d GiB (--cache-disk) holds them all", z.cacheDisk>>30)
	}
	size := ""
	if z.meanMax > 0 {
		size = fmt.Sprintf(", %d–%d KB on average (checked during the fill),", z.meanMin>>10, z.meanMax>>10)
	}
	return Scenario{
		Name: z.name,
		About: fmt.Sprintf("%d distinct JPEGs (%d Chromium renders of a %d×%d %s, each at %d GET-time widths %d–%d px, every width "+
			"its own cache entry)%s drawn by Zipf (s=%g), from an edge whose L1 is %d MiB (serve --cache-mem), far below their total%s, "+
			"after one GET of each filled L2; versus nginx serving the same bytes as %d files with the same draws; "+
			"--edge-clients keep-alive connections, interleaved in rounds of at most 2 s (more than --rounds when needed)",
			z.images(), z.masters, z.tileW, z.tileH, z.what, z.widths, z.minWidth, z.maxWidth(), size, zipfExponent,
			z.cacheMem>>20, disk, z.images()),
		NeedsPictor: true,
		ServeFlags:  z.serveFlags(),
		OwnServer:   true,
		Run:         z.run,
	}
}

// heavyTileHTML returns a w×h social card whose background is a
// gradient under a fractal noise texture (SVG feTurbulence, seeded by n):
// its JPEG weighs what a card with a photograph does, several times a
// flat card's.
func heavyTileHTML(n, w, h int, nonce string) string {
	h1, h2 := (n*53)%360, (n*53+120)%360
	return fmt.Sprintf(`<style>html,body{margin:0;padding:0}
.t{position:relative;box-sizing:border-box;width:%dpx;height:%dpx;padding:56px 64px;display:flex;flex-direction:column;
justify-content:space-between;overflow:hidden;background:linear-gradient(135deg,hsl(%d,70%%,35%%),hsl(%d,75%%,55%%));color:#fff;
font-family:"DejaVu Sans",sans-serif}
svg{position:absolute;inset:0;opacity:.55;mix-blend-mode:overlay}
h1{position:relative;margin:0;font-size:68px;line-height:1.15;text-shadow:0 4px 18px rgba(0,0,0,.35)}.f{position:relative;font-size:30px;opacity:.9}</style>
<div class="t"><svg width="%d" height="%d"><filter id="n"><feTurbulence type="fractalNoise" baseFrequency="0.08" numOctaves="3" seed="%d"/></filter>
<rect width="100%%" height="100%%" filter="url(#n)"/></svg>
<h1>Heavy card number %d of the edge benchmark</h1><div class="f">pictor.example · %s</div></div>
`, w, h, h1, h2, w, h, n, n, html.EscapeString(nonce))
}

// zipfSizes sums the sizes of a scenario's images as the fill sees them.
type zipfSizes struct {
	total, smallest, largest atomic.Int64
}

func (s *zipfSizes) add(n int) {
	s.total.Add(int64(n))
	for v := s.smallest.Load(); v == 0 || int64(n) < v; v = s.smallest.Load() {
		if s.smallest.CompareAndSwap(v, int64(n)) {
			break
		}
	}
	for v := s.largest.Load(); int64(n) > v; v = s.largest.Load() {
		if s.largest.CompareAndSwap(v, int64(n)) {
			break
		}
	}
}

// check returns an error if images images of these sizes do not fit the
// spec: their total at least minTotal L1s (and half the L2 at most), their
// mean within its bounds.
func (z *zipfSpec) check(s *zipfSizes, images int) error {
	total := s.total.Load()
	mean := total / int64(max(images, 1))
	switch {
	case total <= z.minTotal*z.cacheMem:
		return fmt.Errorf("%s: the images total %d bytes, not above %d times the L1 of %d", z.name, total, z.minTotal, z.cacheMem)
	case z.cacheDisk > 0 && total > z.cacheDisk/2:
		return fmt.Errorf("%s: the images total %d bytes, above half the L2 of %d", z.name, total, z.cacheDisk)
	case z.meanMax > 0 && (mean < z.meanMin || mean > z.meanMax):
		return fmt.Errorf("%s: the images weigh %d bytes on average, want %d to %d", z.name, mean, z.meanMin, z.meanMax)
	}
	return nil
}

// note describes the sizes in the scenario's note.
func (z *zipfSpec) note(s *zipfSizes, images int) string {
	total := s.total.Load()
	return fmt.Sprintf("%d images, %.1f MiB in all (%.1f KiB on average, %.1f to %.1f KiB), L1 %d MiB", images,
		float64(total)/(1<<20), float64(total)/float64(max(images, 1))/(1<<10),
		float64(s.smallest.Load())/(1<<10), float64(s.largest.Load())/(1<<10), z.cacheMem>>20)
}

func (z *zipfSpec) run(ctx context.Context, env *Env) (results []*load.Result, err error) {
	cfg := env.Config
	images := z.images()
	nginxBin, err := baseline.EnsureTool(ctx, env.Progress, "nginx", "nginx-light", "nginx")
	if err != nil {
		return nil, err
	}
	edgeAddr, err := hostPort(env.Pictor.URL)
	if err != nil {
		return nil, err
	}

	// Masters: renders through Chromium, the pool kept full.
	runID := rand.Text()[:8]
	ids := make([]string, z.masters)
	var nextMaster atomic.Int64
	r, err := load.Drive(ctx, z.name+"/seed-renders", "render", load.Load{Clients: 2 * cfg.PoolSize, Requests: z.masters}, env.Progress,
		func(ctx context.Context, _ int) (time.Duration, error) {
			m := int(nextMaster.Add(1)) - 1
			start := time.Now()
			id, err := env.Pictor.CreateImage(ctx, map[string]any{"html": z.tile(1000+m, z.tileW, z.tileH, runID), "device_scale": 1})
			ids[m] = id
			return time.Since(start), err
		})
	if err == nil && r.Errors > 0 {
		err = fmt.Errorf("%d of %d renders failed, first: %s", r.Errors, r.Requests, r.FirstError)
	}
	if err != nil {
		return nil, fmt.Errorf("%s seed renders: %w", z.name, err)
	}

	// One GET of each image: the edge transforms it and stores it (L2,
	// and L1 while it has room); the bytes become nginx's files.
	root := filepath.Join(env.WorkDir, "www")
	if err := os.MkdirAll(filepath.Join(root, zipfDirectory), 0o755); err != nil {
		return nil, err
	}
	pictorSet := &fileSet{targets: make([]string, images), lengths: make([]int, images), sums: make([]uint32, images),
		contentType: []byte(jpegMIME)}
	nginxSet := &fileSet{targets: make([]string, images), lengths: pictorSet.lengths, sums: pictorSet.sums,
		contentType: pictorSet.contentType}
	for i := range images {
		m, w := z.key(i)
		pictorSet.targets[i] = fmt.Sprintf("/v1/image/%s.jpg?width=%d", ids[m], w)
		nginxSet.targets[i] = fmt.Sprintf("/%s/%d-%d.jpg", zipfDirectory, m, w)
	}
	warmClients := 2 * runtime.NumCPU()
	conns := make([]*load.KeepAlive, warmClients)
	for c := range conns {
		conns[c] = load.NewKeepAlive(edgeAddr, nil)
		defer conns[c].Close()
	}
	var nextImage atomic.Int64
	var sizes zipfSizes
	beforeFill, err := scrapeEdge(ctx, env.Pictor)
	if err != nil {
		return nil, err
	}
	fillStart := time.Now()
	r, err = load.Drive(ctx, z.name+"/fill", "image", load.Load{Clients: warmClients, Requests: images}, env.Progress,
		func(_ context.Context, c int) (time.Duration, error) {
			i := int(nextImage.Add(1)) - 1
			start := time.Now()
			a, err := conns[c].Get(pictorSet.targets[i])
			lat := time.Since(start)
			switch {
			case err != nil:
				return 0, err
			case a.Status != 200:
				return 0, fmt.Errorf("GET %s: status %d: %.200s", pictorSet.targets[i], a.Status, a.Body)
			case !bytes.Equal(a.ContentType, pictorSet.contentType) || !bytes.HasPrefix(a.Body, []byte{0xff, 0xd8, 0xff}):
				return 0, fmt.Errorf("GET %s: not a JPEG (%s)", pictorSet.targets[i], a.ContentType)
			}
			pictorSet.lengths[i], pictorSet.sums[i] = len(a.Body), crc32.ChecksumIEEE(a.Body)
			sizes.add(len(a.Body))
			return lat, os.WriteFile(filepath.Join(root, nginxSet.targets[i]), a.Body, 0o644)
		})
	if err == nil && r.Errors > 0 {
		err = fmt.Errorf("%d of %d GETs failed, first: %s", r.Errors, r.Requests, r.FirstError)
	}
	if err != nil {
		return nil, fmt.Errorf("%s fill: %w", z.name, err)
	}
	afterFill, err := scrapeEdge(ctx, env.Pictor)
	if err != nil {
		return nil, err
	}
	fill := afterFill.sub(beforeFill)
	fillNote := fmt.Sprintf("seeding: %d renders, then one GET of each image in %v (%.0f transforms, %s each on average)",
		z.masters, time.Since(fillStart).Round(time.Second), fill.Transforms,
		load.FormatLatency(time.Duration(fill.TransformSeconds/max(fill.Transforms, 1)*float64(time.Second))))
	env.Progress.Notef("%s: %s; %s", z.name, z.note(&sizes, images), fillNote)
	if err := z.check(&sizes, images); err != nil {
		return nil, err
	}
	nginx, err := baseline.StartNginx(ctx, env.Progress, nginxBin, root, env.WorkDir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, nginx.Stop()) }()
	env.Progress.Notef("%s: checking nginx serves the %d files byte for byte", z.name, images)
	if err := checkAll(nginx.Addr, nginxSet); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}

	zipf, err := NewZipf(images, zipfExponent)
	if err != nil {
		return nil, err
	}
	// Popularity is unrelated to the master or the width.
	perm := mrand.New(mrand.NewPCG(zipfPermSeed, 0)).Perm(images)
	picker := func() func(int) int {
		rs := make([]*mrand.Rand, cfg.EdgeClients)
		for c := range rs {
			rs[c] = zipfRand(c)
		}
		return func(c int) int { return perm[zipf.Draw(rs[c])] }
	}
	pictorRun := newGetRun(edgeAddr, cfg.EdgeClients, pictorSet, picker())
	defer pictorRun.close()
	nginxRun := newGetRun(nginx.Addr, cfg.EdgeClients, nginxSet, picker())
	defer nginxRun.close()
	results, counted, err := versusNginx(ctx, env, z.name, z.warmup, pictorRun, nginxRun, nginx.CPU)
	if err != nil {
		return results, err
	}
	results[0].Note = joinNote(fmt.Sprintf("%s; %s; %v; connections opened %d",
		z.note(&sizes, images), fillNote, counted, pictorRun.dials.Load()), results[0].Note)
	results[1].Note = joinNote(fmt.Sprintf("connections opened %d", nginxRun.dials.Load()), results[1].Note)
	return results, nil
}
