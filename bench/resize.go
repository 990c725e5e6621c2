package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/bench/baseline"
	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/load"
)

// The resize scenario: masters are social cards at device scale 2
// (2400×1260 PNG); each request asks for one as WebP at a width from
// resizeMinWidth on, a width no request asked of that master before, so
// that the edge misses and transforms every time.
const (
	resizeMasters  = 4
	resizeMinWidth = 600
	resizeWidths   = 300 // 600 to 899 px
	// The edge's WebP settings (origin/contract/imaging), given to vipsthumbnail too.
	resizeWebPOptions = "[Q=90,effort=4,strip]"
)

func resizeScenario() Scenario {
	return Scenario{
		Name: "resize",
		About: fmt.Sprintf("a %d×%d PNG master to WebP %d px wide (up to %d, a new width per request so the edge misses and transforms "+
			"each time; %d masters) by GET /v1/image/<id>.webp?width=N, versus a `vipsthumbnail in.png -s Nx -o out.webp%s` process per "+
			"image on the same master file (process start included); one at a time, interleaved in --rounds rounds",
			card.Width*card.Scale, card.Height*card.Scale, resizeMinWidth, resizeMinWidth+resizeWidths-1, resizeMasters, resizeWebPOptions),
		NeedsPictor: true,
		Run:         runResize,
	}
}

// resizeJob is one resize: master m to width w.
type resizeJob struct{ m, w int }

// resizeJobs lists every width of every master, widths ascending, the
// masters in turn.
func resizeJobs(masters, minWidth, widths int) []resizeJob {
	jobs := make([]resizeJob, 0, masters*widths)
	for w := minWidth; w < minWidth+widths; w++ {
		for m := range masters {
			jobs = append(jobs, resizeJob{m, w})
		}
	}
	return jobs
}

func runResize(ctx context.Context, env *Env) ([]*load.Result, error) {
	cfg := env.Config
	vips, err := baseline.EnsureTool(ctx, env.Progress, "vipsthumbnail", "libvips-tools")
	if err != nil {
		return nil, err
	}
	edgeAddr, err := hostPort(env.Pictor.URL)
	if err != nil {
		return nil, err
	}
	runID := rand.Text()[:8]
	ids := make([]string, resizeMasters)
	files := make([]string, resizeMasters)
	for m := range resizeMasters {
		env.Progress.Notef("resize: rendering master %d/%d", m+1, resizeMasters)
		id, err := env.Pictor.CreateImage(ctx, map[string]any{"html": card.HTML(m, runID), "device_scale": card.Scale})
		if err != nil {
			return nil, fmt.Errorf("create master %d: %w", m, err)
		}
		// The edge keeps the master for its transforms; the baseline
		// gets the same bytes in a file.
		png, _, err := env.Pictor.Fetch(ctx, "/v1/image/"+id+".png")
		if err != nil {
			return nil, err
		}
		if err := card.CheckPNG(png); err != nil {
			return nil, fmt.Errorf("master %d: %w", m, err)
		}
		ids[m], files[m] = id, filepath.Join(env.WorkDir, fmt.Sprintf("master-%d.png", m))
		if err := os.WriteFile(files[m], png, 0o644); err != nil {
			return nil, err
		}
	}
	outDir := filepath.Join(env.WorkDir, "out")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}

	jobs := resizeJobs(resizeMasters, resizeMinWidth, resizeWidths)
	var pictorNext, vipsNext atomic.Int64
	conn := load.NewKeepAlive(edgeAddr, nil)
	defer conn.Close()
	pictorOp := func(_ context.Context, _ int) (time.Duration, error) {
		j, ok := nextJob(jobs, &pictorNext)
		if !ok {
			return 0, fmt.Errorf("all %d distinct resizes used: shorten --duration", len(jobs))
		}
		return edgeResize(conn, ids[j.m], j.w)
	}
	var vipsCPU atomic.Int64
	vipsOp := func(ctx context.Context, _ int) (time.Duration, error) {
		j, ok := nextJob(jobs, &vipsNext)
		if !ok {
			return 0, fmt.Errorf("all %d distinct resizes used: shorten --duration", len(jobs))
		}
		lat, cpu, err := baseline.Vipsthumbnail(ctx, vips, files[j.m], filepath.Join(outDir, fmt.Sprintf("%d-%d.webp", j.m, j.w)), resizeWebPOptions, j.w)
		vipsCPU.Add(int64(cpu))
		return lat, err
	}
	// One unmeasured resize each, at a width the runs never ask for:
	// libvips starts, the master sits in the edge's memory and in the
	// page cache.
	for m := range resizeMasters {
		if _, err := edgeResize(conn, ids[m], resizeMinWidth-1); err != nil {
			return nil, fmt.Errorf("resize warm-up: %w", err)
		}
		if _, _, err := baseline.Vipsthumbnail(ctx, vips, files[m], filepath.Join(outDir, "warm.webp"), resizeWebPOptions, resizeMinWidth-1); err != nil {
			return nil, fmt.Errorf("resize warm-up: %w", err)
		}
	}
	before, err := scrapeEdge(ctx, env.Pictor)
	if err != nil {
		return nil, err
	}
	results, err := interleave(ctx, env, "image", 1, cfg.Rounds, cfg.Duration, []contender{
		{name: "resize/pictor", op: pictorOp, cpu: env.Pictor.CPU},
		{name: "resize/vipsthumbnail", op: vipsOp, cpu: func() time.Duration { return time.Duration(vipsCPU.Load()) }},
	})
	if err != nil {
		return results, err
	}
	after, err := scrapeEdge(ctx, env.Pictor)
	if err != nil {
		return results, err
	}
	results[0].Note = joinNote(after.sub(before).String(), results[0].Note)
	results[1].Note = joinNote(baseline.Version(ctx, vips, "--version"), results[1].Note)
	return results, nil
}

// nextJob takes the next job of a run; ok is false once all are taken.
func nextJob(jobs []resizeJob, next *atomic.Int64) (resizeJob, bool) {
	i := int(next.Add(1)) - 1
	if i >= len(jobs) {
		return resizeJob{}, false
	}
	return jobs[i], true
}

// edgeResize GETs master id as WebP w pixels wide from the edge and
// checks the answer is a WebP of that width.
func edgeResize(conn *load.KeepAlive, id string, w int) (time.Duration, error) {
	target := "/v1/image/" + id + ".webp?width=" + strconv.Itoa(w)
	start := time.Now()
	a, err := conn.Get(target)
	lat := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", target, err)
	}
	if a.Status != 200 {
		return 0, fmt.Errorf("GET %s: status %d: %.200s", target, a.Status, a.Body)
	}
	if string(a.ContentType) != "image/webp" {
		return 0, fmt.Errorf("GET %s: Content-Type %q, want image/webp", target, a.ContentType)
	}
	if err := card.CheckWebPWidth(a.Body, w); err != nil {
		return 0, fmt.Errorf("GET %s: %w", target, err)
	}
	return lat, nil
}
