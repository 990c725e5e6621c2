// Package bench holds Pictor's load-benchmark harness: scenarios driven
// against a running service, reported as Markdown tables and latency charts.
//
// A Scenario measures one thing and returns a Result per run; Drive is the
// closed-loop load generator they share, Histogram the percentile
// calculator, and Checks the performance targets judged from the results.
// To add a scenario, write its Run with Drive and list it in Scenarios.
package bench
