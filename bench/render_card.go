package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/load"
)

func renderCardScenario() Scenario {
	return Scenario{
		Name: "render-card",
		About: "POST /v1/image of a unique 1200×630 card at device_scale 2, then GET of its URL: " +
			"latency from sending the POST to the first byte of the PNG; 1 client, then 2× the pool size; " +
			"flat-sequential: the same card with a solid background and no text shadow, 1 client",
		NeedsPictor: true,
		Run:         runRenderCard,
	}
}

func runRenderCard(ctx context.Context, env *Env) ([]*load.Result, error) {
	cfg := env.Config
	runID := rand.Text()[:8] // cards of two runs must differ too
	var seq atomic.Int64
	cards := func(html func(int, string) string) load.Op {
		return func(ctx context.Context, _ int) (time.Duration, error) {
			n := int(seq.Add(1))
			return env.Pictor.RenderCard(ctx, html(n, fmt.Sprintf("%s-%06d", runID, n)))
		}
	}
	op := cards(card.HTML)
	if cfg.Warmup > 0 {
		warm := load.Load{Clients: min(cfg.PoolSize, cfg.Warmup), Requests: cfg.Warmup}
		w, err := load.Drive(ctx, "render-card/warm-up", "render", warm, env.Progress, op)
		if err != nil {
			return nil, fmt.Errorf("render-card warm-up: %w", err)
		}
		if w.Errors > 0 {
			return nil, fmt.Errorf("render-card warm-up: %d of %d renders failed, first: %s", w.Errors, w.Requests, w.FirstError)
		}
	}
	var results []*load.Result
	for _, run := range []struct {
		name    string
		clients int
		op      load.Op
	}{
		{"render-card/sequential", 1, op},
		{"render-card/flat-sequential", 1, cards(card.FlatHTML)},
		{"render-card/pool-full", 2 * cfg.PoolSize, op},
	} {
		cpu := env.Pictor.CPU()
		r, err := load.Drive(ctx, run.name, "render", load.Load{Clients: run.clients, Duration: cfg.Duration}, env.Progress, run.op)
		if r != nil {
			r.CPU = env.Pictor.CPU() - cpu
			results = append(results, r)
		}
		if err != nil {
			return results, err
		}
	}
	return results, nil
}
