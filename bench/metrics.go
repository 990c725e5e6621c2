package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The edge's cache counters (edge/edge.go), read from its /metrics.
const (
	metricHitsL1 = "pictor_edge_hits_l1_total"
	metricHitsL2 = "pictor_edge_hits_l2_total"
	metricMisses = "pictor_edge_misses_total"
	// The time to make transformed renditions, a histogram.
	metricTransformSum   = "pictor_edge_transform_duration_seconds_sum"
	metricTransformCount = "pictor_edge_transform_duration_seconds_count"
)

// edgeCounters are the cache counters of the edge at one moment.
type edgeCounters struct {
	L1, L2, Misses float64
	// Transforms made and the seconds they took.
	Transforms, TransformSeconds float64
}

// sub returns the counts from o to c.
func (c edgeCounters) sub(o edgeCounters) edgeCounters {
	return edgeCounters{c.L1 - o.L1, c.L2 - o.L2, c.Misses - o.Misses, c.Transforms - o.Transforms, c.TransformSeconds - o.TransformSeconds}
}

// String describes the counts as the report's notes do.
func (c edgeCounters) String() string {
	total := c.L1 + c.L2 + c.Misses
	pct := func(v float64) string {
		if total == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f%%", 100*v/total)
	}
	s := fmt.Sprintf("edge cache: L1 hits %.0f (%s), L2 hits %.0f (%s), misses %.0f (%s)",
		c.L1, pct(c.L1), c.L2, pct(c.L2), c.Misses, pct(c.Misses))
	if c.Transforms > 0 {
		s += fmt.Sprintf("; transforms %.0f, %s each on average", c.Transforms,
			formatLatency(time.Duration(c.TransformSeconds/c.Transforms*float64(time.Second))))
	}
	return s
}

// scrapeEdge reads the cache counters from the edge's /metrics.
func scrapeEdge(ctx context.Context, p *Pictor) (edgeCounters, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/metrics", nil)
	if err != nil {
		return edgeCounters{}, err
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return edgeCounters{}, fmt.Errorf("GET /metrics: %w", err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return edgeCounters{}, statusError("GET /metrics", resp)
	}
	vals, err := parseCounters(bufio.NewScanner(resp.Body), metricHitsL1, metricHitsL2, metricMisses, metricTransformSum, metricTransformCount)
	if err != nil {
		return edgeCounters{}, fmt.Errorf("GET /metrics: %w", err)
	}
	return edgeCounters{vals[metricHitsL1], vals[metricHitsL2], vals[metricMisses], vals[metricTransformCount], vals[metricTransformSum]}, nil
}

// parseCounters reads the values of the unlabeled samples named from a
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
		f := strings.Fields(line)
		if len(f) < 2 || !want[f[0]] {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", f[0], err)
		}
		out[f[0]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("metric %s missing", n)
		}
	}
	return out, nil
}
