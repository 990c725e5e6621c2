package load

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// exactQuantile is the nearest-rank quantile of sorted samples.
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q*float64(len(sorted)) - 1e-9))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func TestHistogramQuantiles(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		samples []time.Duration
		want    map[float64]time.Duration // exact nearest-rank answers
		tol     float64                   // allowed relative error
	}{
		{
			name:    "empty",
			samples: nil,
			want:    map[float64]time.Duration{0.5: 0, 0.99: 0},
		},
		{
			name:    "one sample",
			samples: []time.Duration{42 * ms},
			want:    map[float64]time.Duration{0: 42 * ms, 0.5: 42 * ms, 0.99: 42 * ms, 1: 42 * ms},
		},
		{
			name:    "small values are exact",
			samples: []time.Duration{5, 1, 4, 2, 3, 200, 255},
			want:    map[float64]time.Duration{0: 1, 0.5: 4, 0.8: 200, 1: 255},
		},
		{
			name:    "1 to 100 ms",
			samples: seq(1, 100, ms),
			want:    map[float64]time.Duration{0.5: 50 * ms, 0.95: 95 * ms, 0.99: 99 * ms, 1: 100 * ms},
			tol:     1.0 / 256,
		},
		{
			name:    "two modes",
			samples: append(repeat(90, 20*ms), repeat(10, 2*time.Second)...),
			want:    map[float64]time.Duration{0.5: 20 * ms, 0.9: 20 * ms, 0.91: 2 * time.Second, 0.99: 2 * time.Second},
		},
		{
			name:    "negative counts as zero",
			samples: []time.Duration{-5, 10},
			want:    map[float64]time.Duration{0.5: 0, 1: 10},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Histogram
			for _, s := range tt.samples {
				h.Record(s)
			}
			if h.Count() != len(tt.samples) {
				t.Fatalf("Count = %d, want %d", h.Count(), len(tt.samples))
			}
			for q, want := range tt.want {
				got := h.Quantile(q)
				if d := math.Abs(float64(got - want)); d > tt.tol*float64(want) {
					t.Errorf("Quantile(%v) = %v, want %v (tolerance %.2f%%)", q, got, want, tt.tol*100)
				}
			}
		})
	}
}

func TestHistogramMatchesSortedSlice(t *testing.T) {
	tests := []struct {
		name string
		gen  func(r *rand.Rand) time.Duration
	}{
		{"uniform 1-200 ms", func(r *rand.Rand) time.Duration {
			return time.Millisecond + time.Duration(r.Int64N(int64(199*time.Millisecond)))
		}},
		{"log-normal around 80 ms", func(r *rand.Rand) time.Duration {
			return time.Duration(math.Exp(r.NormFloat64()*0.5) * float64(80*time.Millisecond))
		}},
		{"microseconds", func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(500 * time.Microsecond))) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var h Histogram
			samples := make([]time.Duration, 20000)
			for i := range samples {
				samples[i] = tt.gen(r)
				h.Record(samples[i])
			}
			slices.Sort(samples)
			for _, q := range []float64{0.01, 0.5, 0.9, 0.95, 0.99, 0.999} {
				want := exactQuantile(samples, q)
				got := h.Quantile(q)
				if d := math.Abs(float64(got - want)); d > float64(want)/256+1 {
					t.Errorf("Quantile(%v) = %v, sorted slice says %v", q, got, want)
				}
			}
			if h.Min() != samples[0] || h.Max() != samples[len(samples)-1] {
				t.Errorf("Min, Max = %v, %v; want %v, %v", h.Min(), h.Max(), samples[0], samples[len(samples)-1])
			}
		})
	}
}

func TestHistogramMerge(t *testing.T) {
	tests := []struct {
		name     string
		a, b     []time.Duration
		wantN    int
		wantMin  time.Duration
		wantMax  time.Duration
		wantMean time.Duration
	}{
		{"both empty", nil, nil, 0, 0, 0, 0},
		{"into empty", nil, []time.Duration{10, 30}, 2, 10, 30, 20},
		{"from empty", []time.Duration{10, 30}, nil, 2, 10, 30, 20},
		{"both", []time.Duration{100, 300}, []time.Duration{5, 1000}, 4, 5, 1000, 351},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a, b Histogram
			for _, s := range tt.a {
				a.Record(s)
			}
			for _, s := range tt.b {
				b.Record(s)
			}
			a.Merge(&b)
			if a.Count() != tt.wantN || a.Min() != tt.wantMin || a.Max() != tt.wantMax || a.Mean() != tt.wantMean {
				t.Fatalf("merged: n=%d min=%v max=%v mean=%v; want n=%d min=%v max=%v mean=%v",
					a.Count(), a.Min(), a.Max(), a.Mean(), tt.wantN, tt.wantMin, tt.wantMax, tt.wantMean)
			}
		})
	}
}

func TestBucketsCoverEveryValue(t *testing.T) {
	tests := []struct {
		name string
		v    int64
	}{
		{"zero", 0},
		{"last exact", histExact - 1},
		{"first log bucket", histExact},
		{"1 ms", int64(time.Millisecond)},
		{"1.5 s", int64(1500 * time.Millisecond)},
		{"an hour", int64(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := bucketOf(tt.v)
			lo, hi := bucketRange(i)
			if tt.v < lo || tt.v > hi {
				t.Fatalf("value %d in bucket %d = [%d, %d]", tt.v, i, lo, hi)
			}
			if hi-lo > lo/histSub {
				t.Fatalf("bucket %d = [%d, %d] is wider than 1/%d of its value", i, lo, hi, histSub)
			}
		})
	}
	// Beyond the range, values land in the last bucket instead of panicking.
	if i := bucketOf(math.MaxInt64); i != histBuckets-1 {
		t.Fatalf("bucketOf(MaxInt64) = %d, want %d", i, histBuckets-1)
	}
}

func TestHistogramCDF(t *testing.T) {
	var h Histogram
	if h.CDF() != nil {
		t.Fatal("CDF of an empty histogram is not nil")
	}
	for _, v := range []time.Duration{10, 10, 20, 40} {
		h.Record(v)
	}
	want := []CDFPoint{{10, 0.5}, {20, 0.75}, {40, 1}}
	if got := h.CDF(); !slices.Equal(got, want) {
		t.Fatalf("CDF = %v, want %v", got, want)
	}
}

func seq(from, to int, unit time.Duration) []time.Duration {
	var out []time.Duration
	for i := from; i <= to; i++ {
		out = append(out, time.Duration(i)*unit)
	}
	return out
}

func repeat(n int, d time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}
