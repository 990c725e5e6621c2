package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pictorhq/pictor/bench/baseline"
	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/load"
)

// The hot image: a 600×315 tile (half a social card) as JPEG, the size of
// a typical thumbnail or avatar an edge serves most.
const (
	hotWidth, hotHeight = 600, 315
	// hotWarmup is how many unmeasured GETs precede the runs on each
	// server (about two seconds here): the edge's L1 admits
	// asynchronously, nginx opens its file cache, and the render of the
	// hot image has just ended. With 2,000, Pictor's first measured round
	// ran 20-25 % below its others, nginx's did not.
	hotWarmup = 150000
)

func hotImageScenario() Scenario {
	return Scenario{
		Name: "hot-image",
		About: fmt.Sprintf("one %d×%d JPEG hot in the edge's L1 (GET /v1/image/<id>.jpg) versus Debian's nginx serving the same bytes "+
			"from a file (sendfile, keep-alive, open-file cache, no access log, a listening socket per worker); --edge-clients keep-alive connections, "+
			"interleaved in rounds of at most 2 s (more than --rounds when needed)", hotWidth, hotHeight),
		NeedsPictor: true,
		Run:         runHotImage,
	}
}

func runHotImage(ctx context.Context, env *Env) (results []*load.Result, err error) {
	id, err := env.Pictor.CreateImage(ctx, map[string]any{"html": card.TileHTML(1, hotWidth, hotHeight, rand.Text()[:8]), "device_scale": 1})
	if err != nil {
		return nil, fmt.Errorf("create the hot image: %w", err)
	}
	target := "/v1/image/" + id + ".jpg"
	body, ct, err := env.Pictor.Fetch(ctx, target)
	if err != nil {
		return nil, err
	}
	if ct != "image/jpeg" {
		return nil, fmt.Errorf("GET %s: Content-Type %q, want image/jpeg", target, ct)
	}
	hot, err := startHotPair(ctx, env, startNginxStatic, target, "hot.jpg", body, ct)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, hot.close()) }()
	results, counted, err := versusNginx(ctx, env, "hot-image", hotWarmup, hot.pictor, hot.baseline, hot.static.cpu)
	if err != nil {
		return results, err
	}
	results[0].Note = joinNote(fmt.Sprintf("%d-byte JPEG; %v; connections opened %d", len(body), counted, hot.pictor.dials.Load()), results[0].Note)
	results[1].Note = joinNote(hot.baselineNote(), results[1].Note)
	return results, nil
}

// staticServer is the baseline of hot-image and og-hot: a server of
// static files.
type staticServer struct {
	addr string
	// cpu returns the CPU time it used so far.
	cpu func() time.Duration
	// about names it in the notes (its version).
	about string
	stop  func() error
}

// startStatic starts a staticServer serving the files of root.
type startStatic func(ctx context.Context, env *Env, root string) (*staticServer, error)

// startNginxStatic is the scenarios' baseline: Debian's nginx, installed
// if missing.
func startNginxStatic(ctx context.Context, env *Env, root string) (*staticServer, error) {
	bin, err := baseline.EnsureTool(ctx, env.Progress, "nginx", "nginx-light", "nginx")
	if err != nil {
		return nil, err
	}
	n, err := baseline.StartNginx(ctx, env.Progress, bin, root, env.WorkDir)
	if err != nil {
		return nil, err
	}
	return &staticServer{addr: n.Addr, cpu: n.CPU, about: baseline.Version(ctx, bin, "-v"), stop: n.Stop}, nil
}

// hotPair is one hot file on both sides of a comparison: the edge's
// answer to a target, and a static server's copy of it.
type hotPair struct {
	static *staticServer
	// pictor and baseline are the runs on the edge and on the static
	// server: --edge-clients keep-alive connections each, every request
	// for the hot file.
	pictor, baseline *getRun
}

// startHotPair writes body, the edge's answer of type contentType to
// target, to file in a directory of the work directory, serves that
// directory with the static server start starts, checks it answers the
// same bytes, and opens the runs of both sides.
func startHotPair(ctx context.Context, env *Env, start startStatic, target, file string, body []byte, contentType string) (*hotPair, error) {
	edgeAddr, err := hostPort(env.Pictor.URL)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(env.WorkDir, "www")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(root, file), body, 0o644); err != nil {
		return nil, err
	}
	static, err := start(ctx, env, root)
	if err != nil {
		return nil, err
	}
	var pictorSet, staticSet fileSet
	pictorSet.contentType, staticSet.contentType = []byte(contentType), []byte(contentType)
	pictorSet.add(target, body)
	staticSet.add("/"+file, body)
	if err := checkAll(static.addr, &staticSet); err != nil {
		return nil, errors.Join(fmt.Errorf("nginx: %w", err), static.stop())
	}
	hot := func(int) int { return 0 }
	return &hotPair{
		static:   static,
		pictor:   newGetRun(edgeAddr, env.Config.EdgeClients, &pictorSet, hot),
		baseline: newGetRun(static.addr, env.Config.EdgeClients, &staticSet, hot),
	}, nil
}

// close closes the runs' connections and stops the static server.
func (h *hotPair) close() error {
	h.pictor.close()
	h.baseline.close()
	return h.static.stop()
}

// baselineNote is the note of the static server's result: its version
// and the connections its run opened.
func (h *hotPair) baselineNote() string {
	return fmt.Sprintf("%s; connections opened %d", h.static.about, h.baseline.dials.Load())
}
