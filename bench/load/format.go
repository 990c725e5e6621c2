package load

import (
	"fmt"
	"time"
)

// FormatLatency writes a latency in milliseconds with three significant
// digits (at least the units): 0.042 ms, 4.21 ms, 42.1 ms, 421 ms, 1523 ms.
func FormatLatency(d time.Duration) string {
	ms := d.Seconds() * 1000
	if ms < 1 {
		return fmt.Sprintf("%.3f ms", ms)
	}
	return threeDigits(ms) + " ms"
}

// FormatRate writes a rate with three significant digits or its units.
func FormatRate(r float64) string {
	return threeDigits(r)
}

// threeDigits writes v with two decimals below 10, one below 100, none
// from 100 on: three significant digits from 1 on, or v's units.
func threeDigits(v float64) string {
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}
