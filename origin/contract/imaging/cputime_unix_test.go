//go:build unix

package imaging

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) used so far by this
// process (children false) or by its waited-for children.
func cpuTime(children bool) (time.Duration, bool) {
	who := syscall.RUSAGE_SELF
	if children {
		who = syscall.RUSAGE_CHILDREN
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
