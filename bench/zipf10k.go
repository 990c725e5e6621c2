package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
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

// The zipf-10k scenario: zipfMasters tiles rendered by Chromium, each
// served at zipfWidths widths as JPEG (GET-time transforms: every width
// is an entry of its own in the edge's cache), make zipfImages distinct
// images; the edge runs with an L1 of zipfCacheMem, well below their
// total size.
const (
	zipfImages    = zipfMasters * zipfWidths
	zipfMasters   = 100
	zipfWidths    = 100
	zipfMinWidth  = 300 // 300 to 399 px
	zipfTileW     = 600
	zipfTileH     = 315
	zipfCacheMem  = 16 << 20
	zipfExponent  = 1.1
	zipfWarmup    = 20000 // unmeasured Zipf GETs on each server
	zipfPermSeed  = 0x21bf
	zipfDirectory = "z"
)

func zipfScenario() Scenario {
	return Scenario{
		Name: "zipf-10k",
		About: fmt.Sprintf("%d distinct JPEGs (%d Chromium renders of a %d×%d tile, each at %d GET-time widths %d–%d px, every width "+
			"its own cache entry) drawn by Zipf (s=%g), from an edge whose L1 is %d MiB (serve --cache-mem), far below their total, "+
			"after one GET of each filled L2; versus nginx serving the same bytes as %d files with the same draws; "+
			"--edge-clients keep-alive connections, interleaved in --rounds rounds",
			zipfImages, zipfMasters, zipfTileW, zipfTileH, zipfWidths, zipfMinWidth, zipfMinWidth+zipfWidths-1, zipfExponent,
			zipfCacheMem>>20, zipfImages),
		NeedsPictor: true,
		ServeFlags:  []string{"--cache-mem", strconv.Itoa(zipfCacheMem)},
		Run:         runZipf,
	}
}

// zipfKey names image i: master i/zipfWidths at width zipfMinWidth +
// i%zipfWidths.
func zipfKey(i int) (master, width int) {
	return i / zipfWidths, zipfMinWidth + i%zipfWidths
}

func runZipf(ctx context.Context, env *Env) (results []*load.Result, err error) {
	cfg := env.Config
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
	ids := make([]string, zipfMasters)
	var nextMaster atomic.Int64
	r, err := load.Drive(ctx, "zipf-10k/seed-renders", "render", load.Load{Clients: 2 * cfg.PoolSize, Requests: zipfMasters}, env.Progress,
		func(ctx context.Context, _ int) (time.Duration, error) {
			m := int(nextMaster.Add(1)) - 1
			start := time.Now()
			id, err := env.Pictor.CreateImage(ctx, map[string]any{"html": card.TileHTML(1000+m, zipfTileW, zipfTileH, runID), "device_scale": 1})
			ids[m] = id
			return time.Since(start), err
		})
	if err == nil && r.Errors > 0 {
		err = fmt.Errorf("%d of %d renders failed, first: %s", r.Errors, r.Requests, r.FirstError)
	}
	if err != nil {
		return nil, fmt.Errorf("zipf-10k seed renders: %w", err)
	}

	// One GET of each image: the edge transforms it and stores it (L2,
	// and L1 while it has room); the bytes become nginx's files.
	root := filepath.Join(env.WorkDir, "www")
	if err := os.MkdirAll(filepath.Join(root, zipfDirectory), 0o755); err != nil {
		return nil, err
	}
	pictorSet := &fileSet{targets: make([]string, zipfImages), lengths: make([]int, zipfImages), sums: make([]uint32, zipfImages),
		contentType: []byte("image/jpeg")}
	nginxSet := &fileSet{targets: make([]string, zipfImages), lengths: pictorSet.lengths, sums: pictorSet.sums,
		contentType: pictorSet.contentType}
	for i := range zipfImages {
		m, w := zipfKey(i)
		pictorSet.targets[i] = fmt.Sprintf("/v1/image/%s.jpg?width=%d", ids[m], w)
		nginxSet.targets[i] = fmt.Sprintf("/%s/%d-%d.jpg", zipfDirectory, m, w)
	}
	warmClients := 2 * runtime.NumCPU()
	conns := make([]*load.KeepAlive, warmClients)
	for c := range conns {
		conns[c] = load.NewKeepAlive(edgeAddr, nil)
		defer conns[c].Close()
	}
	var nextImage, total atomic.Int64
	beforeFill, err := scrapeEdge(ctx, env.Pictor)
	if err != nil {
		return nil, err
	}
	fillStart := time.Now()
	r, err = load.Drive(ctx, "zipf-10k/fill", "image", load.Load{Clients: warmClients, Requests: zipfImages}, env.Progress,
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
			total.Add(int64(len(a.Body)))
			return lat, os.WriteFile(filepath.Join(root, nginxSet.targets[i]), a.Body, 0o644)
		})
	if err == nil && r.Errors > 0 {
		err = fmt.Errorf("%d of %d GETs failed, first: %s", r.Errors, r.Requests, r.FirstError)
	}
	if err != nil {
		return nil, fmt.Errorf("zipf-10k fill: %w", err)
	}
	afterFill, err := scrapeEdge(ctx, env.Pictor)
	if err != nil {
		return nil, err
	}
	fill := afterFill.sub(beforeFill)
	fillNote := fmt.Sprintf("seeding: %d renders, then one GET of each image in %v (%.0f transforms, %s each on average)",
		zipfMasters, time.Since(fillStart).Round(time.Second), fill.Transforms,
		load.FormatLatency(time.Duration(fill.TransformSeconds/max(fill.Transforms, 1)*float64(time.Second))))
	if total.Load() <= 2*zipfCacheMem {
		return nil, fmt.Errorf("zipf-10k: the images total %d bytes, not above twice the L1 of %d", total.Load(), zipfCacheMem)
	}
	nginx, err := baseline.StartNginx(ctx, env.Progress, nginxBin, root, env.WorkDir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, nginx.Stop()) }()
	env.Progress.Notef("zipf-10k: checking nginx serves the %d files byte for byte", zipfImages)
	if err := checkAll(nginx.Addr, nginxSet); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}

	z, err := NewZipf(zipfImages, zipfExponent)
	if err != nil {
		return nil, err
	}
	// Popularity is unrelated to the master or the width.
	perm := mrand.New(mrand.NewPCG(zipfPermSeed, 0)).Perm(zipfImages)
	picker := func() func(int) int {
		rs := make([]*mrand.Rand, cfg.EdgeClients)
		for c := range rs {
			rs[c] = zipfRand(c)
		}
		return func(c int) int { return perm[z.Draw(rs[c])] }
	}
	pictorRun := newGetRun(edgeAddr, cfg.EdgeClients, pictorSet, picker())
	defer pictorRun.close()
	nginxRun := newGetRun(nginx.Addr, cfg.EdgeClients, nginxSet, picker())
	defer nginxRun.close()
	results, counted, err := versusNginx(ctx, env, "zipf-10k", zipfWarmup, pictorRun, nginxRun, nginx.CPU)
	if err != nil {
		return results, err
	}
	results[0].Note = joinNote(fmt.Sprintf("%d images, %.1f MiB in all, L1 %d MiB; %s; %v; connections opened %d",
		zipfImages, float64(total.Load())/(1<<20), zipfCacheMem>>20, fillNote, counted, pictorRun.dials.Load()), results[0].Note)
	results[1].Note = joinNote(fmt.Sprintf("connections opened %d", nginxRun.dials.Load()), results[1].Note)
	return results, nil
}
