package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// requestTimeout bounds one request of a scenario, rendering included.
const requestTimeout = 2 * time.Minute

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

func runRenderCard(ctx context.Context, env *Env) ([]*Result, error) {
	cfg := env.Config
	runID := rand.Text()[:8] // cards of two runs must differ too
	var seq atomic.Int64
	cards := func(html func(int, string) string) Op {
		return func(ctx context.Context, _ int) (time.Duration, error) {
			n := int(seq.Add(1))
			return renderCard(ctx, env.Pictor, html(n, fmt.Sprintf("%s-%06d", runID, n)))
		}
	}
	op := cards(CardHTML)
	if cfg.Warmup > 0 {
		load := Load{Clients: min(cfg.PoolSize, cfg.Warmup), Requests: cfg.Warmup}
		w, err := Drive(ctx, "render-card/warm-up", "render", load, env.Progress, op)
		if err != nil {
			return nil, fmt.Errorf("render-card warm-up: %w", err)
		}
		if w.Errors > 0 {
			return nil, fmt.Errorf("render-card warm-up: %d of %d renders failed, first: %s", w.Errors, w.Requests, w.FirstError)
		}
	}
	var results []*Result
	for _, run := range []struct {
		name    string
		clients int
		op      Op
	}{
		{"render-card/sequential", 1, op},
		{"render-card/flat-sequential", 1, cards(FlatCardHTML)},
		{"render-card/pool-full", 2 * cfg.PoolSize, op},
	} {
		cpu := env.Pictor.CPU()
		r, err := Drive(ctx, run.name, "render", Load{Clients: run.clients, Duration: cfg.Duration}, env.Progress, run.op)
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

// renderCard creates an image of html and fetches it at once, as a
// client that needs the image now would. The latency runs from sending
// the POST to the first byte of the PNG; the rest of the PNG is read and
// its header checked before returning.
func renderCard(ctx context.Context, p *Pictor, html string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	body, err := json.Marshal(map[string]any{"html": html, "device_scale": CardScale})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/v1/image", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth(p.APIID, p.APIKey)
	req.Header.Set("Content-Type", "application/json")

	start := time.Now()
	resp, err := p.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST /v1/image: %w", err)
	}
	var created struct {
		URL string `json:"url"`
	}
	if resp.StatusCode != http.StatusOK {
		defer drain(resp)
		return 0, statusError("POST /v1/image", resp)
	}
	err = json.NewDecoder(resp.Body).Decode(&created)
	drain(resp)
	if err != nil || created.URL == "" {
		return 0, fmt.Errorf("POST /v1/image: answer without a url (%v)", err)
	}

	req, err = http.NewRequestWithContext(ctx, http.MethodGet, created.URL, nil)
	if err != nil {
		return 0, fmt.Errorf("GET of the image: %w", err)
	}
	resp, err = p.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return 0, statusError("GET "+req.URL.Path, resp)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "image/png" {
		return 0, fmt.Errorf("GET %s: Content-Type %q, want image/png", req.URL.Path, ct)
	}
	head := make([]byte, 24)
	if _, err := io.ReadFull(resp.Body, head[:1]); err != nil {
		return 0, fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	latency := time.Since(start)
	if _, err := io.ReadFull(resp.Body, head[1:]); err != nil {
		return 0, fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	if err := checkCardPNG(head); err != nil {
		return 0, fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	return latency, nil
}

// statusError describes an unexpected answer, with the start of its body.
func statusError(what string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	return fmt.Errorf("%s: %s: %s", what, resp.Status, strings.TrimSpace(string(b)))
}

// drain reads what is left of a body and closes it, so the connection
// goes back to the pool.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<20))
	resp.Body.Close()
}
