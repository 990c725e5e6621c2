package pictor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/load"
)

// CreateImage creates an image through the API (POST /v1/image with the
// default organization's credentials) and returns its id.
func (p *Server) CreateImage(ctx context.Context, params map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	body, err := json.Marshal(params)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/v1/image", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(p.APIID, p.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("POST /v1/image: %w", err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return "", statusError("POST /v1/image", resp)
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || created.ID == "" {
		return "", fmt.Errorf("POST /v1/image: answer without an id (%v)", err)
	}
	return created.ID, nil
}

// Fetch GETs target (path and query) from the edge and returns the body
// of a 200 and its Content-Type.
func (p *Server) Fetch(ctx context.Context, target string) ([]byte, string, error) {
	return p.FetchAs(ctx, target, "")
}

// FetchAs is Fetch with User-Agent userAgent (a crawler's, where the edge
// answers by platform); "" sends the client's default.
func (p *Server) FetchAs(ctx context.Context, target, userAgent string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+target, nil)
	if err != nil {
		return nil, "", err
	}
	if userAgent != "" {
		req.Header.Set("User-Agent", userAgent)
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", target, err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return nil, "", statusError("GET "+target, resp)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", target, err)
	}
	return b, resp.Header.Get("Content-Type"), nil
}

// FetchTimed is FetchAs that also returns the latency from sending the
// request to the first byte of a 200's body (the whole body is read
// before it returns).
func (p *Server) FetchTimed(ctx context.Context, target, userAgent string) (firstByte time.Duration, body []byte, contentType string, err error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+target, nil)
	if err != nil {
		return 0, nil, "", err
	}
	if userAgent != "" {
		req.Header.Set("User-Agent", userAgent)
	}
	start := time.Now()
	resp, err := p.Client.Do(req)
	if err != nil {
		return 0, nil, "", fmt.Errorf("GET %s: %w", target, err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return 0, nil, "", statusError("GET "+target, resp)
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		return 0, nil, "", fmt.Errorf("GET %s: %w", target, err)
	}
	firstByte = time.Since(start)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, "", fmt.Errorf("GET %s: %w", target, err)
	}
	return firstByte, append(first, rest...), resp.Header.Get("Content-Type"), nil
}

// OGConfig is an OG configuration as the API created it.
type OGConfig struct {
	ID string `json:"id"`
	// DomainID names it in OG image paths: /v1/og/{domain_id}/{path}.
	DomainID string `json:"domain_id"`
}

// CreateOGConfig creates an OG configuration (POST /v1/og-configs with
// the default organization's credentials) of type html_css whose pages
// are those of the site at baseURL.
func (p *Server) CreateOGConfig(ctx context.Context, baseURL string) (OGConfig, error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	body, err := json.Marshal(map[string]any{"config_type": "html_css", "base_url": baseURL})
	if err != nil {
		return OGConfig{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+"/v1/og-configs", bytes.NewReader(body))
	if err != nil {
		return OGConfig{}, err
	}
	req.SetBasicAuth(p.APIID, p.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.Client.Do(req)
	if err != nil {
		return OGConfig{}, fmt.Errorf("POST /v1/og-configs: %w", err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return OGConfig{}, statusError("POST /v1/og-configs", resp)
	}
	var c OGConfig
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || c.DomainID == "" {
		return OGConfig{}, fmt.Errorf("POST /v1/og-configs: answer without a domain_id (%v)", err)
	}
	return c, nil
}

// RenderCard creates an image of html and fetches it at once, as a
// client that needs the image now would. The latency runs from sending
// the POST to the first byte of the PNG; the rest of the PNG is read and
// its header checked to be the card's before returning.
func (p *Server) RenderCard(ctx context.Context, html string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	body, err := json.Marshal(map[string]any{"html": html, "device_scale": card.Scale})
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
	if err := card.CheckPNG(head); err != nil {
		return 0, fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, fmt.Errorf("GET %s: %w", req.URL.Path, err)
	}
	return latency, nil
}

// RenderPage is RenderCard for a page given by URL, captured as a
// 1200×630 viewport at device scale 2: the latency runs from sending the
// POST to the first byte of the PNG.
func (p *Server) RenderPage(ctx context.Context, pageURL string) (time.Duration, error) {
	start := time.Now()
	id, err := p.CreateImage(ctx, map[string]any{
		"url": pageURL, "viewport_width": card.Width, "viewport_height": card.Height, "device_scale": card.Scale,
	})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	target := "/v1/image/" + id
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+target, nil)
	if err != nil {
		return 0, fmt.Errorf("GET of the image: %w", err)
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", target, err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return 0, statusError("GET "+target, resp)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "image/png" {
		return 0, fmt.Errorf("GET %s: Content-Type %q, want image/png", target, ct)
	}
	head := make([]byte, 24)
	if _, err := io.ReadFull(resp.Body, head[:1]); err != nil {
		return 0, fmt.Errorf("GET %s: %w", target, err)
	}
	latency := time.Since(start)
	if _, err := io.ReadFull(resp.Body, head[1:]); err != nil {
		return 0, fmt.Errorf("GET %s: %w", target, err)
	}
	if err := card.CheckPNG(head); err != nil {
		return 0, fmt.Errorf("GET %s: %w", target, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, fmt.Errorf("GET %s: %w", target, err)
	}
	return latency, nil
}

// Metrics reads the values of the samples named (labels included, as the
// exposition writes them) from the edge's /metrics; every name must be
// present.
func (p *Server) Metrics(ctx context.Context, names ...string) (map[string]float64, error) {
	return p.metricsAt(ctx, p.URL, "GET /metrics", names)
}

// OriginMetrics is Metrics from the origin's /metrics (renders, page
// reads), which the edge's do not include.
func (p *Server) OriginMetrics(ctx context.Context, names ...string) (map[string]float64, error) {
	if p.OriginURL == "" {
		return nil, errors.New("serve announced no origin address: its /metrics cannot be read")
	}
	return p.metricsAt(ctx, p.OriginURL, "GET origin /metrics", names)
}

func (p *Server) metricsAt(ctx context.Context, base, what string, names []string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(what, resp)
	}
	vals, err := parseCounters(bufio.NewScanner(resp.Body), names...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return vals, nil
}

// parseCounters reads the values of the samples named (labels included,
// as the exposition writes them, spaces in label values too) from a
// Prometheus text exposition; every name must be present.
func parseCounters(sc *bufio.Scanner, names ...string) (map[string]float64, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		// name{labels} value [timestamp]: a label value may hold spaces,
		// not a '}' after the last one.
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.LastIndexByte(line, '}'); i >= 0 {
			name, rest = line[:i+1], line[i+1:]
		}
		f := strings.Fields(rest)
		if len(f) < 1 || !want[name] {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", name, err)
		}
		out[name] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("metric %s %w", n, ErrMetricMissing)
		}
	}
	return out, nil
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
