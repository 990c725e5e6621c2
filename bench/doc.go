// Package bench is Pictor's load-benchmark harness: the scenarios driven
// against a running `pictor serve` and its baselines, the performance
// targets judged from their results, and Run, which runs the scenarios a
// Config selects and returns their report. A Scenario drives load with
// load.Drive, or with interleave, which runs Pictor and a baseline (package
// baseline) in alternating rounds on the same machine, and returns a
// load.Result per run. To add a scenario, write its Run and list it in
// Scenarios.
package bench
