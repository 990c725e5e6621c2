package load

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records latencies in log-linear buckets, HDR style: values
// below 256 ns are exact, larger ones fall in one of 128 buckets per power
// of two, so a percentile is off by less than 0.4% of its value. It uses
// a fixed 40 KB whatever the number of samples, so a client records into
// its own histogram without locks and a run merges them at the end.
// The zero value is empty and ready to use; it is not safe for concurrent
// use.
type Histogram struct {
	counts []uint64
	n      uint64
	sum    float64
	min    int64
	max    int64
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // buckets per power of two
	histExact   = 2 * histSub      // values below this have a bucket each
	histMaxExp  = 36               // values up to 2^44 ns (about 4.9 h)
	histBuckets = histExact + histMaxExp*histSub
)

// bucketOf returns the bucket index of v ≥ 0.
func bucketOf(v int64) int {
	if v < histExact {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - (histSubBits + 1) // v>>e is in [128, 256)
	if e > histMaxExp {
		return histBuckets - 1
	}
	m := int(v >> e)
	return histExact + (e-1)*histSub + m - histSub
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi int64) {
	if i < histExact {
		return int64(i), int64(i)
	}
	e := (i-histExact)/histSub + 1
	m := int64((i-histExact)%histSub + histSub)
	return m << e, (m+1)<<e - 1
}

// Record adds one latency; negative ones count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += float64(v)
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, histBuckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of samples.
func (h *Histogram) Count() int { return int(h.n) }

// Min returns the smallest sample, exactly; 0 when empty.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Max returns the largest sample, exactly; 0 when empty.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the mean of the samples; 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(math.Round(h.sum / float64(h.n)))
}

// Quantile returns the latency below or at which a fraction q (0 to 1) of
// the samples fall, by the nearest-rank method: the smallest sample whose
// rank is at least ⌈q·n⌉. It answers the middle of that sample's bucket,
// kept within [Min, Max]; 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(math.Ceil(q*float64(h.n) - 1e-9)) // 0.91·100 is 91.000…01
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return h.representative(i)
		}
	}
	return time.Duration(h.max)
}

// representative is the value reported for bucket i.
func (h *Histogram) representative(i int) time.Duration {
	lo, hi := bucketRange(i)
	v := lo + (hi-lo)/2
	return time.Duration(min(max(v, h.min), h.max))
}

// CDFPoint is one step of a cumulative distribution: Fraction of the
// samples are at most Latency.
type CDFPoint struct {
	Latency  time.Duration
	Fraction float64
}

// CDF returns the cumulative distribution, one point per non-empty
// bucket, in increasing order; the last point has Fraction 1.
func (h *Histogram) CDF() []CDFPoint {
	if h.n == 0 {
		return nil
	}
	var pts []CDFPoint
	var seen uint64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		pts = append(pts, CDFPoint{Latency: h.representative(i), Fraction: float64(seen) / float64(h.n)})
	}
	return pts
}
