//go:build !unix

package imaging

import "time"

func cpuTime(children bool) (time.Duration, bool) { return 0, false }
