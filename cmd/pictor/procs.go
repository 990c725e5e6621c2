package main

import "runtime"

// edgeProcsPerCPU is how many Go processors a process that runs an edge
// (serve, edge) runs per CPU Go would use by default. The edge's work is
// short (an L1 hit is about 0.4 µs of Go) between system calls, on
// machines it shares with others: when the kernel deschedules the thread
// holding a processor, the goroutines Go readied on that processor wait
// until the thread runs again (a scheduler tick, 4 ms here), unless
// another processor's thread takes them. With twice as many processors
// one usually does (measured in docs/decisions.md, "A fourth pass", and
// docs/performance-history.md).
const edgeProcsPerCPU = 2

// edgeProcs returns the Go processors the command should run with, and
// false when it should leave Go's default: a command without an edge, or
// GOMAXPROCS set in the environment (the operator's word, as Go's).
func edgeProcs(command string, getenv func(string) string) (int, bool) {
	if command != "serve" && command != "edge" || getenv("GOMAXPROCS") != "" {
		return 0, false
	}
	return edgeProcsPerCPU * runtime.GOMAXPROCS(0), true
}
