package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/pictor"
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
	pct := shareOf(c.L1 + c.L2 + c.Misses)
	s := fmt.Sprintf("edge cache: L1 hits %.0f (%s), L2 hits %.0f (%s), misses %.0f (%s)",
		c.L1, pct(c.L1), c.L2, pct(c.L2), c.Misses, pct(c.Misses))
	if c.Transforms > 0 {
		s += fmt.Sprintf("; transforms %.0f, %s each on average", c.Transforms,
			load.FormatLatency(time.Duration(c.TransformSeconds/c.Transforms*float64(time.Second))))
	}
	return s
}

// shareOf returns a formatter of a count's share of total, a percentage
// with one decimal, or "–" when total is 0.
func shareOf(total float64) func(v float64) string {
	return func(v float64) string {
		if total == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f%%", 100*v/total)
	}
}

// scrapeEdge reads the cache counters from the edge's /metrics.
func scrapeEdge(ctx context.Context, p *pictor.Server) (edgeCounters, error) {
	vals, err := p.Metrics(ctx, metricHitsL1, metricHitsL2, metricMisses, metricTransformSum, metricTransformCount)
	if err != nil {
		return edgeCounters{}, err
	}
	return edgeCounters{vals[metricHitsL1], vals[metricHitsL2], vals[metricMisses], vals[metricTransformCount], vals[metricTransformSum]}, nil
}

// metricL1Bytes is the edge memory cache's contents in bytes.
const metricL1Bytes = `pictor_edge_cache_bytes{level="l1"}`

// scrapeL1Bytes reads metricL1Bytes from the edge's /metrics.
func scrapeL1Bytes(ctx context.Context, p *pictor.Server) (int64, error) {
	vals, err := p.Metrics(ctx, metricL1Bytes)
	if err != nil {
		return 0, err
	}
	return int64(vals[metricL1Bytes]), nil
}
