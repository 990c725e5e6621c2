// Package bench holds Pictor's load-benchmark harness: scenarios driven
// against a running service, reported as Markdown tables and latency charts.
package bench
