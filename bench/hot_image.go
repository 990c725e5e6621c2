package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
			"from a file (sendfile, keep-alive, open-file cache, no access log); --edge-clients keep-alive connections, "+
			"interleaved in --rounds rounds", hotWidth, hotHeight),
		NeedsPictor: true,
		Run:         runHotImage,
	}
}

func runHotImage(ctx context.Context, env *Env) (results []*load.Result, err error) {
	cfg := env.Config
	nginxBin, err := baseline.EnsureTool(ctx, env.Progress, "nginx", "nginx-light", "nginx")
	if err != nil {
		return nil, err
	}
	edgeAddr, err := hostPort(env.Pictor.URL)
	if err != nil {
		return nil, err
	}
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
	root := filepath.Join(env.WorkDir, "www")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(root, "hot.jpg"), body, 0o644); err != nil {
		return nil, err
	}
	nginx, err := baseline.StartNginx(ctx, env.Progress, nginxBin, root, env.WorkDir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, nginx.Stop()) }()

	var pictorSet, nginxSet fileSet
	pictorSet.contentType, nginxSet.contentType = []byte(ct), []byte(ct)
	pictorSet.add(target, body)
	nginxSet.add("/hot.jpg", body)
	if err := checkAll(nginx.Addr, &nginxSet); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	hot := func(int) int { return 0 }
	pictorRun := newGetRun(edgeAddr, cfg.EdgeClients, &pictorSet, hot)
	defer pictorRun.close()
	nginxRun := newGetRun(nginx.Addr, cfg.EdgeClients, &nginxSet, hot)
	defer nginxRun.close()
	results, counted, err := versusNginx(ctx, env, "hot-image", hotWarmup, pictorRun, nginxRun, nginx.CPU)
	if err != nil {
		return results, err
	}
	results[0].Note = joinNote(fmt.Sprintf("%d-byte JPEG; %v; connections opened %d", len(body), counted, pictorRun.dials.Load()), results[0].Note)
	results[1].Note = joinNote(fmt.Sprintf("%s; connections opened %d", baseline.Version(ctx, nginxBin, "-v"), nginxRun.dials.Load()), results[1].Note)
	return results, nil
}
