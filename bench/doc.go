// Package bench holds Pictor's load-benchmark harness: scenarios driven
// against a running service, reported as Markdown tables and latency charts.
//
// A Scenario measures one thing and returns a Result per run; Drive is the
// closed-loop load generator they share, Histogram the percentile
// calculator, and Checks the performance targets judged from the results.
// KeepAlive is the load generator's fast path for the edge scenarios
// (one keep-alive HTTP/1.1 connection per client, answers parsed in
// place); interleave runs Pictor and a baseline (nginx, vipsthumbnail)
// in alternating rounds on the same machine. To add a scenario, write its
// Run with Drive and list it in Scenarios.
package bench
