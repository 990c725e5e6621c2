//go:build unix

package edge

import (
	"fmt"
	"syscall"
)

// raiseOpenFileLimit raises the soft limit on open files to the hard one
// (Go does so itself at start since 1.19; this says so in the logs and
// holds whatever started the process to it) and returns both.
func raiseOpenFileLimit() (soft, hard uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, 0, fmt.Errorf("raise the open-file limit to %d: %w", lim.Max, err)
		}
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, 0, fmt.Errorf("read the open-file limit: %w", err)
		}
	}
	return uint64(lim.Cur), uint64(lim.Max), nil
}

// openSpare takes a descriptor to keep in reserve, or returns -1.
func openSpare() (int, error) {
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	return fd, nil
}

func closeSpare(fd int) { syscall.Close(fd) }
