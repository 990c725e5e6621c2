// Command pictor-bench runs Pictor's load benchmarks against a built
// pictor binary and writes their report. It only parses flags and wires
// the bench packages; `make bench` runs it.
package main
