package wasm

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU is the CPU time of the calling OS thread (the benchmarks
// lock their goroutine to it; wazero runs the guest on the caller's
// thread). On a busy machine it tells what an evaluation costs, where
// wall time also tells how long it waited for a CPU.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}
