package load

import (
	"fmt"
	"time"
)

// FormatLatency writes a latency in milliseconds with three significant
// digits (at least the units): 0.042 ms, 4.21 ms, 42.1 ms, 421 ms, 1523 ms.
func FormatLatency(d time.Duration) string {
	ms := d.Seconds() * 1000
	switch {
	case ms < 1:
		return fmt.Sprintf("%.3f ms", ms)
	case ms < 10:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 100:
		return fmt.Sprintf("%.1f ms", ms)
	default:
		return fmt.Sprintf("%.0f ms", ms)
	}
}

// FormatRate writes a rate with three significant digits or its units.
func FormatRate(r float64) string {
	switch {
	case r < 10:
		return fmt.Sprintf("%.2f", r)
	case r < 100:
		return fmt.Sprintf("%.1f", r)
	default:
		return fmt.Sprintf("%.0f", r)
	}
}
