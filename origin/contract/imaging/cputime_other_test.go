//go:build !unix

package transform

import "time"

func cpuTime(children bool) (time.Duration, bool) { return 0, false }
