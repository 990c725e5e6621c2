package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Zipf draws ranks 0 to n-1 with P(k) ∝ 1/(k+1)^s, from a table of the
// cumulative distribution: a draw is one uniform number and a binary
// search. The table is shared; each client draws from its own Rand.
type Zipf struct {
	cdf []float64
}

// NewZipf returns the sampler of n ranks with exponent s > 0.
func NewZipf(n int, s float64) (*Zipf, error) {
	if n < 1 || !(s > 0) {
		return nil, fmt.Errorf("zipf: n %d, s %g: want n ≥ 1 and s > 0", n, s)
	}
	cdf := make([]float64, n)
	sum := 0.0
	for k := range n {
		sum += math.Pow(float64(k+1), -s)
		cdf[k] = sum
	}
	for k := range cdf {
		cdf[k] /= sum
	}
	cdf[n-1] = 1
	return &Zipf{cdf: cdf}, nil
}

// N returns the number of ranks.
func (z *Zipf) N() int { return len(z.cdf) }

// P returns the probability of rank k.
func (z *Zipf) P(k int) float64 {
	if k == 0 {
		return z.cdf[0]
	}
	return z.cdf[k] - z.cdf[k-1]
}

// Rank maps u in [0, 1) to its rank.
func (z *Zipf) Rank(u float64) int {
	k := sort.SearchFloat64s(z.cdf, u)
	// SearchFloat64s finds the first cdf[k] ≥ u; a u equal to cdf[k]
	// belongs to the next rank (ranks own [cdf[k-1], cdf[k])).
	if k < len(z.cdf)-1 && z.cdf[k] == u {
		k++
	}
	return min(k, len(z.cdf)-1)
}

// Draw draws a rank with r.
func (z *Zipf) Draw(r *rand.Rand) int { return z.Rank(r.Float64()) }

// zipfRand returns the random source of client c: fixed seeds, so that
// Pictor and its baseline see the same sequence of ranks.
func zipfRand(c int) *rand.Rand {
	return rand.New(rand.NewPCG(0x5eed, uint64(c)))
}
